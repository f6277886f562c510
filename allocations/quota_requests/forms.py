"""Browser forms of the quota page: ask for more, decide an ask, edit a quota (the services decide what is allowed)."""

from __future__ import annotations

from django import forms


class QuotaIncreaseForm(forms.Form):
    requested_limit = forms.IntegerField(
        min_value=1, max_value=100000, label="New nominal quota (units)", help_text="The total the team should hold."
    )
    reason = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 3}), label="What it is for")


class QuotaDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("grant", "Grant"), ("decline", "Decline")])
    comment = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class QuotaEditForm(forms.Form):
    limit = forms.IntegerField(min_value=0, max_value=100000, label="Nominal")
    borrowing_limit = forms.IntegerField(min_value=0, max_value=100000, required=False, label="Borrowing limit")
    lending_limit = forms.IntegerField(min_value=0, max_value=100000, required=False, label="Lending limit")
    comment = forms.CharField(required=False, max_length=500, label="Why (kept in the audit trail)")
