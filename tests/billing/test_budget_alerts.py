"""Budget alerts: a threshold crossed notifies the leads by email and the team's chat once a month, through apprise
to a real HTTPS webhook on loopback; re-runs send nothing twice and a failed chat post is finished by the next run."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from allocations.models import GpuRequest, RequestStatus
from billing.costs.budget_alerts import team_budgets_check
from billing.costs.month_spend import team_month_to_date
from billing.costs.tasks import check_team_budgets
from billing.models import BudgetNotice, TeamBudget
from gpucore.formatting import format_money
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.billing.test_team_month_to_date import active_since
from tests.factories import TeamBudgetFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)


@pytest.fixture
def chat(settings) -> Iterator[ChatWebhookServer]:
    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]  # the webhook is on loopback, which the portal refuses
    state, server = start_chat_webhook_server()
    yield state
    server.shutdown()
    server.server_close()


def spend_of(org) -> Decimal:
    return team_month_to_date(team=org.team, now=NOW)["amount"]


def spend_at(org, now: datetime) -> Decimal:
    return team_month_to_date(team=org.team, now=now)["amount"]


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


# The last evening of November: an alert that fails now can only be delivered once the month is closed.
LAST_EVENING = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)


def _budget_crossing_80_percent_on_the_last_evening(org, chat) -> None:
    """A budget the month's spend has used 85 % of at ``LAST_EVENING``; the request is released as November ends,
    so December crosses nothing and its late alert is the only message."""
    request = active_since(org, LAST_EVENING - timedelta(days=5), units=2)
    GpuRequest.objects.filter(pk=request.pk).update(
        status=RequestStatus.RELEASED, ended_at=datetime(2026, 12, 1, tzinfo=UTC)
    )
    spent = team_month_to_date(team=org.team, now=LAST_EVENING)["amount"]
    budget = (spent / Decimal("0.85")).quantize(Decimal("0.01"))
    TeamBudgetFactory(team=org.team, monthly_amount=budget, chat_webhook_url=chat.workflows_url())


def test_a_chat_post_that_failed_on_the_months_last_evening_is_delivered_late_once(demo_org, chat) -> None:
    _budget_crossing_80_percent_on_the_last_evening(demo_org, chat)
    chat.fail_next = 1
    first = team_budgets_check(now=LAST_EVENING)
    assert (first.emailed, first.chatted, first.failed) == (1, 0, 1)

    late = team_budgets_check(now=LAST_EVENING + timedelta(hours=2))  # December now: November is closed

    assert (late.month, late.created, late.emailed, late.chatted, late.failed, late.expired) == (
        "2026-12",
        0,
        0,
        1,
        0,
        0,
    )
    assert len(mail.outbox) == 1  # the email had gone out in November: not sent twice
    body = str(chat.posts[0]["body"])
    assert "late alert, month closed" in body and "November 2026" in body and "final" in body
    assert "crossing the 80 % threshold" in body and "by the month's end" not in body  # no projection now
    for notice in BudgetNotice.objects.all():
        assert notice.chat_sent_at is not None and notice.last_error == "" and notice.expired_at is None

    again = team_budgets_check(now=LAST_EVENING + timedelta(hours=3))
    assert (again.emailed, again.chatted, again.failed) == (0, 0, 0) and len(chat.posts) == 1


def test_an_email_that_failed_on_the_months_last_evening_is_sent_late_with_the_final_spend(
    demo_org, chat, settings
) -> None:
    _budget_crossing_80_percent_on_the_last_evening(demo_org, chat)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    with socket.socket() as probe:  # a mail server that is down: connection refused at once
        probe.bind(("127.0.0.1", 0))
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", probe.getsockname()[1]
    settings.EMAIL_USE_TLS = False
    first = team_budgets_check(now=LAST_EVENING)
    assert (first.emailed, first.chatted, first.failed) == (0, 1, 1)
    assert BudgetNotice.objects.filter(emailed_at__isnull=True, last_error__startswith="email:").count() == 2

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # the mail server is back
    final = team_month_to_date(team=demo_org.team, now=datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC))["amount"]
    late = team_budgets_check(now=datetime(2026, 12, 3, 9, 0, tzinfo=UTC))

    assert (late.emailed, late.chatted, late.failed, late.expired) == (1, 0, 0, 0)
    assert len(chat.posts) == 1  # the chat had it in November
    message = mail.outbox[0]
    assert "November 2026 GPU budget (late alert, month closed)" in message.subject
    assert f"spent {format_money(final, 'USD')}" in message.body and final > spend_at(demo_org, LAST_EVENING)
    assert not BudgetNotice.objects.filter(emailed_at__isnull=True).exists()


def test_an_alert_still_undelivered_a_week_after_its_month_closed_expires_with_the_reason(demo_org, chat) -> None:
    _budget_crossing_80_percent_on_the_last_evening(demo_org, chat)
    chat.fail_next = 1
    team_budgets_check(now=LAST_EVENING)

    result = team_budgets_check(now=datetime(2026, 12, 8, 0, 0, tzinfo=UTC))  # 7 days after the close

    assert (result.chatted, result.failed, result.expired) == (0, 0, 2)
    assert chat.posts == []
    for notice in BudgetNotice.objects.all():
        assert notice.expired_at is not None and notice.chat_sent_at is None
        assert notice.last_error.startswith("Expired undelivered: not delivered within 7 days of the month's close")
        assert "Last error: chat:" in notice.last_error  # what went wrong stays on record
    assert team_budgets_check(now=datetime(2026, 12, 8, 1, 0, tzinfo=UTC)).expired == 0  # expired once


def test_an_undelivered_alert_of_a_team_whose_budget_was_removed_expires(demo_org, chat) -> None:
    _budget_crossing_80_percent_on_the_last_evening(demo_org, chat)
    chat.fail_next = 1
    team_budgets_check(now=LAST_EVENING)
    TeamBudget.objects.filter(team=demo_org.team).delete()
    TeamBudgetFactory(team=demo_org.other_team, monthly_amount=Decimal("100000000"))  # someone still has a budget

    result = team_budgets_check(now=LAST_EVENING + timedelta(hours=2))

    assert result.expired == 2 and chat.posts == []
    assert {n.last_error.split(".")[0] for n in BudgetNotice.objects.all()} == {
        "Expired undelivered: the team's budget was removed"
    }
