"""The team page's forms: a lead adds a member or changes one member's role."""

from __future__ import annotations

from django import forms

from allocations.models import Role


class TeamMemberAddForm(forms.Form):
    """A lead adds a portal user to the team: who (username) and with which role."""

    username = forms.CharField(max_length=150, label="Username")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class TeamMemberRoleForm(forms.Form):
    """A lead changes one member's role."""

    role = forms.ChoiceField(choices=Role.choices)
