"""What a user may see of each model the API serves: one registry, applied by the views' base before they run.

Each app registers, for every model its API reads, the selector of the objects a user may see of it
(``register_visibility``, from the app's ``ready()``). ``ScopedViewMixin.initial()`` replaces the view's
``queryset`` by that scope once the caller is authenticated (netbox's ``restrict()`` in ``initial()``), so every read
the view makes through ``get_queryset()``, ``get_object()`` or ``self.queryset`` starts from it. A view over a model
with no registered rule fails with ImproperlyConfigured instead of answering: a new endpoint is scoped by
construction.

An *action* names a second rule for the same model where a purpose sees more (e.g. the teams whose costs Finance
may read); ``"view"`` is the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from rest_framework.request import Request

User = AbstractBaseUser | AnonymousUser
VisibilityRule = Callable[..., QuerySet]

VIEW = "view"

# (model, action) -> the selector of what a user may see; filled by the apps' ready(), read by every scoped view.
_VISIBILITY: dict[tuple[type[Model], str], VisibilityRule] = {}


def register_visibility(model: type[Model], rule: VisibilityRule, *, action: str = VIEW) -> None:
    """Register ``rule(user=...)`` as what a user may see of ``model`` for ``action``; one rule per pair."""
    known = _VISIBILITY.get((model, action))
    if known is not None and known is not rule:
        raise ImproperlyConfigured(f"{model.__name__} already has a {action!r} visibility rule: {known.__qualname__}.")
    _VISIBILITY[(model, action)] = rule


def visibility_rule(model: type[Model] | None, *, action: str = VIEW) -> VisibilityRule:
    """The registered rule of ``model`` for ``action``; ImproperlyConfigured when there is none."""
    if model is None:
        raise ImproperlyConfigured("A scoped view must name its scoped_model.")
    try:
        return _VISIBILITY[(model, action)]
    except KeyError:
        raise ImproperlyConfigured(f"No {action!r} visibility rule is registered for {model.__name__}.") from None


def visible_to(user: User, model: type[Model] | None, *, action: str = VIEW) -> QuerySet:
    """The objects of ``model`` that ``user`` may see for ``action``."""
    return visibility_rule(model, action=action)(user=user)


class ScopedViewMixin:
    """Base of every API view that reads per-team objects: ``queryset`` is what the caller may see of
    ``scoped_model``; ``visible(model)`` scopes any other model the view reads through the same registry."""

    scoped_model: type[Model] | None = None
    scope_action: str = VIEW
    queryset: QuerySet | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Authentication, permissions and throttles first: the scope depends on who the caller is.
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        self.queryset = visible_to(request.user, self.scoped_model, action=self.scope_action)

    def get_queryset(self) -> QuerySet:
        if self.queryset is None:  # not through initial() (the schema generator): nothing is visible
            visibility_rule(self.scoped_model, action=self.scope_action)
            return self.scoped_model._default_manager.none()  # type: ignore[union-attr]
        return self.queryset.all()

    def visible(self, model: type[Model], *, action: str = VIEW) -> QuerySet:
        """What the caller may see of another model the view reads (a parent in its URL, a related list)."""
        return visible_to(self.request.user, model, action=action)  # type: ignore[attr-defined]
