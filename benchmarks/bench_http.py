"""gunicorn on loopback and a bounded HTTP load against it (a helper, not a benchmark).

A server is started under coreutils ``timeout``, in a process group of its own: it stops by itself after
``lifetime`` seconds even if the benchmark that started it dies, and ``stop()`` ends that group alone.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``portal.wsgi`` of ``tree`` under gunicorn (sync workers) on a free loopback port."""

    def __init__(self, tree: Path, env: dict[str, str], *, workers: int = 2, lifetime: int = 1800) -> None:
        self.tree = tree
        self.port = free_port()
        command = [
            "timeout",
            str(lifetime),
            sys.executable,
            "-m",
            "gunicorn",
            "--chdir",
            str(tree),
            "-w",
            str(workers),
            "-b",
            f"127.0.0.1:{self.port}",
            "--log-level",
            "warning",
            "portal.wsgi:application",
        ]
        clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        self.process = subprocess.Popen(
            command,
            cwd=tree,
            env={**clean, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn of {self.tree} exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"gunicorn of {self.tree} did not listen on port {self.port} in {timeout:.0f} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def hammer(
    port: int,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    total: int,
    threads: int,
    timeout: float = 120.0,
    seconds: float | None = None,
) -> dict[str, object]:
    """``total`` requests over ``threads`` kept-alive connections (each thread stops early once ``seconds`` have
    passed, after one request at least): p50/p99 latency, throughput and the statuses."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    per_thread = max(1, total // threads)
    deadline = time.perf_counter() + seconds if seconds is not None else None

    def run() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        local, codes = [], {}
        for _ in range(per_thread):
            if deadline is not None and local and time.perf_counter() > deadline:
                break
            start = time.perf_counter()
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (TimeoutError, ConnectionError, http.client.HTTPException):  # an answer that never came
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                status = 0
            local.append(time.perf_counter() - start)
            codes[status] = codes.get(status, 0) + 1
        conn.close()
        with lock:
            latencies.extend(local)
            for code, n in codes.items():
                statuses[code] = statuses.get(code, 0) + n

    workers = [threading.Thread(target=run) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
        "rps": len(latencies) / elapsed,
        "statuses": statuses,
    }
