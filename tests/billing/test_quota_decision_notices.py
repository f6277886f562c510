"""A quota decision reaches the team: who asked gets an email, the team's chat a post (as budget alerts go), and
both only once the decision has committed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from allocations.models import Quota, QuotaIncreaseRequest, QuotaRequestStatus
from allocations.quota_requests.services import quota_increase_decide
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.factories import DemoOrg, QuotaFactory, TeamBudgetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def chat(settings) -> Iterator[ChatWebhookServer]:
    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]  # the webhook is on loopback, which the portal refuses
    state, server = start_chat_webhook_server()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def asked(demo_org: DemoOrg) -> QuotaIncreaseRequest:
    """The lead's pending ask to raise vision's H100 quota from 4 to 8 GPUs."""
    quota = QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=4)
    return QuotaIncreaseRequest.objects.create(
        team=demo_org.team,
        quota=quota,
        limit_when_asked=4,
        requested_limit=8,
        reason="Six-GPU fine-tune of the detector.",
        requested_by=demo_org.team_lead,
    )


def test_a_grant_emails_the_lead_and_posts_to_the_teams_chat(
    demo_org: DemoOrg, asked: QuotaIncreaseRequest, chat: ChatWebhookServer, django_capture_on_commit_callbacks
) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url=chat.workflows_url())
    approver = Client()
    approver.force_login(demo_org.approver)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        approver.post(
            reverse("allocations:quota-increase-decide", args=[asked.pk]), {"decision": "grant", "comment": "Go."}
        )
        assert mail.outbox == [] and chat.posts == []  # nothing leaves before the commit
    for callback in callbacks:
        callback()

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [demo_org.team_lead.email]
    assert message.subject == (
        f"[GPU Portal] Quota increase #{asked.pk} for Vision was granted: nvidia.com/gpu on {demo_org.pool.name}"
    )
    assert "from 4 to 8 units was granted" in message.body and "Comment: Go." in message.body
    assert "nominal quota is now 8 units" in message.body
    assert len(chat.posts) == 1
    assert f"Quota increase #{asked.pk} for Vision was granted" in str(chat.posts[0]["body"])


def test_a_decline_tells_the_reason_and_the_unchanged_quota(
    demo_org: DemoOrg, asked: QuotaIncreaseRequest, chat: ChatWebhookServer, django_capture_on_commit_callbacks
) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url=chat.workflows_url())

    with django_capture_on_commit_callbacks(execute=True):
        quota_increase_decide(
            acting_user=demo_org.approver, increase=asked, grant=False, comment="The pool is full until December."
        )

    assert QuotaIncreaseRequest.objects.get().status == QuotaRequestStatus.DECLINED
    assert len(mail.outbox) == 1 and "was declined" in mail.outbox[0].subject
    assert "Comment: The pool is full until December." in mail.outbox[0].body
    assert "nominal quota stays at 4 units" in mail.outbox[0].body
    assert len(chat.posts) == 1 and "The pool is full until December." in str(chat.posts[0]["body"])


def test_a_refused_decision_notifies_nobody(
    demo_org: DemoOrg, asked: QuotaIncreaseRequest, chat: ChatWebhookServer, django_capture_on_commit_callbacks
) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url=chat.workflows_url())

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(Exception, match="Say why"):
        quota_increase_decide(acting_user=demo_org.approver, increase=asked, grant=False, comment="")

    assert mail.outbox == [] and chat.posts == []
    assert Quota.objects.get(pk=asked.quota_id).limit == 4


def test_a_team_without_a_chat_still_gets_the_email(
    demo_org: DemoOrg, asked: QuotaIncreaseRequest, chat: ChatWebhookServer, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        quota_increase_decide(acting_user=demo_org.approver, increase=asked, grant=True)

    assert [m.to for m in mail.outbox] == [[demo_org.team_lead.email]]
    assert chat.posts == []
