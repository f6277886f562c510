"""Settings for the page-weight benchmark: the test settings with production's static files (WhiteNoise's
compressed manifest storage from a collected STATIC_ROOT, no finders) and DEBUG off."""

from portal.settings.test import *  # noqa: F403
from portal.settings.test import BASE_DIR

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
STATIC_ROOT = BASE_DIR / "var" / "bench_static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = False
WHITENOISE_AUTOREFRESH = False
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
