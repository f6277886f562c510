"""Email notifications of the request lifecycle, sent after the transaction that caused them commits."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.dispatch import Signal
from django.template.loader import render_to_string

from allocations.models import GpuRequest, QuotaIncreaseRequest
from allocations.selectors import APPROVE_PERMISSION

logger = logging.getLogger(__name__)

# Sent once a quota decision has committed, with ``increase_id`` and the ``subject`` and ``body`` mailed; billing
# posts it to the team's chat (the budget's chat URL, as budget alerts go).
quota_increase_decided = Signal()


def approver_emails() -> list[str]:
    """Addresses of active platform approvers: staff users and holders of the approve permission."""
    app_label, codename = APPROVE_PERMISSION.split(".")
    perm = Q(user_permissions__codename=codename, user_permissions__content_type__app_label=app_label)
    group_perm = Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label=app_label)
    users = get_user_model().objects.filter(Q(is_staff=True) | perm | group_perm, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)))


def send_email(subject: str, template: str, request: GpuRequest, recipients: list[str], **extra: object) -> None:
    """Send the rendered template to the recipients; a mail outage is logged, never raised (the change stands)."""
    if not recipients:
        return
    body = render_to_string(template, {"request": request, **extra})
    # One line: a newline in a subject is a header injection, which Django refuses (BadHeaderError), and the mail was
    # then lost in the on-commit hook. Names with newlines are refused now, but older ones may hold them.
    subject = " ".join(subject.split())
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
    except OSError:
        # A mail outage must not undo a committed approval; the event log still has the change.
        logger.exception("Could not send '%s' to %s", subject, recipients)


def notify_on_commit(kind: str, request: GpuRequest, comment: str = "") -> None:
    """Queue the email for ``kind`` (submitted, approved, rejected) to go out once the transaction commits."""
    request_id = request.pk

    def deliver() -> None:
        fresh = GpuRequest.objects.select_related("team", "requester").get(pk=request_id)
        if kind == "submitted":
            recipients = [e for e in approver_emails() if e != fresh.requester.email]
            send_email(
                f"[GPU Portal] New request #{fresh.pk} from {fresh.team.name}: {fresh.name}",
                "allocations/email/submitted.txt",
                fresh,
                recipients,
            )
        elif fresh.requester.email:
            send_email(
                f"[GPU Portal] Request #{fresh.pk} {fresh.name} was {kind}",
                "allocations/email/decided.txt",
                fresh,
                [fresh.requester.email],
                decision=kind,
                comment=comment,
            )

    transaction.on_commit(deliver, robust=True)


def notify_expiry_soon_on_commit(request: GpuRequest) -> None:
    """Tell the requester, once the transaction commits, that their allocation expires within a day."""
    request_id = request.pk

    def deliver() -> None:
        fresh = GpuRequest.objects.select_related("team", "requester").get(pk=request_id)
        if fresh.requester.email:
            send_email(
                f"[GPU Portal] Request #{fresh.pk} {fresh.name} expires {fresh.expires_at:%Y-%m-%d %H:%M} UTC",
                "allocations/email/expiring.txt",
                fresh,
                [fresh.requester.email],
            )

    transaction.on_commit(deliver, robust=True)


def quota_decision_message(increase: QuotaIncreaseRequest) -> tuple[str, str]:
    """The subject and body telling a team how an approver decided its quota increase."""
    quota = increase.quota
    where = quota.node_pool.name if quota.node_pool_id else (quota.cluster.name if quota.cluster_id else "every pool")
    decision = increase.get_status_display().lower()
    subject = (
        f"[GPU Portal] Quota increase #{increase.pk} for {increase.team.name} was {decision}: "
        f"{quota.resource_name} on {where}"
    )
    body = render_to_string("allocations/email/quota_decided.txt", {"increase": increase, "where": where})
    return " ".join(subject.split()), body


def notify_quota_decision_on_commit(increase: QuotaIncreaseRequest) -> None:
    """Once the decision commits, email who asked and signal ``quota_increase_decided`` for the team's chat."""
    increase_id = increase.pk

    def deliver() -> None:
        fresh = QuotaIncreaseRequest.objects.select_related(
            "team", "quota__node_pool", "quota__cluster", "requested_by", "decided_by"
        ).get(pk=increase_id)
        subject, body = quota_decision_message(fresh)
        if fresh.requested_by.email and fresh.requested_by.is_active:
            try:
                send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [fresh.requested_by.email])
            except OSError:
                logger.exception("Could not send '%s' to %s", subject, fresh.requested_by.email)
        quota_increase_decided.send(sender=QuotaIncreaseRequest, increase_id=increase_id, subject=subject, body=body)

    transaction.on_commit(deliver, robust=True)
