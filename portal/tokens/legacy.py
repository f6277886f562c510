"""DRF's plain-text per-user keys (40 hex characters), migrated to named, hashed, expiring tokens.

The data migration ``tokens.0002`` turned every key of DRF's ``authtoken_token`` table into an ``ApiToken`` named
"Legacy key (migrated <date>)" that keeps only the key's SHA-256 and expires ``LEGACY_KEY_DAYS`` after the migration,
then emptied the table: a notebook holding its old key keeps working until then, and its owner sees it, with its
expiry, on the tokens page. Such a key has no public part, so its token's ``public_id`` is derived from the digest.
"""

from __future__ import annotations

import hashlib

LEGACY_KEY_DAYS = 90
LEGACY_PUBLIC_ID_PREFIX = "legacy"


def legacy_public_id(key: str) -> str:
    """The ``public_id`` of a migrated legacy key: derived from its digest, so the key itself is never stored."""
    return LEGACY_PUBLIC_ID_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:10]
