"""billing.metering.prometheus: chunking under the points limit, auth headers, answers and errors over loopback HTTP."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from billing.metering.prometheus import (
    MAX_POINTS_PER_SERIES,
    PrometheusClient,
    PrometheusConfigError,
    PrometheusQueryError,
    PrometheusUnavailable,
    parse_result,
    range_chunks,
    resolve_auth_header,
)
from tests.integration.dcgm_exporter import free_port


def points_of(start: float, end: float, step: float) -> int:
    return int((end - start) // step) + 1


@pytest.mark.parametrize(
    ("start", "end", "step"),
    [
        (0, 30 * 86400, 236),  # 30 days fit one call (11,000 points) only at a step >= 236
        (0, 30 * 86400, 60),
        (0, 86400, 60),
        (1_700_000_000, 1_700_000_000 + 7 * 86400 + 17, 15),
        (0, 10_999 * 60, 60),  # exactly 11,000 points: one call
        (0, 11_000 * 60, 60),  # 11,001 points: two calls
        (5, 5, 60),
    ],
)
def test_chunks_cover_the_grid_once_under_the_limit(start: float, end: float, step: float) -> None:
    chunks = list(range_chunks(start, end, step))
    grid = []
    for chunk_start, chunk_end in chunks:
        assert points_of(chunk_start, chunk_end, step) <= MAX_POINTS_PER_SERIES
        n = points_of(chunk_start, chunk_end, step)
        grid.extend(chunk_start + i * step for i in range(n))
    expected = [start + i * step for i in range(points_of(start, end, step))]
    assert grid == expected  # same evaluation times as one call would use, none twice, none missing


def test_chunk_counts() -> None:
    assert len(list(range_chunks(0, 10_999 * 60, 60))) == 1
    assert len(list(range_chunks(0, 11_000 * 60, 60))) == 2
    assert len(list(range_chunks(0, 30 * 86400, 60))) == 4  # 43,201 points
    assert list(range_chunks(10, 0, 60)) == []
    with pytest.raises(ValueError, match="step"):
        list(range_chunks(0, 10, 0))


def test_auth_header_from_env_reference() -> None:
    env = {"PROM_TOKEN": "Bearer abc.def", "PROM_BASIC": "svc:s3cr:et"}
    assert resolve_auth_header("", env) is None
    assert resolve_auth_header("env:PROM_TOKEN", env) == "Bearer abc.def"
    basic = resolve_auth_header("env:PROM_BASIC", env)
    assert basic == "Basic " + base64.b64encode(b"svc:s3cr:et").decode()


@pytest.mark.parametrize(
    ("ref", "env", "message"),
    [
        ("file:/etc/token", {}, "must be 'env:VARIABLE'"),
        ("env:", {}, "must be 'env:VARIABLE'"),
        ("env:MISSING", {}, "MISSING"),
        ("env:PLAIN", {"PLAIN": "justatoken"}, "Bearer <token>"),
    ],
)
def test_bad_auth_references(ref: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(PrometheusConfigError, match=message) as info:
        resolve_auth_header(ref, env)
    assert "justatoken" not in str(info.value)  # a secret is never echoed


def test_parse_result_types() -> None:
    matrix = {"resultType": "matrix", "result": [{"metric": {"a": "1"}, "values": [[1, "2"], [2, "NaN"]]}]}
    [series] = parse_result(matrix)
    assert series.labels == {"a": "1"} and series.points[0] == (1.0, 2.0)
    assert series.points[1][1] != series.points[1][1]  # NaN survives
    vector = {"resultType": "vector", "result": [{"metric": {}, "value": [3, "+Inf"]}]}
    assert parse_result(vector)[0].points == ((3.0, float("inf")),)
    assert parse_result({"resultType": "scalar", "result": [4, "5"]})[0].points == ((4.0, 5.0),)


class FakePrometheus(BaseHTTPRequestHandler):
    """A loopback HTTP server answering the Prometheus API from a script of (status, body) per call."""

    script: list[tuple[int, dict]] = []
    calls: list[dict] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        type(self).calls.append({"path": self.path, "form": form, "auth": self.headers.get("Authorization")})
        status, body = type(self).script.pop(0) if type(self).script else (200, matrix_answer(form))
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def matrix_answer(form: dict[str, str]) -> dict:
    start, end, step = float(form["start"]), float(form["end"]), float(form["step"])
    values = [[start + i * step, "1"] for i in range(points_of(start, end, step))]
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"x": "y"}, "values": values}]}}


@pytest.fixture
def fake_prometheus() -> Iterator[str]:
    FakePrometheus.script, FakePrometheus.calls = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_query_range_splits_and_merges(fake_prometheus: str) -> None:
    client = PrometheusClient(fake_prometheus, auth_header="Bearer t0k", max_points=100)
    [series] = client.query_range("up", 0, 250 * 60, 60)
    assert len(FakePrometheus.calls) == 3
    assert [p[0] for p in series.points] == [i * 60.0 for i in range(251)]
    assert {call["auth"] for call in FakePrometheus.calls} == {"Bearer t0k"}
    assert FakePrometheus.calls[0]["path"] == "/api/v1/query_range"


def test_bad_query_is_permanent_and_not_retried(fake_prometheus: str) -> None:
    FakePrometheus.script = [(400, {"status": "error", "errorType": "bad_data", "error": "parse error"})]
    client = PrometheusClient(fake_prometheus, retries=3, backoff=0)
    with pytest.raises(PrometheusQueryError, match="parse error") as info:
        client.query("sum(")
    assert not info.value.transient and len(FakePrometheus.calls) == 1


def test_server_errors_are_retried_then_transient(fake_prometheus: str) -> None:
    unavailable = (503, {"status": "error", "errorType": "unavailable", "error": "starting"})
    FakePrometheus.script = [unavailable, unavailable]
    client = PrometheusClient(fake_prometheus, retries=2, backoff=0)
    assert client.query_range("up", 0, 60, 60)[0].labels == {"x": "y"}  # third call succeeds
    FakePrometheus.script, FakePrometheus.calls = [unavailable] * 3, []
    with pytest.raises(PrometheusUnavailable) as info:
        PrometheusClient(fake_prometheus, retries=2, backoff=0).query("up")
    assert info.value.transient and info.value.status == 503 and len(FakePrometheus.calls) == 3


def test_unauthorized_is_a_configuration_error(fake_prometheus: str) -> None:
    FakePrometheus.script = [(401, {"status": "error", "error": "unauthorized"})]
    with pytest.raises(PrometheusConfigError):
        PrometheusClient(fake_prometheus, retries=2, backoff=0).query("up")


def test_unreachable_is_transient() -> None:
    client = PrometheusClient(f"http://127.0.0.1:{free_port()}", retries=1, backoff=0, timeout=(1, 1))
    with pytest.raises(PrometheusUnavailable, match="unreachable") as info:
        client.query("up")
    assert info.value.transient
