"""Production settings: every secret is required, the secure flags are on, and nothing falls back to a default.

A missing variable stops the process at start-up with the variable's name (see docs/operating.md, "Configuration").
"""

import os

os.environ.setdefault("DEBUG", "0")

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import DATABASE_URL, OIDC_CLIENT_SECRET_REF, OIDC_ISSUER, REST_FRAMEWORK
from .env import env_bool, env_int, env_list, env_required, secret_from_ref

# Every variable production cannot start without; the deployment tests check that docker-compose.yml and both
# Kubernetes overlays set each of them.
REQUIRED_ENV = ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")

DEBUG = False
if env_bool("DEBUG", False):
    raise ImproperlyConfigured("DEBUG must be off under production settings.")

for _name in REQUIRED_ENV:
    env_required(_name)
SECRET_KEY = env_required("SECRET_KEY")
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
    raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters with 5 or more unique characters.")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set in production (comma-separated host names).")
if DATABASE_URL.startswith("sqlite"):
    raise ImproperlyConfigured("Production needs a PostgreSQL DATABASE_URL, not SQLite.")
# Rate limits must be shared by every gunicorn worker: one process's memory would multiply them by the workers.
if not env_required("CACHE_URL").startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured("CACHE_URL must be a redis:// URL in production (the API's rate limits live there).")
# Without a broker, provisioning would run inside web requests.
if env_required("CELERY_BROKER_URL").startswith("memory:"):
    raise ImproperlyConfigured("Production needs a real CELERY_BROKER_URL (redis://...), not the in-memory one.")

# Single sign-on, when configured, talks to its provider over TLS and must find its client secret at start-up.
if OIDC_ISSUER:
    if not OIDC_ISSUER.startswith("https://"):
        raise ImproperlyConfigured("OIDC_ISSUER must be an https:// URL in production.")
    if not OIDC_CLIENT_SECRET_REF:
        raise ImproperlyConfigured("OIDC_CLIENT_SECRET_REF must be set with OIDC_ISSUER (env:VARIABLE or file:/path).")
    secret_from_ref(OIDC_CLIENT_SECRET_REF, what="OIDC_CLIENT_SECRET_REF")

SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
# Secure cookies need HTTPS; only a local plain-HTTP stack (docker compose on localhost) turns these off.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = False

# The browsable API is a development aid; production answers JSON only.
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_RENDERER_CLASSES": ["infra.renderers.FastJSONRenderer"]}
