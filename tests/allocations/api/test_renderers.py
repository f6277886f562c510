"""The API's JSON renderer writes DRF's bytes (orjson underneath)."""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import json
import uuid
from typing import Any

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.exceptions import ErrorDetail
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from infra.renderers import FastJSONRenderer, JsonText

UTC = datetime.UTC
CASES: list[Any] = [
    {"strategy": "mig", "quantity": 1, "saving_vs_dedicated_pct": 85.7, "mig_profile": None, "ok": True},
    {"at": datetime.datetime(2026, 11, 24, 5, 50, 12, 123456, tzinfo=UTC)},  # DRF: milliseconds, "Z"
    {"at": datetime.datetime(2026, 11, 24, 5, 50, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))},
    {"naive": datetime.datetime(2026, 11, 24, 5, 50), "day": datetime.date(2026, 11, 24)},
    {"time": datetime.time(5, 50, 12, 7), "span": datetime.timedelta(hours=1, seconds=3)},
    {"amount": decimal.Decimal("123.45"), "id": uuid.UUID(int=7), "ip": ipaddress.ip_address("10.0.0.1")},
    {"lazy": gettext_lazy("Not found."), "error": ErrorDetail("This field is required.", code="required")},
    {"unicode": "GPU \u2013 café ✓", "separators": "a\u2028b\u2029c", "escapes": 'q"\\\n\t\x01'},
    {"set": {3}, "tuple": (1, 2), "frozen": frozenset(), "bytes": b"raw", "nested": [[{"a": [None]}]]},
    ReturnDict({"a": ReturnList([1, 2.5], serializer=None)}, serializer=None),
    {1: "int key", "b": 1},  # orjson refuses: DRF renders it
    {"big": 2**70},  # over 64 bits: DRF renders it
    {"floats": [0.1, 1.5, -3.25, 100.0, 1e-3, 12345.678]},
    [],
    "a string",
    3,
]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_same_bytes_as_drf(data: Any) -> None:
    assert FastJSONRenderer().render(data, "application/json") == JSONRenderer().render(data, "application/json")


def test_indented_answers_are_drfs() -> None:
    data = {"a": [1, {"b": None}]}
    for media_type, context in (("application/json; indent=4", {}), ("application/json", {"indent": 2})):
        rendered = FastJSONRenderer().render(data, media_type, context)
        assert rendered == JSONRenderer().render(data, media_type, context)
        assert b"\n" in rendered


def test_none_is_an_empty_body() -> None:
    assert FastJSONRenderer().render(None) == b""


def test_what_drf_cannot_encode_still_fails() -> None:
    with pytest.raises(TypeError):
        FastJSONRenderer().render({"object": object()})


def test_it_is_the_apis_json_renderer(client_as: Any) -> None:
    response = client_as("member").post("/api/v1/recommendations/", {"workload_type": "training"}, format="json")
    assert response.status_code == 400
    assert type(response.accepted_renderer) is FastJSONRenderer


def test_json_text_is_written_as_it_is_and_parsed_for_an_indented_answer() -> None:
    text = '{"strategy": "mig", "alternatives": [{"cost": 1.5e-07}, null], "note": "caf\u00e9\u2028"}'
    data = {"id": 7, "spec": JsonText(text)}
    compact = FastJSONRenderer().render(data, "application/json")
    # The text's own spacing and numbers, with U+2028 escaped as DRF escapes it everywhere else.
    assert compact == b'{"id":7,"spec":' + text.replace("\u2028", "\\u2028").encode() + b"}"
    assert json.loads(compact) == {"id": 7, "spec": json.loads(text)}
    parsed = {"id": 7, "spec": json.loads(text)}
    for media_type, context in (("application/json; indent=4", {}), ("application/json", {"indent": 2})):
        assert FastJSONRenderer().render(data, media_type, context) == JSONRenderer().render(
            parsed, media_type, context
        )


def test_json_text_beside_what_orjson_refuses_is_parsed_by_drfs_renderer() -> None:
    data = {1: "int key", "spec": JsonText('{"a": [1, 2]}')}
    assert FastJSONRenderer().render(data) == JSONRenderer().render({1: "int key", "spec": {"a": [1, 2]}})
