"""Test settings: only what tests need differs from base.

``DATABASE_URL`` picks the database (SQLite by default, PostgreSQL in CI). Celery runs eagerly; integration tests
that need a real worker start one against ``CELERY_BROKER_URL`` themselves.
"""

import os

from .base import *  # noqa: F403
from .base import REST_FRAMEWORK, VAR_DIR

# The broker the integration tests' real worker uses; unit tests never reach it.
INTEGRATION_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_BROKER_URL = INTEGRATION_BROKER_URL or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
PORTAL_GITOPS_ROOT = VAR_DIR / "test-gitops"

REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    # High unless a test (the gunicorn rate-limit test) sets the variables for the server it starts.
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON") or "10000/minute",
        "user": os.environ.get("API_THROTTLE_USER") or "100000/minute",
    },
}
