"""Which chat URLs a budget may post to: the documented services on their public hosts, never the portal's network.

An apprise URL names its destination and, for the generic plugins (``json://``, ``form://``...), the method and query
too, and the worker posts there from inside the cluster: a team lead must not aim it at the metadata service or an
internal API. So:

- a team lead (or Finance) may set only the documented services: Slack (``slack://`` or ``https://hooks.slack.com/``),
  Microsoft Teams through Workflows (``workflows://`` on ``*.logic.azure.com`` or ``*.powerplatform.com``) and e-mail
  (``mailto://``, ``mailtos://`` on an SMTP port); a platform admin may set any apprise URL;
- whoever sets it, its host must resolve to public addresses only (no private, loopback, link-local, shared or
  reserved address), checked when it is set and again by the worker before each send (DNS may have changed);
- hosts in ``CHAT_WEBHOOK_ALLOWED_HOSTS`` (an operator's choice in the deployment, e.g. an internal relay) skip both.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import apprise
from django.conf import settings

# Services the portal documents, by apprise plugin, and the public hosts they post to.
_SLACK_HOSTS = {"gov-hook": "hooks.slack-gov.com", "bot": "slack.com"}  # other modes: hooks.slack.com
_WORKFLOWS_HOST_SUFFIXES = (".logic.azure.com", ".powerplatform.com")
_SMTP_PORTS = {25, 465, 587}


class ChatUrlRefused(ValueError):
    """The chat URL is not one this user may set, or it leads to an address the portal does not post to."""


@dataclass(frozen=True, slots=True)
class ChatDestination:
    """Where an apprise URL sends: its plugin's service, the host and port, whether it is a documented service, and
    whether the host is the service's own (``fixed``: the URL cannot choose it, as with Slack)."""

    service: str
    host: str
    port: int | None
    documented: bool
    fixed: bool = False


def chat_destination(url: str) -> ChatDestination:
    """Parse ``url`` with apprise and say where it would post; ``ChatUrlRefused`` when apprise does not know it."""
    plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is None:
        raise ChatUrlRefused("This is not a chat URL apprise understands (e.g. slack://TokenA/TokenB/TokenC).")
    name = type(plugin).__name__
    if name == "NotifySlack":
        host = _SLACK_HOSTS.get(str(getattr(plugin, "mode", "")), "hooks.slack.com")
        return ChatDestination(service="slack", host=host, port=443, documented=True, fixed=True)
    if name == "NotifyWorkflows":
        host = _host(plugin.host)
        return ChatDestination(
            service="workflows", host=host, port=plugin.port, documented=host.endswith(_WORKFLOWS_HOST_SUFFIXES)
        )
    if name == "NotifyEmail":
        host = _host(getattr(plugin, "smtp_host", "") or plugin.host)
        port = plugin.port
        return ChatDestination(service="email", host=host, port=port, documented=port in _SMTP_PORTS)
    host = _host(getattr(plugin, "host", ""))
    return ChatDestination(service=name.removeprefix("Notify").lower(), host=host, port=plugin.port, documented=False)


def _host(value: object) -> str:
    return str(value or "").lower().strip("[]").rstrip(".")


def _operator_allowed(host: str) -> bool:
    allowed = {_host(entry) for entry in getattr(settings, "CHAT_WEBHOOK_ALLOWED_HOSTS", [])}
    return host in allowed


def _addresses(host: str, port: int | None) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise ChatUrlRefused(f"The chat URL's host {host!r} does not resolve.") from exc
    found = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        found.append(address)
    return found


def check_chat_host_is_public(destination: ChatDestination) -> None:
    """Refuse a destination whose host resolves to any non-public address (unless the operator allows that host)."""
    if not destination.host:
        raise ChatUrlRefused("The chat URL names no host.")
    if _operator_allowed(destination.host):
        return
    for address in _addresses(destination.host, destination.port):
        if not address.is_global:
            raise ChatUrlRefused(
                f"The chat URL's host {destination.host!r} resolves to {address}, a private, loopback, link-local or "
                "reserved address: the portal posts only to public hosts."
            )


def chat_url_refusal(url: str, *, privileged: bool) -> str | None:
    """Why ``url`` may not be set by this user (``privileged``: a platform admin), or None when it may."""
    try:
        destination = chat_destination(url)
        if not destination.documented and not privileged and not _operator_allowed(destination.host):
            return (
                "Only Slack (slack://...), Microsoft Teams Workflows (workflows://...logic.azure.com/...) and e-mail "
                "(mailto://...) chat URLs may be set; ask a platform admin for another service."
            )
        if not destination.fixed:
            check_chat_host_is_public(destination)
    except ChatUrlRefused as exc:
        return str(exc)
    return None


def check_chat_url_before_send(url: str) -> None:
    """The worker's check just before posting: the host must still resolve to public addresses only."""
    check_chat_host_is_public(chat_destination(url))
