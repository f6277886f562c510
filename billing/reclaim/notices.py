"""Telling a workload's owner what happened to it: email to the requester and the team's leads, and a post to the
team's chat (its budget's chat URL), as budget alerts go. Used by the idle reclaim, the preemption notice and
quota decisions."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.mail import send_mail

from allocations.models import GpuRequest, QuotaIncreaseRequest, RequestEvent
from billing.costs.budget_alerts import ChatDeliveryError, chat_send, lead_emails
from billing.models import TeamBudget

logger = logging.getLogger(__name__)


def tell_owner(request: GpuRequest, *, subject: str, body: str) -> None:
    """Email the requester and the team's leads, and post to the team's chat; an outage is logged, never raised."""
    subject = " ".join(subject.split())
    recipients = sorted({*lead_emails(request.team), *([request.requester.email] if request.requester.email else [])})
    if recipients:
        try:
            send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
        except OSError:
            logger.exception("Could not email '%s' about request %s", subject, request.pk)
    budget = TeamBudget.objects.filter(team=request.team).exclude(chat_webhook_url="").first()
    if budget is not None:
        try:
            chat_send(url=budget.chat_webhook_url, title=subject.removeprefix("[GPU Portal] "), body=body)
        except ChatDeliveryError:
            logger.warning("Could not post '%s' about request %s to the team's chat", subject, request.pk)


def preemption_message(request: GpuRequest, event: RequestEvent) -> tuple[str, str]:
    """The subject and body telling the owner their tier-3 workload was preempted, why, and what happens next."""
    details = event.details or {}
    subject = f"[GPU Portal] Request #{request.pk} {request.name} was preempted"
    body = (
        f"{request.team.name}'s {request.workload_type} workload {request.name} on cluster "
        f"{request.cluster.name if request.cluster_id else '?'} was {details.get('explained', 'preempted')}.\n"
        f"Kueue's reason: {details.get('reason') or 'none given'}; {details.get('message') or 'no message'}\n"
        "It runs on a preemptible tier (or on borrowed quota): Kueue has put it back in the team's queue and starts it "
        "again when quota frees. Checkpoint long work so a restart loses little.\n"
        f"The request's page: /requests/{request.pk}/\n"
    )
    return " ".join(subject.split()), body


def notify_preempted(sender: Any, *, request_id: int, event_id: int, **kwargs: Any) -> None:
    """The ``request_preempted`` receiver: tell the owner and the team, once per preemption event."""
    request = GpuRequest.objects.select_related("team", "requester", "cluster").filter(pk=request_id).first()
    event = RequestEvent.objects.filter(pk=event_id, request_id=request_id).first()
    if request is None or event is None:
        return
    subject, body = preemption_message(request, event)
    tell_owner(request, subject=subject, body=body)


def post_quota_decision(sender: Any, *, increase_id: int, subject: str, body: str, **kwargs: Any) -> None:
    """The ``quota_increase_decided`` receiver: post the decision to the team's chat (the email went already)."""
    team_id = QuotaIncreaseRequest.objects.filter(pk=increase_id).values_list("team_id", flat=True).first()
    budget = TeamBudget.objects.filter(team_id=team_id).exclude(chat_webhook_url="").first()
    if budget is None:
        return
    try:
        chat_send(url=budget.chat_webhook_url, title=subject.removeprefix("[GPU Portal] "), body=body)
    except ChatDeliveryError:
        logger.warning("Could not post '%s' to the team's chat", subject)
