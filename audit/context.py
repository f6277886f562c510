"""Where the current write comes from (browser, API, admin, task, system), set once per request or task.

A context variable, so it follows the request or the task and never leaks between threads: the web middleware
(``portal.middleware.AuditContextMiddleware``) sets it from the path and the client address; Celery's task signals set
it for a task's run. Services read it when they record an event and never need it passed down.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from audit.models import AuditSource


@dataclass(frozen=True)
class AuditContext:
    """The origin of the writes happening now."""

    source: str = AuditSource.SYSTEM
    detail: str = ""
    ip: str | None = None


_current: ContextVar[AuditContext] = ContextVar("audit_context", default=AuditContext())  # noqa: B039 - frozen


def current_context() -> AuditContext:
    """The origin of the writes happening now (``system`` outside any request or task)."""
    return _current.get()


@contextmanager
def audit_context(source: str, *, detail: str = "", ip: str | None = None) -> Iterator[AuditContext]:
    """Attribute the writes inside the block to ``source`` (and the client address, for web requests)."""
    token = _current.set(AuditContext(source=source, detail=detail[:200], ip=ip or None))
    try:
        yield _current.get()
    finally:
        _current.reset(token)


_task_tokens: dict[str, Token[AuditContext]] = {}


def _task_started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is not None:
        _task_tokens[task_id] = _current.set(AuditContext(source=AuditSource.TASK, detail=getattr(task, "name", "")))


def _task_finished(task_id: str | None = None, **_: Any) -> None:
    token = _task_tokens.pop(task_id, None) if task_id is not None else None
    if token is not None:
        with suppress(ValueError):  # set in another context (not with Celery's pools): leave it
            _current.reset(token)


def connect_celery_signals() -> None:
    """Mark every Celery task's writes as ``task`` (eager runs inside a web request included: the task did them)."""
    from celery.signals import task_postrun, task_prerun

    task_prerun.connect(_task_started, weak=False, dispatch_uid="audit-task-started")
    task_postrun.connect(_task_finished, weak=False, dispatch_uid="audit-task-finished")
