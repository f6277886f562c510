"""The API tokens page: create named tokens (the key shown once, with a copy button), see when each was last used,
revoke one; and a notebook snippet for the user's own team."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from allocations.selectors import teams_of
from portal.tokens.forms import ApiTokenCreateForm
from portal.tokens.models import ApiToken
from portal.tokens.services import api_token_create, api_token_revoke, api_tokens_of

NEW_KEY_SESSION_KEY = "tokens:new_key"


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    """The user's tokens, the create form and, right after a create, the new key once."""
    form = ApiTokenCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            new = api_token_create(acting_user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            # Through the session and a redirect, so a reload never re-posts and the key is gone after one view.
            request.session[NEW_KEY_SESSION_KEY] = {"id": new.token.pk, "key": new.key}
            return redirect("tokens:list")
    new_key = request.session.pop(NEW_KEY_SESSION_KEY, None)
    team = teams_of(request.user).order_by("slug").first()
    api_root = request.build_absolute_uri(reverse("api-docs")).removesuffix("docs/") + "v1/"
    context = {
        "form": form,
        "tokens": list(api_tokens_of(user=request.user)),
        "new_key": new_key,
        "team": team,
        "api_root": api_root,
    }
    return render(request, "tokens/tokens.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of the user's tokens; another user's token is a 404."""
    try:
        token = api_token_revoke(acting_user=request.user, token_id=pk)
    except ApiToken.DoesNotExist as exc:
        raise Http404("No such token among yours.") from exc
    messages.success(request, f"Token {token.name!r} was revoked; calls with it now get 401.")
    return redirect("tokens:list")
