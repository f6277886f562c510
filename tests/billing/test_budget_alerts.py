"""Budget alerts: a threshold crossed notifies the leads by email and the team's chat once a month, through apprise
to a real HTTPS webhook on loopback; re-runs send nothing twice and a failed chat post is finished by the next run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from billing.costs.budget_alerts import team_budgets_check
from billing.costs.selectors import team_month_to_date
from billing.costs.tasks import check_team_budgets
from billing.models import BudgetNotice
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.billing.test_team_month_to_date import active_since
from tests.factories import TeamBudgetFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)


@pytest.fixture
def chat() -> Iterator[ChatWebhookServer]:
    state, server = start_chat_webhook_server()
    yield state
    server.shutdown()
    server.server_close()


def spend_of(org) -> Decimal:
    return team_month_to_date(team=org.team, now=NOW)["amount"]


def test_crossing_80_percent_notifies_leads_and_the_teams_chat_once(demo_org, chat) -> None:
    active_since(demo_org, NOW - timedelta(days=5), units=2)
    spent = spend_of(demo_org)
    # A budget the month's spend has used 85 % of: the 50 and 80 % thresholds are crossed, 100 % is not.
    budget = (spent / Decimal("0.85")).quantize(Decimal("0.01"))
    TeamBudgetFactory(team=demo_org.team, monthly_amount=budget, chat_webhook_url=chat.workflows_url())

    result = team_budgets_check(now=NOW)

    assert (result.created, result.emailed, result.chatted, result.failed) == (2, 1, 1, 0)
    assert sorted(BudgetNotice.objects.values_list("threshold_pct", flat=True)) == [50, 80]
    # One message naming the highest threshold, not one per threshold.
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [demo_org.team_lead.email]
    assert "crossing the 80 % threshold" in mail.outbox[0].body
    assert len(chat.posts) == 1
    post = chat.posts[0]
    assert post["path"] == "/workflows/budgetflow/triggers/manual/paths/invoke"
    assert "sig=SIGNATURE123" in post["query"]
    assert "crossing the 80 % threshold" in str(post["body"])
    assert demo_org.team.name in str(post["body"])

    again = team_budgets_check(now=NOW + timedelta(hours=1))  # the next hourly run: nothing new, nothing resent
    assert (again.created, again.emailed, again.chatted) == (0, 0, 0)
    assert len(mail.outbox) == 1 and len(chat.posts) == 1


def test_a_failed_chat_post_is_finished_by_the_next_run_without_a_second_email(demo_org, chat) -> None:
    active_since(demo_org, NOW - timedelta(days=5), units=1)
    TeamBudgetFactory(
        team=demo_org.team,
        monthly_amount=Decimal("0.01"),
        thresholds_pct=[100],
        chat_webhook_url=chat.workflows_url(),
    )
    chat.fail_next = 1

    first = team_budgets_check(now=NOW)

    assert (first.created, first.emailed, first.chatted, first.failed) == (1, 1, 0, 1)
    notice = BudgetNotice.objects.get()
    assert notice.emailed_at is not None and notice.chat_sent_at is None
    assert notice.last_error.startswith("chat:")

    second = team_budgets_check(now=NOW + timedelta(hours=1))

    assert (second.created, second.emailed, second.chatted, second.failed) == (0, 0, 1, 0)
    assert len(mail.outbox) == 1
    assert len(chat.posts) == 1
    notice.refresh_from_db()
    assert notice.chat_sent_at is not None and notice.last_error == ""


def test_a_team_under_its_thresholds_or_without_a_budget_hears_nothing(demo_org, chat) -> None:
    active_since(demo_org, NOW - timedelta(days=5), units=1)
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("100000000"), chat_webhook_url=chat.workflows_url())

    result = check_team_budgets()  # the Celery task as beat runs it (now)

    assert result["created"] == 0 and result["failed"] == 0
    assert mail.outbox == [] and chat.posts == []
    assert not BudgetNotice.objects.exists()
