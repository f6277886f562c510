"""Settings for benchmark servers: the test settings plus a bare Django view to measure against."""

from portal.settings.test import *  # noqa: F403

ROOT_URLCONF = "benchmarks.bench_urls"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DEBUG = False
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
# Persistent database connections, as production runs (deploy/kubernetes/base/config.yaml: DB_CONN_MAX_AGE=60):
# without them every API call opened a PostgreSQL connection, which the bare view never pays.
DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
