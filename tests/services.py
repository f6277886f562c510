"""Which external services the integration tests can reach, and what to do when one is missing.

On a laptop a missing service skips its tests (and the run ends with the list and the command that brings the
services up); with REQUIRE_SERVICES=1, as in CI, a missing service fails the test instead.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from urllib.parse import urlparse

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
SKIP_PREFIX = "needs a service:"
BRING_UP_COMMAND = "docker compose up -d postgres redis"


def _tcp_reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def postgres_problem() -> str | None:
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        return "PostgreSQL (DATABASE_URL is not a postgres:// URL)"
    return None


def redis_problem() -> str | None:
    from django.conf import settings

    url = getattr(settings, "INTEGRATION_BROKER_URL", "")
    if not url.startswith("redis://"):
        return "Redis (CELERY_BROKER_URL is not a redis:// URL)"
    parsed = urlparse(url)
    if not _tcp_reachable(parsed.hostname or "127.0.0.1", parsed.port or 6379):
        return f"Redis (nothing answers at {parsed.hostname}:{parsed.port or 6379})"
    return None


def redis_server_problem() -> str | None:
    if not shutil.which("redis-server"):
        return "the redis-server binary (Debian package 'redis-server'), for a broker the test restarts"
    return None


def prometheus_problem() -> str | None:
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        return "Prometheus (Debian package 'prometheus': prometheus and promtool binaries)"
    return None


def chromium_problem() -> str | None:
    if not shutil.which("chromium"):
        return "Chromium (Debian package 'chromium')"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Chromium (the 'playwright' Python package)"
    return None


def font_problem() -> str | None:
    from billing.costs.report_pdf import emoji_font_path, unicode_font_path

    if unicode_font_path() is None or emoji_font_path() is None:
        return "the PDF's fonts (packages 'cvttf-NotoSansCJK-Regular' and 'manimgx-fonts' of requirements.txt)"
    return None


# The reference data the catalog and configs were built from: shared/ beside the repository root, as in CI.
REFERENCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "reference"


def reference_problem() -> str | None:
    if not REFERENCE_DIR.is_dir():
        return f"the shared reference data ({REFERENCE_DIR}; CI clones shared/ beside the repository)"
    return None


SERVICE_CHECKS = {
    "postgres": postgres_problem,
    "redis": redis_problem,
    "redis_server": redis_server_problem,
    "prometheus": prometheus_problem,
    "e2e": chromium_problem,
    "font": font_problem,
    "reference": reference_problem,
}
