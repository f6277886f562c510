"""Settings shared by every environment, read from the environment with dev-safe defaults.

``production.py`` requires the secrets and turns the secure flags on; ``test.py`` overrides only what tests need.
Every variable is listed in docs/operating.md, "Configuration".
"""

from __future__ import annotations

import json
import shlex
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_labels, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", True)
# Django's technical 404 and 500 pages under DEBUG, for a developer; the demo shows the portal's own.
PORTAL_DEBUG_ERROR_PAGES = env_bool("PORTAL_DEBUG_ERROR_PAGES", False)

_DEV_SECRET_KEY = "django-insecure-dev-only-key-never-used-with-debug-off-3f9c1b7e2a"  # noqa: S105
SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "social_django",
    "portal",
    "portal.tokens",
    "audit",
    "allocations",
    "billing",
    "infra",
]

MIDDLEWARE = [
    # First: probes reach a pod by IP over plain HTTP, before host validation and the HTTPS redirect.
    "portal.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Pages are 200-300 KB of HTML; compressed for clients that accept gzip (Django adds random bytes to each
    # compressed body against BREACH-style length attacks). Before the middleware that write the response body.
    "django.middleware.gzip.GZipMiddleware",
    # django-csp's, with the settings' policy built once per process (portal/middleware.py).
    "portal.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A view that cannot reach the database answers 503 with Retry-After (JSON under /api/), not a 500.
    "portal.database_unavailable.DatabaseUnavailableMiddleware",
    # Under DEBUG (make run), the portal's own 404 and 500 pages rather than Django's technical ones.
    "portal.error_pages.BrandedErrorPagesMiddleware",
    # Before anything reads the input: a NUL (which PostgreSQL text refuses) is a 400 naming the field, once.
    "portal.middleware.RejectNulCharactersMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Audited writes say where they came from (browser, API, admin) and the client's address.
    "portal.audit_middleware.AuditContextMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A failed single sign-on (denied at the provider, a bad token) returns to the login page with a message.
    "portal.sso.middleware.SsoErrorMiddleware",
    # Last, as django-axes requires: it turns a lockout raised during authentication into the locked-out page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.portal",
            ],
            # One voice: the money and gpu_hours filters in every template (portal/templatetags/portal_format.py).
            "builtins": ["portal.templatetags.portal_format"],
        },
    },
    # The hot tables only (a list's rows), where the Django template language was most of a page's time: jinja2/.
    {
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "portal.jinja2.environment", "autoescape": True},
    },
]

# SQLite under var/ by default, so the portal runs with nothing installed.
DATABASE_URL = env_str("DATABASE_URL") or ""
if not DATABASE_URL:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASE_URL = f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"
# While the database cannot be reached, pages and the API answer 503 with this Retry-After
# (portal/database_unavailable.py).
DATABASE_RETRY_AFTER_SECONDS = env_int("DATABASE_RETRY_AFTER_SECONDS", 5)
# The longest a submitted request may run: its duration_hours and its expiry from now (extensions add to it later).
MAX_REQUEST_HOURS = env_int("MAX_REQUEST_HOURS", 2160)
# How long an Idempotency-Key on POST /api/v1/requests/ replays its first answer
# (allocations/requests/idempotency.py).
IDEMPOTENCY_KEY_TTL_HOURS = env_int("IDEMPOTENCY_KEY_TTL_HOURS", 24)
# Connections are kept across requests for DB_CONN_MAX_AGE seconds (0: one per request). Django's connection pool
# (OPTIONS "pool") is not used: each gunicorn thread and each Celery prefork child has its own connection and runs one
# request or task at a time, so a pool would hold the same busy connections persistent ones do, and it cannot be
# combined with CONN_MAX_AGE.
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    # An unreachable database fails a request (and the readiness probe) in seconds instead of hanging a worker.
    _options.setdefault("connect_timeout", env_int("DB_CONNECT_TIMEOUT", 5))
    # PostgreSQL binds the parameters (server_side_binding), so psycopg prepares a statement once a connection has
    # run it DB_PREPARE_THRESHOLD times and PostgreSQL plans it once per connection instead of on every run: every
    # request repeats the same reads (the signed-in user, a token, a page's rows), and planning their joins is much
    # of what they cost. It pays on connections kept across requests (DB_CONN_MAX_AGE). "off" for a pooler
    # that cannot keep prepared statements (PgBouncer in transaction mode before 1.21); binding then stays Django's
    # default, client-side, unless DB_SERVER_SIDE_BINDING says otherwise.
    _prepare_off = (env_str("DB_PREPARE_THRESHOLD") or "").strip().lower() == "off"
    _options.setdefault("prepare_threshold", None if _prepare_off else env_int("DB_PREPARE_THRESHOLD", 5))
    _options.setdefault("server_side_binding", env_bool("DB_SERVER_SIDE_BINDING", not _prepare_off))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# SQLite cannot enforce NULLS NOT DISTINCT on Quota; model validation does, and PostgreSQL does in the database.
SILENCED_SYSTEM_CHECKS = ["models.W047"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# django-axes first: it refuses a locked-out (username, IP) pair before any password is checked. Then single
# sign-on, and local passwords under the PASSWORD_LOGIN policy (portal/sso/backends.py; below).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "portal.sso.backends.PortalOpenIdConnect",
    "portal.sso.backends.PasswordBackend",
]

LOGIN_URL = "login"
# Sessions end after SESSION_COOKIE_AGE (8 hours by default) and are never readable from JavaScript; signing in
# always issues a new session key and CSRF token (Django's login() rotates both).
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
# Sessions are kept in the database and read through the cache (the shared Redis in production): a signed-in request
# reads its session without a query, and a session outlives a cache restart or eviction. Django's cached_db store,
# answering from the database alone while the cache is away.
SESSION_ENGINE = "infra.sessions"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"


# Content-Security-Policy (django-csp), in every environment so development and the browser tests see what
# production enforces: scripts only from our own static files (no inline script, no eval, no CDN); styles from
# ours plus inline style attributes (plotly.js and the quota bars set element styles); no plugins, no framing.
def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on with OpenID Connect (social-auth-app-django's generic OIDC backend, as NetBox uses it). On when an
# issuer and a client id are set; the client secret is a reference (env:VARIABLE or file:/path), never the value.
OIDC_ISSUER = (env_str("OIDC_ISSUER") or "").rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID") or ""
OIDC_CLIENT_SECRET_REF = env_str("OIDC_CLIENT_SECRET_REF") or ""
OIDC_SCOPES = env_list("OIDC_SCOPES", ["openid", "profile", "email"])
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM") or "groups"
# Forms post only to the portal; the single sign-on form's POST redirects to the provider, which Chromium checks
# against form-action too, so the issuer's origin is allowed (its authorization endpoint is on that origin).
CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"] = ["'self'", *([_origin(OIDC_ISSUER)] if OIDC_ISSUER else [])]
OIDC_USERNAME_CLAIM = env_str("OIDC_USERNAME_CLAIM") or "preferred_username"
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME") or "single sign-on"
if OIDC_ISSUER and not OIDC_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_ISSUER is set but OIDC_CLIENT_ID is not: single sign-on needs both.")
# Who may still sign in with a local password: on (anyone), admins (staff accounts only: break-glass while the
# identity provider is down), off. Unset: admins when single sign-on is configured, on otherwise.
PASSWORD_LOGIN = (env_str("PASSWORD_LOGIN") or "").strip().lower()
if PASSWORD_LOGIN not in ("", "on", "admins", "off"):
    raise ImproperlyConfigured(f"PASSWORD_LOGIN={PASSWORD_LOGIN!r}: use on, admins or off.")
SOCIAL_AUTH_OIDC_USERNAME_KEY = OIDC_USERNAME_CLAIM
SOCIAL_AUTH_OIDC_USE_PKCE = True
SOCIAL_AUTH_URL_NAMESPACE = "social"
SOCIAL_AUTH_LOGIN_REDIRECT_URL = "/"
SOCIAL_AUTH_LOGIN_ERROR_URL = "/accounts/login/"
SOCIAL_AUTH_RAISE_EXCEPTIONS = False
SOCIAL_AUTH_PIPELINE = (
    "social_core.pipeline.social_auth.social_details",
    "social_core.pipeline.social_auth.social_names",
    "social_core.pipeline.social_auth.social_uid",
    "social_core.pipeline.social_auth.auth_allowed",
    "social_core.pipeline.social_auth.social_user",
    "social_core.pipeline.user.get_username",
    "social_core.pipeline.user.create_user",
    "social_core.pipeline.social_auth.associate_user",
    "social_core.pipeline.social_auth.load_extra_data",
    "social_core.pipeline.user.user_details",
    # Team memberships and platform groups from the groups claim, on every login (portal/sso/).
    "portal.sso.pipeline.apply_group_mappings",
)

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE") or "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve from the finders when no collectstatic ran (dev, tests); production serves the manifest build.
WHITENOISE_USE_FINDERS = DEBUG

# Email: console by default, SMTP when EMAIL_HOST is set.
EMAIL_HOST = env_str("EMAIL_HOST") or ""
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env_int("EMAIL_PORT", 587)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER") or ""
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD") or ""
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
else:
    EMAIL_BACKEND = env_str("EMAIL_BACKEND") or "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or "GPU Portal <gpu-portal@localhost>"
SERVER_EMAIL = DEFAULT_FROM_EMAIL
PORTAL_FINANCE_EMAILS = env_list("PORTAL_FINANCE_EMAILS", [])
# Hosts a budget's chat URL may name even when they resolve to a private address (an internal relay); none by default.
CHAT_WEBHOOK_ALLOWED_HOSTS = env_list("CHAT_WEBHOOK_ALLOWED_HOSTS", [])

# Celery: with no broker configured, tasks run in-process (eagerly) and the UI says so in a banner.
_BROKER_FROM_ENV = env_str("CELERY_BROKER_URL") or ""
CELERY_TASK_ALWAYS_EAGER = not _BROKER_FROM_ENV
# With no broker, tasks run eagerly; the in-memory transport keeps Celery from dialling localhost.
CELERY_BROKER_URL = _BROKER_FROM_ENV or "memory://localhost/"
# Without a broker a task's error is kept on its row by the failure hook; it must not turn a committed approval
# into a 500. Tests turn propagation on to see errors.
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540)
CELERY_TIMEZONE = "UTC"
# Redis re-delivers an unacknowledged message (a worker died mid-task) once it is older than this, at the next sweep:
# when a worker starts, then about every 100 s. It must exceed the longest task.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.tokens.authentication.NamedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's JSON, byte for byte, encoded by orjson (infra/renderers.py); the browsable API in development.
    "DEFAULT_RENDERER_CLASSES": [
        "infra.renderers.FastJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # ``?format=`` with nothing after it is an unknown format (404), as the schema's enum says.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "infra.negotiation.StrictFormatNegotiation",
    "DEFAULT_PAGINATION_CLASS": "infra.api_pagination.BoundedPageNumberPagination",
    "PAGE_SIZE": 25,
    "DEFAULT_FILTER_BACKENDS": [
        "infra.filtering.FilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "portal.api_schema.PortalAutoSchema",
    # Services' errors (ValidationError, PermissionDenied, DoesNotExist, InvalidTransition) in DRF's shape, once.
    "EXCEPTION_HANDLER": "portal.api_errors.api_exception_handler",
    # Fixed-window counters in the shared cache (CACHES below): the limits hold across gunicorn workers.
    "DEFAULT_THROTTLE_CLASSES": [
        "infra.throttling.SharedAnonRateThrottle",
        "infra.throttling.SharedUserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_THROTTLE_ANON") or "30/minute",
        "user": env_str("API_THROTTLE_USER") or "600/minute",
    },
    # Proxies in front of the app that append to X-Forwarded-For (0: the client is REMOTE_ADDR).
    "NUM_PROXIES": env_int("TRUSTED_PROXY_COUNT", 0),
}
# Days the audit trail keeps an event; the daily audit.prune_events task deletes older ones (0: keep everything).
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 400)
# Months of hourly rollups and GPU health hours kept, the current month included (0: keep everything). Older months
# are dropped whole (a partition each on PostgreSQL) by the daily billing.maintain_hourly_partitions task; the daily
# and monthly totals are kept forever.
HOURLY_RETENTION_MONTHS = env_int("HOURLY_RETENTION_MONTHS", 13)

# Failed token authentications allowed per client IP before the API answers 429 for the rest of the window.
API_TOKEN_FAILURE_RATE = env_str("API_TOKEN_FAILURE_RATE") or "10/minute"

# The cache holds the API's rate-limit counters, so it must be shared by every worker: Redis when CACHE_URL is set
# (production requires it); one process's memory otherwise (development, unit tests).
CACHE_URL = env_str("CACHE_URL") or ""
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX") or "",
            # Short socket timeouts: when Redis is away, pages are served from the database (infra.reference_cache)
            # and should not wait on the cache first.
            "OPTIONS": {
                "socket_connect_timeout": env_int("CACHE_CONNECT_TIMEOUT", 1),
                "socket_timeout": env_int("CACHE_SOCKET_TIMEOUT", 1),
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Password guessing (django-axes): after AXES_FAILURE_LIMIT failures one (username, client IP) pair is locked for
# AXES_COOLOFF_MINUTES. Pairing the two means a guesser locks only themselves out, never the real user elsewhere.
# Attempts and lockouts are in the admin (Axes), where an admin can also lift one.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# The client's address: REMOTE_ADDR, or the TRUSTED_PROXY_COUNT-th address from the right of X-Forwarded-For.
AXES_CLIENT_IP_CALLABLE = "infra.throttling.client_ip"

# A font with CJK glyphs for the monthly PDF (names beyond Latin-1). Empty: the Noto Sans CJK that a pinned package
# ships (billing/costs/report_pdf.py, docs/operating.md).
PDF_UNICODE_FONT = env_str("PDF_UNICODE_FONT")

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Portal API",
    "DESCRIPTION": (
        "Self-service GPUs on Kubernetes: recommendations, requests, approvals, manifests, usage and reports. "
        "Authenticate with `Authorization: Token <key>` (create a token on the API tokens page)."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Swagger UI from our own static files (drf-spectacular-sidecar), not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation documents the 400 that NUL characters get (portal.middleware), besides its own answers.
    # One name for the request status enum, so the events' hand-written $ref (allocations.api.serializers) resolves:
    # spectacular otherwise names it from the colliding "status" fields (GpuStatusEnum), and the ref dangled.
    "ENUM_NAME_OVERRIDES": {"RequestStatusEnum": "allocations.choices.RequestStatus"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api_schema.document_bad_input",
        "portal.api_schema.document_field_selection",
        "portal.api_schema.document_missing_page",
        "portal.api_schema.document_form_bodies",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Money is Decimal and shown in this currency.
PORTAL_CURRENCY = env_str("PORTAL_CURRENCY") or "USD"
# Where recommendations get GPU prices: a dotted path to a callable returning {model name: hourly Decimal}. The
# allocations app reads it through import_string (the pluggable-backend idiom) so it never imports billing;
# empty means the catalog's reference prices.
GPU_PRICE_PROVIDER = env_str("GPU_PRICE_PROVIDER", "billing.costs.selectors.current_gpu_rates")
# The image a workload gets when its request names none, per workload type.
PORTAL_DEFAULT_IMAGES = {
    "training": env_str("PORTAL_IMAGE_TRAINING") or "nvcr.io/nvidia/pytorch:24.05-py3",
    "batch_inference": env_str("PORTAL_IMAGE_BATCH_INFERENCE") or "nvcr.io/nvidia/tritonserver:24.05-py3",
    "realtime_inference": env_str("PORTAL_IMAGE_REALTIME_INFERENCE") or "nvcr.io/nvidia/tritonserver:24.05-py3",
    "development": env_str("PORTAL_IMAGE_DEVELOPMENT") or "nvcr.io/nvidia/pytorch:24.05-py3",
    "hpc_simulation": env_str("PORTAL_IMAGE_HPC_SIMULATION") or "nvcr.io/nvidia/hpc-benchmarks:24.03",
}
# The command a workload runs when its request names none and uses the default image, per workload type: only where
# that image has a useful one. Development starts JupyterLab (in the NGC PyTorch image) on the port the request
# page's port-forward uses; its token is in the pod's log. A training script or Triton's model repository cannot be
# guessed, so those requests must give a command (or an image of their own whose entrypoint runs the work).
PORTAL_DEFAULT_COMMANDS = {
    workload_type: shlex.split(value)
    for workload_type, value in {
        "training": env_str("PORTAL_COMMAND_TRAINING") or "",
        "batch_inference": env_str("PORTAL_COMMAND_BATCH_INFERENCE") or "",
        "realtime_inference": env_str("PORTAL_COMMAND_REALTIME_INFERENCE") or "",
        "development": env_str("PORTAL_COMMAND_DEVELOPMENT")
        or "jupyter lab --ip=0.0.0.0 --port=8888 --no-browser --ServerApp.root_dir=/home/portal",
        "hpc_simulation": env_str("PORTAL_COMMAND_HPC_SIMULATION") or "",
    }.items()
    if value
}
# Real-time inference: HTTP probe paths of the default image (Triton's; empty: probe the port over TCP), and the
# label of namespaces whose pods may call inference Services (the ingress controller, callers), "key=value".
PORTAL_INFERENCE_LIVENESS_PATH = env_str("PORTAL_INFERENCE_LIVENESS_PATH", "/v2/health/live")
PORTAL_INFERENCE_READINESS_PATH = env_str("PORTAL_INFERENCE_READINESS_PATH", "/v2/health/ready")
PORTAL_INFERENCE_CALLER_NAMESPACE_LABELS = env_labels(
    "PORTAL_INFERENCE_CALLER_NAMESPACE_LABEL", "gpu-portal/inference-caller=true"
)
# Utilization pulls from Prometheus (DCGM exporter series).
BILLING_PROMETHEUS_TIMEOUT_SECONDS = env_int("BILLING_PROMETHEUS_TIMEOUT_SECONDS", 60)
BILLING_PROMETHEUS_RETRIES = env_int("BILLING_PROMETHEUS_RETRIES", 3)
BILLING_PROMETHEUS_BACKOFF_SECONDS = float(env_str("BILLING_PROMETHEUS_BACKOFF_SECONDS") or 0.5)
BILLING_UTILIZATION_BACKFILL_HOURS = env_int("BILLING_UTILIZATION_BACKFILL_HOURS", 24)
BILLING_UTILIZATION_MAX_HOURS_PER_PULL = env_int("BILLING_UTILIZATION_MAX_HOURS_PER_PULL", 168)
# Samples one Prometheus query of the pull may touch (GPUs x 60 x hours): a pull reads as many hours at a time as fit,
# one to 24 (billing.metering.pull_chunks). Prometheus refuses a query over its --query.max-samples (50 million).
BILLING_PULL_MAX_SAMPLES_PER_QUERY = env_int("BILLING_PULL_MAX_SAMPLES_PER_QUERY", 2_000_000)
# Queries of one pull read sent to Prometheus at once (it evaluates each on a core of its own).
BILLING_PULL_QUERY_CONCURRENCY = env_int("BILLING_PULL_QUERY_CONCURRENCY", 4)
# A minute counts as measured when a device's newest real sample is younger than this (raise it above 60 only for
# scrape intervals longer than a minute); carried-over samples never count.
BILLING_SCRAPE_MAX_AGE_SECONDS = env_int("BILLING_SCRAPE_MAX_AGE_SECONDS", 60)
# Share the cost of idle pool capacity among teams in proportion to their allocations (OpenCost's weighted sharing).
BILLING_SHARE_IDLE_COST = env_bool("BILLING_SHARE_IDLE_COST", False)
# Idle reclaim (docs/idle-reclaim.md): development workloads idle for a tier's window are warned, then scaled to zero.
# IDLE_RECLAIM_ENABLED=false turns the whole policy off; IDLE_RECLAIM_THRESHOLDS (JSON) overrides the per-tier defaults,
# e.g. {"tier3_development": {"window_hours": 12, "warn_hours": 3, "utilization_pct": 5, "memory_mib": 2048}}.
IDLE_RECLAIM_ENABLED = env_bool("IDLE_RECLAIM_ENABLED", True)
IDLE_RECLAIM_THRESHOLDS: dict[str, dict[str, object]] = json.loads(env_str("IDLE_RECLAIM_THRESHOLDS") or "{}")
if not isinstance(IDLE_RECLAIM_THRESHOLDS, dict):
    raise ImproperlyConfigured("IDLE_RECLAIM_THRESHOLDS must be a JSON object of tier slug -> thresholds.")
# Reservations (docs/reservations.md): the longest window, and how far ahead one may start.
RESERVATION_MAX_DAYS = env_int("RESERVATION_MAX_DAYS", 31)
RESERVATION_HORIZON_DAYS = env_int("RESERVATION_HORIZON_DAYS", 180)
# MIG plan rollouts: seconds between passes over a plan's nodes, and how long one task drives a rollout before it
# hands over to a fresh one (nodes reboot for minutes).
MIG_PLAN_POLL_SECONDS = float(env_str("MIG_PLAN_POLL_SECONDS") or 10)
MIG_PLAN_TASK_SECONDS = float(env_str("MIG_PLAN_TASK_SECONDS") or 240)
# Seconds between applying the mig-parted ConfigMap and labelling a node with a config it holds: the kubelet refreshes
# a mounted ConfigMap on its sync period plus its cache TTL (a minute each by default), and the MIG manager refuses a
# config name its copy does not hold yet.
MIG_CONFIGMAP_PROPAGATION_SECONDS = float(env_str("MIG_CONFIGMAP_PROPAGATION_SECONDS") or 120)
# Seconds a node may stay with the MIG manager (state pending or rebooting) before its rollout fails and the node is
# uncordoned.
MIG_CONFIGURE_TIMEOUT_SECONDS = float(env_str("MIG_CONFIGURE_TIMEOUT_SECONDS") or 1800)
# A request page reads its pods and events from the cluster while it renders: it waits at most this long per call.
PORTAL_CLUSTER_READ_TIMEOUT_SECONDS = float(env_str("PORTAL_CLUSTER_READ_TIMEOUT_SECONDS") or 3)
# Where the gitops gateway writes manifests for clusters that use it.
PORTAL_GITOPS_ROOT = Path(env_str("PORTAL_GITOPS_ROOT") or VAR_DIR / "gitops")
