"""A second process reads the month's curves another built, through the shared Redis cache, instead of building them.

Each gunicorn worker and Celery process used to build the organisation's curves itself after every change (costly at
50,000 requests held in a month). Here this process builds them, and a fresh Python process with the same
database and Redis answers the same figures without reading one request row; after a change it builds its own (the
curves in the cache were built under the replaced token).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from billing.costs.month_spend import team_month_to_date
from tests.billing.cost_helpers import load_book
from tests.billing.test_team_month_to_date import active_since
from tests.factories import build_demo_org

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]

# In the other process: the team's month so far, and how many statements read the requests table.
OTHER_PROCESS = """
import json, sys
from datetime import datetime
import django
django.setup()
from django.db import connection
from django.test.utils import CaptureQueriesContext
from allocations.models import Team
from billing.costs.month_spend import team_month_to_date
team = Team.objects.get(slug=sys.argv[1])
with CaptureQueriesContext(connection) as queries:
    month = team_month_to_date(team=team, now=datetime.fromisoformat(sys.argv[2]))
reads = sum('"allocations_gpurequest"' in query["sql"] for query in queries.captured_queries)
print(json.dumps({"gpu_hours": str(month["gpu_hours"]), "amount": str(month["amount"]), "request_reads": reads}))
"""


def _database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _other_process(team_slug: str, redis_url: str) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "DATABASE_URL": _database_url(),
        "CACHE_URL": redis_url,
        "CACHE_KEY_PREFIX": "",
        "CELERY_BROKER_URL": "",
    }
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, team_slug, NOW.isoformat()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def shared_cache(settings):
    """Production's shared cache (Redis) in this process; the other process is given the same."""
    redis_url = django_settings.INTEGRATION_BROKER_URL
    assert redis_url.startswith("redis://"), "CELERY_BROKER_URL must name the Redis the integration tests use"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    from django.core.cache import cache

    cache.clear()
    yield redis_url
    cache.clear()


def test_a_second_process_reads_the_curves_the_first_built_and_builds_after_a_change(shared_cache) -> None:
    org = build_demo_org()
    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    active_since(org, NOW - timedelta(days=5), units=2)
    here = team_month_to_date(team=org.team, now=NOW)

    other = _other_process(org.team.slug, shared_cache)

    assert here["gpu_hours"] == 240
    assert other == {"gpu_hours": str(here["gpu_hours"]), "amount": str(here["amount"]), "request_reads": 0}

    # A request activated since: the token is replaced, so the other process builds, and counts it.
    active_since(org, NOW - timedelta(days=1), units=1)
    rebuilt = _other_process(org.team.slug, shared_cache)
    assert rebuilt["request_reads"] >= 1
    assert Decimal(rebuilt["gpu_hours"]) == 264
    assert team_month_to_date(team=org.team, now=NOW)["gpu_hours"] == 264
