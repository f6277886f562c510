"""A budget's chat URL cannot aim the worker at the portal's own network: a lead sets only Slack, Teams Workflows and
e-mail; nobody sets a private, loopback or link-local host; the worker checks again before each send (a URL stored
earlier never reaches a local HTTP sink); the admin never shows the URL back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from billing.costs.budget_alerts import team_budgets_check
from billing.costs.chat_urls import chat_url_refusal
from billing.models import BudgetNotice, TeamBudget
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.billing.test_team_month_to_date import active_since
from tests.factories import DemoOrg, TeamBudgetFactory, UserFactory

pytestmark = pytest.mark.django_db
URL = "/billing/teams/vision/budget/"
NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)


class Sink:
    """A plain HTTP server on loopback that records every request (method and path), whatever it is."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, str]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                sink.hits.append((self.command, self.path))
                self.send_response(200)
                self.end_headers()

            do_GET = do_POST = do_PUT = do_DELETE = _record

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def sink() -> Iterator[Sink]:
    state = Sink()
    yield state
    state.server.shutdown()
    state.server.server_close()


@pytest.fixture
def https_sink() -> Iterator[ChatWebhookServer]:
    state, server = start_chat_webhook_server()
    yield state
    server.shutdown()
    server.server_close()


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post_chat(client: Client, url: str):
    return client.post(URL, {"monthly_amount": "5000.00", "thresholds_pct": "80", "chat_webhook_url": url})


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.1:{port}/steal?:method=DELETE",
        "json://169.254.169.254/latest/meta-data/",
        "form://[::1]:{port}/",
        "jsons://10.0.0.7/internal",
        "workflows://127.0.0.1:{port}/flow/SIG/?verify=no",
        "workflows://localhost:{port}/flow/SIG/?verify=no",  # a name that resolves to loopback
        "mailto://user:pass@192.168.1.5:587?to=a@example.com",
        "json://93.184.216.34/hook",  # public, but not a documented service
        "http://169.254.169.254/latest/meta-data/",  # not an apprise URL at all
    ],
)
def test_a_lead_cannot_aim_the_chat_at_a_private_host_or_an_undocumented_service(
    demo_org: DemoOrg, sink: Sink, url: str
) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url="")
    response = post_chat(client_for(demo_org.team_lead), url.format(port=sink.port))

    assert response.status_code == 400
    assert response.context["form"].errors["chat_webhook_url"]
    assert TeamBudget.objects.get().chat_webhook_url == ""


def test_a_lead_sets_slack_and_a_platform_admin_another_public_service_but_no_private_one(
    demo_org: DemoOrg, sink: Sink
) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url="")
    assert post_chat(client_for(demo_org.team_lead), "slack://T0/B0/XYZ").status_code == 302
    assert post_chat(client_for(demo_org.team_lead), "https://hooks.slack.com/services/T0/B0/XYZ").status_code == 302

    admin = client_for(demo_org.platform_admin)
    assert post_chat(admin, "json://93.184.216.34/hook").status_code == 302
    assert TeamBudget.objects.get().chat_webhook_url == "json://93.184.216.34/hook"
    response = post_chat(admin, f"json://127.0.0.1:{sink.port}/hook")
    assert response.status_code == 400 and "loopback" in response.context["form"].errors["chat_webhook_url"][0]


def test_the_operator_allow_list_admits_an_internal_host(settings, sink: Sink) -> None:
    url = f"workflows://127.0.0.1:{sink.port}/flow/SIG/?verify=no"
    assert chat_url_refusal(url, privileged=False) is not None
    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    assert chat_url_refusal(url, privileged=False) is None


@pytest.mark.parametrize("scheme", ["json", "workflows"])
def test_the_worker_never_posts_to_a_private_address_stored_earlier(
    demo_org: DemoOrg, sink: Sink, https_sink: ChatWebhookServer, settings, scheme: str
) -> None:
    # A URL stored before these rules (or by a DNS name that now resolves inside): the send-time check refuses it.
    url = (
        f"json://127.0.0.1:{sink.port}/steal?:method=DELETE"
        if scheme == "json"
        else f"workflows://localhost:{https_sink.port}/flow/SIG/?verify=no"
    )
    active_since(demo_org, NOW - timedelta(days=5), units=2)
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1.00"), chat_webhook_url=url)

    result = team_budgets_check(now=NOW)

    assert result.chatted == 0 and result.failed == 1
    assert sink.hits == [] and https_sink.posts == []
    notice = BudgetNotice.objects.filter(team=demo_org.team).first()
    assert notice.chat_sent_at is None and "public hosts" in notice.last_error

    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]  # the operator's choice: then it is delivered
    assert team_budgets_check(now=NOW).chatted == 1
    assert len(sink.hits) + len(https_sink.posts) == 1


def test_the_admin_never_shows_the_chat_url_and_refuses_a_private_one(demo_org: DemoOrg) -> None:
    budget = TeamBudgetFactory(team=demo_org.team, chat_webhook_url="slack://T0/B0/SECRETTOKEN")
    root = client_for(UserFactory(username="root", is_staff=True, is_superuser=True))
    change = f"/admin/billing/teambudget/{budget.pk}/change/"

    page = root.get(change).content.decode()
    assert "SECRETTOKEN" not in page

    form = {"team": demo_org.team.pk, "monthly_amount": "10.00", "thresholds_pct": "[50, 80, 100]"}
    response = root.post(change, {**form, "chat_webhook_url": "json://169.254.169.254/latest/"})
    assert response.status_code == 200 and "link-local" in response.content.decode()
    assert root.post(change, {**form, "chat_webhook_url": ""}).status_code == 302
    assert TeamBudget.objects.get().chat_webhook_url == "slack://T0/B0/SECRETTOKEN"  # blank keeps it
    assert root.post(change, {**form, "remove_chat": "on"}).status_code == 302
    assert TeamBudget.objects.get().chat_webhook_url == ""
