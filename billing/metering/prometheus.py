"""A small Prometheus HTTP API client: instant and range queries, typed series, chunking, retries and auth.

It knows nothing about Django models: a cluster is anything with ``prometheus_url`` and
``prometheus_auth_secret_ref`` attributes. Errors say whether a retry can help: a bad query is permanent, an
unreachable or overloaded server is transient (``PrometheusError.transient``).
"""

from __future__ import annotations

import base64
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import requests

# Prometheus refuses a range query that would return more than this many points per series ("exceeded maximum
# resolution of 11,000 points per timeseries").
MAX_POINTS_PER_SERIES = 11_000
DEFAULT_TIMEOUT = (3.05, 60.0)  # (connect, read) seconds
# Status codes worth retrying: the server is overloaded, restarting or behind a proxy that timed out.
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})


class PrometheusError(Exception):
    """A Prometheus call failed; ``transient`` says whether the same call may succeed later."""

    transient = False

    def __init__(self, message: str, *, status: int | None = None, error_type: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class PrometheusQueryError(PrometheusError):
    """Prometheus rejected the query (bad PromQL, too many points, ...): retrying the same call cannot help."""


class PrometheusConfigError(PrometheusError):
    """The cluster's Prometheus settings are unusable (no URL, a malformed or missing secret reference)."""


class PrometheusUnavailable(PrometheusError):
    """Prometheus could not be reached or answered with a server error: the same call may succeed later."""

    transient = True


class PrometheusTarget(Protocol):
    """What the client needs from a cluster."""

    prometheus_url: str
    prometheus_auth_secret_ref: str


@dataclass(frozen=True, slots=True)
class Series:
    """One time series: its labels (``__name__`` included when Prometheus returns it) and its (unix time, value)."""

    labels: dict[str, str] = field(hash=False)
    points: tuple[tuple[float, float], ...] = ()

    @property
    def key(self) -> frozenset[tuple[str, str]]:
        """The label set as a hashable key, to merge the chunks of one series."""
        return frozenset(self.labels.items())


def resolve_auth_header(secret_ref: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The Authorization header for a secret reference ``env:VAR`` holding ``Bearer <token>`` or ``user:password``."""
    if not secret_ref:
        return None
    environ = os.environ if environ is None else environ
    if not secret_ref.startswith("env:") or not secret_ref[4:]:
        raise PrometheusConfigError("prometheus_auth_secret_ref must be 'env:VARIABLE'.")
    name = secret_ref[4:]
    raw = environ.get(name)
    if raw is None or not raw.strip():
        raise PrometheusConfigError(f"The environment variable {name} (prometheus_auth_secret_ref) is not set.")
    value = raw.strip()
    if value.lower().startswith("bearer "):
        return f"Bearer {value[7:].strip()}"
    if ":" in value:
        return "Basic " + base64.b64encode(value.encode()).decode("ascii")
    # Never echo the value: it is a secret.
    raise PrometheusConfigError(f"{name} must hold 'Bearer <token>' or 'user:password'.")


def range_chunks(
    start: float, end: float, step: float, max_points: int = MAX_POINTS_PER_SERIES
) -> Iterator[tuple[float, float]]:
    """Split [start, end] into sub-ranges on the same step grid, each evaluating at most ``max_points`` points."""
    if step <= 0:
        raise ValueError("step must be positive")
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    if end < start:
        return
    # Prometheus evaluates at start, start+step, ... <= end: floor((end-start)/step)+1 points. Each chunk starts
    # one step after the previous chunk's last point, so no evaluation time is asked for twice.
    span = (max_points - 1) * step
    chunk_start = start
    while chunk_start <= end:
        chunk_end = min(chunk_start + span, end)
        points = math.floor((chunk_end - chunk_start) / step)
        yield chunk_start, chunk_start + points * step
        chunk_start = chunk_start + (points + 1) * step


def _timestamp(value: datetime | float) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime: Prometheus times must be aware (UTC)")
        return value.timestamp()
    return float(value)


def _parse_point(raw: list[Any]) -> tuple[float, float]:
    # Values come as strings so that NaN and +Inf survive JSON; float() reads all of them.
    return float(raw[0]), float(raw[1])


def parse_result(data: Mapping[str, Any]) -> list[Series]:
    """Typed series from the ``data`` member of a query or query_range answer."""
    result_type = data.get("resultType")
    result = data.get("result")
    if result_type == "matrix":
        return [Series(dict(item["metric"]), tuple(_parse_point(p) for p in item["values"])) for item in result]
    if result_type == "vector":
        return [Series(dict(item["metric"]), (_parse_point(item["value"]),)) for item in result]
    if result_type == "scalar":
        return [Series({}, (_parse_point(result),))]
    raise PrometheusQueryError(f"Unsupported result type {result_type!r}.")


class PrometheusClient:
    """Talks to one Prometheus server's HTTP API (``/api/v1/query`` and ``/api/v1/query_range``)."""

    def __init__(
        self,
        base_url: str,
        *,
        auth_header: str | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        retries: int = 3,
        backoff: float = 0.5,
        max_points: int = MAX_POINTS_PER_SERIES,
        session: requests.Session | None = None,
    ) -> None:
        if not base_url:
            raise PrometheusConfigError("No Prometheus URL configured.")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_points = max_points
        self.session = session or requests.Session()
        self.headers = {"Accept": "application/json"}
        if auth_header:
            self.headers["Authorization"] = auth_header

    @classmethod
    def for_cluster(cls, cluster: PrometheusTarget, **kwargs: Any) -> PrometheusClient:
        """A client for a cluster's Prometheus, with the credentials its secret reference points to."""
        return cls(
            cluster.prometheus_url, auth_header=resolve_auth_header(cluster.prometheus_auth_secret_ref), **kwargs
        )

    def query(self, query: str, at: datetime | float | None = None) -> list[Series]:
        """Evaluate an instant query (now, or at ``at``)."""
        params: dict[str, str] = {"query": query}
        if at is not None:
            params["time"] = repr(_timestamp(at))
        return parse_result(self._call("query", params))

    def query_range(self, query: str, start: datetime | float, end: datetime | float, step: float) -> list[Series]:
        """Evaluate a range query, split into calls under Prometheus' points-per-series limit, series merged."""
        merged: dict[frozenset[tuple[str, str]], tuple[dict[str, str], list[tuple[float, float]]]] = {}
        for chunk_start, chunk_end in range_chunks(_timestamp(start), _timestamp(end), step, self.max_points):
            params = {"query": query, "start": repr(chunk_start), "end": repr(chunk_end), "step": repr(float(step))}
            for series in parse_result(self._call("query_range", params)):
                _, points = merged.setdefault(series.key, (series.labels, []))
                points.extend(series.points)
        return [Series(labels, tuple(points)) for labels, points in merged.values()]

    def _call(self, endpoint: str, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.base_url}/api/v1/{endpoint}"
        attempt = 0
        while True:
            try:
                return self._call_once(url, params)
            except PrometheusUnavailable:
                if attempt >= self.retries:
                    raise
            # Exponential backoff: 0.5 s, 1 s, 2 s, ... gives a restarting server time to come back.
            time.sleep(self.backoff * (2**attempt))
            attempt += 1

    def _call_once(self, url: str, params: dict[str, str]) -> dict[str, Any]:
        try:
            # POST: long PromQL and many series selectors stay out of URL length limits.
            response = self.session.post(url, data=params, headers=self.headers, timeout=self.timeout)
        except requests.RequestException as exc:
            raise PrometheusUnavailable(f"Prometheus at {self.base_url} is unreachable: {exc}") from exc
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "success":
            return body["data"]
        error_type = str(body.get("errorType", "")) if isinstance(body, dict) else ""
        detail = str(body.get("error", "")) if isinstance(body, dict) else response.text[:200]
        message = f"Prometheus answered {status}: {error_type + ': ' if error_type else ''}{detail}".strip()
        if status in TRANSIENT_STATUS or status >= 500 or error_type in {"timeout", "canceled", "unavailable"}:
            raise PrometheusUnavailable(message, status=status, error_type=error_type)
        if status in (401, 403):
            raise PrometheusConfigError(message, status=status, error_type=error_type)
        raise PrometheusQueryError(message, status=status, error_type=error_type)
