"""Test settings: only what tests need differs from base.

``DATABASE_URL`` picks the database (SQLite by default, PostgreSQL in CI). Celery runs eagerly; integration tests
that need a real worker start one against ``CELERY_BROKER_URL`` themselves.
"""

import os

from .base import *  # noqa: F403
from .base import REST_FRAMEWORK, VAR_DIR

# pytest-xdist runs the suite in several processes (gw0, gw1, ...); each gets its own Redis database and GitOps tree,
# because the worker tests flush their broker database and the GitOps tests rewrite their tree.
XDIST_WORKER_INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)


def _redis_database_for_this_worker(url: str) -> str:
    """``redis://host:port/15`` for the first worker, ``/14`` for the second...: one database per test process."""
    if not url.startswith("redis://") or XDIST_WORKER_INDEX == 0:
        return url
    base, _, database = url.rpartition("/")
    if not database.isdigit():
        return url
    return f"{base}/{(int(database) - XDIST_WORKER_INDEX) % 16}"


# The broker the integration tests' real worker uses; unit tests never reach it.
INTEGRATION_BROKER_URL = _redis_database_for_this_worker(os.environ.get("CELERY_BROKER_URL", ""))
if INTEGRATION_BROKER_URL:
    # Celery prefers the CELERY_BROKER_URL environment variable to its configuration, and subprocesses inherit it.
    os.environ["CELERY_BROKER_URL"] = INTEGRATION_BROKER_URL
CELERY_BROKER_URL = INTEGRATION_BROKER_URL or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
PORTAL_GITOPS_ROOT = VAR_DIR / f"test-gitops-{XDIST_WORKER_INDEX}"

REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    # High unless a test (the gunicorn rate-limit test) sets the variables for the server it starts.
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON") or "10000/minute",
        "user": os.environ.get("API_THROTTLE_USER") or "100000/minute",
    },
}
