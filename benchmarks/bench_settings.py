"""Settings for benchmark servers: the test settings with DEBUG off, and the benchmarks' URLconf (the portal's URLs
plus the no-op views measured against, benchmarks/bench_urls.py)."""

from portal.settings.test import *  # noqa: F403

ROOT_URLCONF = "benchmarks.bench_urls"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DEBUG = False
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
# Connections kept between requests, as production keeps them (its DB_CONN_MAX_AGE), unless the settings use
# Django's connection pool, which keeps them itself and refuses CONN_MAX_AGE.
if not DATABASES["default"].get("OPTIONS", {}).get("pool"):  # noqa: F405
    DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
