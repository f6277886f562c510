"""A named API token: only its SHA-256 digest is stored; the key is shown once, when it is created."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from portal.tokens.legacy import LEGACY_PUBLIC_ID_PREFIX

KEY_PREFIX = "gpp_"  # marks the portal's named tokens apart from DRF's legacy 40-hex keys


def key_digest(key: str) -> str:
    """The stored form of a key: SHA-256 hex (the key is 256 random bits, so a fast hash is enough)."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """One of a user's named API tokens, with an expiry, the last time it was used, and a revocation time."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What it is for, e.g. 'training notebook'.")
    public_id = models.CharField(max_length=16, unique=True, help_text="The key's public part, shown in lists.")
    digest = models.CharField(max_length=64, help_text="SHA-256 of the whole key; the key itself is never stored.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"], condition=Q(revoked_at__isnull=True), name="unique_live_token_name_per_user"
            )
        ]

    def __str__(self) -> str:
        return self.name if self.is_legacy else f"{self.name} ({KEY_PREFIX}{self.public_id}_…)"

    @property
    def is_legacy(self) -> bool:
        """A plain DRF key migrated here (portal.tokens.legacy): it has no ``gpp_`` public part."""
        return self.public_id.startswith(LEGACY_PUBLIC_ID_PREFIX)

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired else "active"
