"""Settings for benchmark servers: the test settings plus a bare Django view to measure against."""

from portal.settings.test import *  # noqa: F403

ROOT_URLCONF = "benchmarks.bench_urls"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DEBUG = False
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
