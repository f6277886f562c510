"""The form that creates a named token: a name and how long it lives."""

from __future__ import annotations

from django import forms

from portal.tokens.services import EXPIRY_DAYS


class ApiTokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where it is used, e.g. 'training notebook'.")
    expires_in_days = forms.TypedChoiceField(
        label="Expires in",
        coerce=int,
        choices=[(days, f"{days} days") for days in EXPIRY_DAYS],
        initial=90,
    )
