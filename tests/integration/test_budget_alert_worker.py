"""The budget check through real Celery workers and Redis: two runs of ``billing.check_team_budgets`` at once (a
beat run overlapping a retry) and a third after them send one message to the team's chat, a real HTTPS webhook on
loopback, and record each threshold once."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from billing.costs.tasks import check_team_budgets
from billing.models import BudgetNotice
from tests.billing.chat_webhook import start_chat_webhook_server
from tests.billing.cost_helpers import held_request
from tests.factories import TeamBudgetFactory, build_demo_org
from tests.integration.celery_workers import Workers, workers  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def test_overlapping_runs_on_real_workers_notify_once(workers: Workers, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("CHAT_WEBHOOK_ALLOWED_HOSTS", "127.0.0.1")  # the workers see it: the webhook is on loopback
    org = build_demo_org()
    now = timezone.now()
    start = max(now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(hours=6))
    held_request(team=org.team, start=start - timedelta(minutes=30), end=None, node_pool=org.pool)
    chat, server = start_chat_webhook_server()
    try:
        TeamBudgetFactory(team=org.team, monthly_amount="0.01", chat_webhook_url=chat.workflows_url())
        workers.start(pool_args=("--pool=prefork", "--concurrency=2"))

        results = [check_team_budgets.apply_async(queue=workers.queue) for _ in range(2)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            len(chat.posts) >= 1 and BudgetNotice.objects.filter(chat_sent_at__isnull=False).count() == 3
        ):
            time.sleep(0.2)
        time.sleep(2)  # time for a second, wrong, post to arrive
        check_team_budgets.apply_async(queue=workers.queue)
        time.sleep(3)

        assert sorted(BudgetNotice.objects.values_list("threshold_pct", flat=True)) == [50, 80, 100], workers.logs()
        assert len(chat.posts) == 1, workers.logs()
        assert not BudgetNotice.objects.filter(emailed_at__isnull=True).exists()
        assert all(r.id for r in results)
    finally:
        server.shutdown()
        server.server_close()
