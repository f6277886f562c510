"""What a user chose to see of a list (its columns), kept across sessions and devices."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SavedListColumns(models.Model):
    """The columns one user shows on one list, in the list's own order (``allocations.requests.list_columns``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    list_name = models.CharField(max_length=40)
    columns = models.JSONField(default=list, help_text="The keys of the columns shown.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "list_name"], name="unique_saved_list_columns")]
        verbose_name_plural = "saved list columns"

    def __str__(self) -> str:
        return f"{self.user_id} {self.list_name}"
