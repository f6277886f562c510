"""One submission per form page: a form's one-time token, claimed in the shared cache so a double post submits once."""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

logger = logging.getLogger(__name__)
_SUBMISSION_TTL = 24 * 3600


def _submission_key(acting_user: AbstractBaseUser, token: str) -> str:
    return f"form-submission:{acting_user.pk}:{token}"


def form_submission_claim(*, acting_user: AbstractBaseUser, token: str) -> int | None:
    """Claim a form page's one-time token: None on its first use, else the id of the request it made (0 while that
    first submission is still running). ``cache.add`` is atomic in the shared cache (Redis), so two gunicorn
    workers given the same post cannot both claim it."""
    key = _submission_key(acting_user, token)
    try:
        if cache.add(key, 0, timeout=_SUBMISSION_TTL):
            return None
        return int(cache.get(key) or 0)
    except Exception:
        # The cache is away: the form still submits (a double click may then submit twice) rather than fail.
        logger.warning("Form token not claimed: the cache did not answer.", exc_info=True)
        return None


def form_submission_done(*, acting_user: AbstractBaseUser, token: str, request_id: int | None) -> None:
    """Record the request a claimed token made, or (None: the submission was refused) free it for a corrected post."""
    key = _submission_key(acting_user, token)
    try:
        if request_id is None:
            cache.delete(key)
        else:
            cache.set(key, request_id, timeout=_SUBMISSION_TTL)
    except Exception:
        logger.warning("Form token not recorded: the cache did not answer.", exc_info=True)
