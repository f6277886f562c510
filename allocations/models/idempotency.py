"""Idempotency keys: the first answer to a submission sent with an ``Idempotency-Key`` header, kept for replays."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    """One user's key on one endpoint, the digest of the body first sent with it, and the answer that body got.

    Written in the transaction that creates the object, so a key exists exactly when its object does.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    endpoint = models.CharField(max_length=100)
    key = models.CharField(max_length=255)
    body_digest = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    # The JSON text as first sent (not a JSONField: PostgreSQL's jsonb would reorder the keys of a replay).
    response_body = models.TextField()
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "endpoint", "key"], name="idempotency_key_once_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key}"
