"""Budget alerts: each threshold of a team's money budget, once crossed, notifies its leads by email and its chat.

``team_budgets_check`` records a ``BudgetNotice`` per (team, month, threshold) the spend has reached (the unique key
makes it idempotent), then delivers what is not delivered yet: one message per team naming the highest threshold
reached, by email to the team's leads and, when the budget has a chat URL, to Slack or Teams through apprise. Each
channel is marked on the notices when it succeeds, so a retry (or the next hourly run) finishes a failed channel and
never repeats one that worked. Run by the Celery task ``billing.check_team_budgets`` (beat: hourly).

A notice still undelivered when its month closes (a mail server or chat down on the last evening) is not dropped: the
next runs deliver it late, once per channel, worded for the closed month with its final spend, for
``LATE_DELIVERY_DAYS`` after the close. Past that (the month's reports have long said the same) or when the team's
budget was removed, it expires: ``expired_at`` set and ``last_error`` saying why, visible in the admin.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import apprise
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from allocations.models import Membership, Role, Team
from billing.costs.chargeback import month_bounds
from billing.costs.chat_urls import ChatUrlRefused, check_chat_url_before_send
from billing.costs.month_spend import team_budget_states
from billing.models import BudgetNotice, TeamBudget
from gpucore.budget import MoneyBudgetState
from gpucore.formatting import format_money
from gpucore.pricing import to_cents

logger = logging.getLogger(__name__)

# How long after its month closed an undelivered alert is still delivered (late); then it expires with the reason.
LATE_DELIVERY_DAYS = 7


# A notice with a channel still owed.
UNDELIVERED = Q(emailed_at__isnull=True) | Q(chat_sent_at__isnull=True)


class ChatDeliveryError(Exception):
    """The chat service refused the message or could not be reached (apprise logs the details)."""


@dataclass(frozen=True, slots=True)
class BudgetCheckResult:
    """What one check did: notices made (thresholds newly crossed), and messages delivered per channel."""

    month: str
    created: int
    emailed: int
    chatted: int
    failed: int
    expired: int = 0


def _money(amount: Decimal) -> str:
    return format_money(amount, settings.PORTAL_CURRENCY)  # the portal's one money format: 5,022.40 USD


def budget_message(
    *, team: Team, state: MoneyBudgetState, threshold_pct: int, month: datetime, closed: bool = False
) -> tuple[str, str]:
    """The subject and body of the alert for ``threshold_pct`` (the highest threshold reached) of a team's budget;
    ``closed``: the month is over and this alert comes late, with the month's final spend and no projection."""
    used = f"{state.used_pct:.0f} %" if state.used_pct is not None else "all"
    if closed:
        subject = f"[GPU Portal] {team.name} used {used} of its {month:%B %Y} GPU budget (late alert, month closed)"
        body = (
            f"{team.name} spent {_money(state.spent)} of its {_money(state.budget or Decimal(0))} GPU budget for "
            f"{month:%B %Y} ({used}), crossing the {threshold_pct} % threshold.\n"
            f"This alert could not be delivered before the month closed; the spend above is the month's final one.\n"
            f"Thresholds that notify: {', '.join(f'{pct} %' for pct in state.thresholds_pct)}, each once a month."
        )
        return subject, body
    subject = f"[GPU Portal] {team.name} has used {used} of its {month:%B %Y} GPU budget"
    body = (
        f"{team.name} has spent {_money(state.spent)} of its {_money(state.budget or Decimal(0))} GPU budget for "
        f"{month:%B %Y} "
        f"({used}), crossing the {threshold_pct} % threshold.\n"
        f"At the last day's pace it will have spent {_money(state.projected)} by the month's end.\n"
        f"Thresholds that notify: {', '.join(f'{pct} %' for pct in state.thresholds_pct)}, each once a month."
    )
    return subject, body


def lead_emails(team: Team) -> list[str]:
    """Addresses of the team's leads (those who answer for its spend)."""
    leads = Membership.objects.filter(team=team, role=Role.LEAD, user__is_active=True).exclude(user__email="")
    return sorted(set(leads.values_list("user__email", flat=True)))


def chat_send(*, url: str, title: str, body: str) -> None:
    """Post one message to the chat named by an apprise URL (``slack://``, ``workflows://``...), never to a private
    address: the host is resolved again here, since DNS may have changed since the URL was set."""
    try:
        check_chat_url_before_send(url)
    except ChatUrlRefused as exc:
        raise ChatDeliveryError(str(exc)) from exc
    notifier = apprise.Apprise()
    if not notifier.add(url):
        raise ChatDeliveryError("The chat URL is not one apprise understands.")
    if not notifier.notify(title=title, body=body):
        raise ChatDeliveryError("The chat service did not accept the message.")


def _deliver(
    *, budget: TeamBudget, state: MoneyBudgetState, month: datetime, closed: bool = False
) -> tuple[bool, bool, bool]:
    """Deliver the team's undelivered notices of ``month`` under a row lock; (emailed, chatted, failed)."""
    emailed = chatted = failed = False
    with transaction.atomic():
        # skip_locked: a concurrent run (a retry overlapping a beat run) leaves these rows to the one holding them.
        pending = list(
            BudgetNotice.objects.select_for_update(skip_locked=True)
            .filter(team=budget.team, month=month.date(), expired_at__isnull=True)
            .filter(UNDELIVERED)
            .order_by("threshold_pct")
        )
        if not pending:
            return emailed, chatted, failed
        subject, body = budget_message(
            team=budget.team, state=state, threshold_pct=pending[-1].threshold_pct, month=month, closed=closed
        )
        errors: list[str] = []
        now = timezone.now()
        unmailed = [notice.pk for notice in pending if notice.emailed_at is None]
        if unmailed:
            try:
                recipients = lead_emails(budget.team)
                if recipients:
                    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
                    emailed = True
                else:
                    errors.append("email: the team has no lead with an email address")
                BudgetNotice.objects.filter(pk__in=unmailed).update(emailed_at=now)
            except OSError as exc:
                logger.exception("Budget email of team %s failed", budget.team.slug)
                errors.append(f"email: {exc}")
                failed = True
        unchatted = [notice.pk for notice in pending if notice.chat_sent_at is None]
        if unchatted and budget.chat_webhook_url:
            try:
                chat_send(url=budget.chat_webhook_url, title=subject.removeprefix("[GPU Portal] "), body=body)
                BudgetNotice.objects.filter(pk__in=unchatted).update(chat_sent_at=now)
                chatted = True
            except ChatDeliveryError as exc:
                logger.warning("Budget chat message of team %s failed: %s", budget.team.slug, exc)
                errors.append(f"chat: {exc}")
                failed = True
        elif unchatted:
            BudgetNotice.objects.filter(pk__in=unchatted).update(chat_sent_at=now)  # no chat configured: nothing owed
        BudgetNotice.objects.filter(pk__in=[notice.pk for notice in pending]).update(last_error="; ".join(errors))
    return emailed, chatted, failed


def team_budgets_check(*, now: datetime | None = None) -> BudgetCheckResult:
    """Record every budget threshold crossed this month and deliver what is not delivered; idempotent."""
    now = now or timezone.now()
    month = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    budgets = list(TeamBudget.objects.select_related("team").order_by("team__slug"))
    if not budgets:  # nothing to check: spare the month's chargeback
        return BudgetCheckResult(month=f"{month:%Y-%m}", created=0, emailed=0, chatted=0, failed=0)
    states = team_budget_states(teams=[budget.team for budget in budgets], now=now)
    created = emailed = chatted = failed = 0
    for budget in budgets:
        state = states[budget.team.pk]
        for pct in state.crossed_pct:
            _, made = BudgetNotice.objects.get_or_create(
                team=budget.team,
                month=month.date(),
                threshold_pct=pct,
                defaults={
                    "spent": to_cents(state.spent),
                    "budget": to_cents(state.budget or Decimal(0)),
                    "projected": to_cents(state.projected),
                    "currency": settings.PORTAL_CURRENCY,
                    "crossed_at": now,
                },
            )
            created += made
        try:
            did_email, did_chat, did_fail = _deliver(budget=budget, state=state, month=month)
        except Exception:  # one team's failure never holds back the others
            logger.exception("Budget alerts of team %s failed", budget.team.slug)
            did_email, did_chat, did_fail = False, False, True
        emailed += did_email
        chatted += did_chat
        failed += did_fail
    late = _closed_months_catch_up(month=month, now=now, budgets={budget.team_id: budget for budget in budgets})
    return BudgetCheckResult(
        month=f"{month:%Y-%m}",
        created=created,
        emailed=emailed + late.emailed,
        chatted=chatted + late.chatted,
        failed=failed + late.failed,
        expired=late.expired,
    )


def _closed_months_catch_up(*, month: datetime, now: datetime, budgets: dict[int, TeamBudget]) -> BudgetCheckResult:
    """Deliver late, or expire, the undelivered notices of months before ``month`` (see the module's docstring)."""
    owed = (
        BudgetNotice.objects.filter(month__lt=month.date(), expired_at__isnull=True)
        .filter(UNDELIVERED)
        .order_by("month", "team_id")
        .values_list("team_id", "month")
        .distinct()
    )
    emailed = chatted = failed = expired = 0
    for team_id, notice_month in owed:
        start, closed_at = month_bounds(notice_month)
        budget = budgets.get(team_id)
        deadline = closed_at + timedelta(days=LATE_DELIVERY_DAYS)
        if budget is None or now >= deadline:
            why = (
                "the team's budget was removed"
                if budget is None
                else f"not delivered within {LATE_DELIVERY_DAYS} days of the month's close (by {deadline:%Y-%m-%d} UTC)"
            )
            expired += _expire(team_id=team_id, month=notice_month, why=why, now=now)
            continue
        try:
            # The month's final spend: its chargeback up to the last instant of the month.
            state = team_budget_states(teams=[budget.team], now=closed_at - timedelta(microseconds=1))[team_id]
            did_email, did_chat, did_fail = _deliver(budget=budget, state=state, month=start, closed=True)
        except Exception:  # one team's failure never holds back the others
            logger.exception("Late budget alerts of team %s for %s failed", budget.team.slug, f"{start:%Y-%m}")
            did_email, did_chat, did_fail = False, False, True
        emailed += did_email
        chatted += did_chat
        failed += did_fail
    return BudgetCheckResult(
        month=f"{month:%Y-%m}", created=0, emailed=emailed, chatted=chatted, failed=failed, expired=expired
    )


def _expire(*, team_id: int, month: date, why: str, now: datetime) -> int:
    """Give up the team's undelivered notices of a closed month, recording why beside the delivery's last error."""
    expired = 0
    with transaction.atomic():
        for notice in BudgetNotice.objects.select_for_update(skip_locked=True).filter(
            UNDELIVERED, team_id=team_id, month=month, expired_at__isnull=True
        ):
            notice.last_error = f"Expired undelivered: {why}." + (
                f" Last error: {notice.last_error}" if notice.last_error else ""
            )
            notice.expired_at = now
            notice.save(update_fields=["last_error", "expired_at"])
            expired += 1
    return expired
