"""Serve the portal with gunicorn (several worker processes) on loopback, on the test database, for tests that must
cross process boundaries: rate limits, row locks between workers.

The server uses the test settings with the pytest database (committed data only: use transactional tests) and, when
Redis is configured, Redis as the cache. Its access log records each response's worker pid and status, so a test can
show that more than one worker answered.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import requests
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Gunicorn:
    """A running server: its base URL and access log (one ``<pid> <status> <path>`` line per response)."""

    url: str
    access_log: Path

    def worker_pids(self) -> set[str]:
        """The pids of the workers that answered so far."""
        lines = self.access_log.read_text().splitlines() if self.access_log.exists() else []
        return {line.split()[0] for line in lines if line.strip()}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    db = connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


@contextmanager
def gunicorn(*, workers: int = 2, env: dict[str, str] | None = None, timeout: float = 60) -> Iterator[Gunicorn]:
    """Start gunicorn with ``workers`` processes and extra environment ``env``; stop it on exit."""
    port = _free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="gunicorn-"))
    access_log = log_dir / "access.log"
    broker = getattr(settings, "INTEGRATION_BROKER_URL", "")
    server_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "DATABASE_URL": _database_url(),
        "CACHE_URL": broker if broker.startswith("redis://") else "",
        "CACHE_KEY_PREFIX": f"test-{uuid.uuid4().hex[:8]}",
        **(env or {}),
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi:application",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--access-logfile",
            str(access_log),
            "--access-logformat",
            "%(p)s %(s)s %(U)s",
            "--log-level",
            "warning",
            # A loaded test machine (another database's checkpoint, 50 clients on 2 cores) can stall a request past
            # gunicorn's 30 s default; killing the worker would fail the test for the machine, not the code.
            "--timeout",
            "120",
        ],
        cwd=ROOT,
        env=server_env,
        stdout=subprocess.DEVNULL,
        stderr=open(log_dir / "error.log", "w"),  # noqa: SIM115 - closed with the process
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {(log_dir / 'error.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except requests.RequestException:  # not listening yet, or still importing Django
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer /healthz in time")
            time.sleep(0.1)
        access_log.write_text("")  # count only the test's own responses
        yield Gunicorn(url=url, access_log=access_log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)
