"""drf-spectacular hooks for what every API operation shares."""

from __future__ import annotations

from typing import Any

FIELD_ERRORS = {
    "type": "object",
    "description": 'DRF\'s shape: `{"field": ["message", ...]}` naming each bad field or query parameter.',
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}
HTTP_METHODS = {"get", "put", "patch", "post", "delete", "head", "options", "trace"}


def document_bad_input(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Every operation may answer 400: a NUL character in any query parameter or body field is refused before the
    view runs (``portal.middleware.RejectNulCharactersMiddleware``). Operations that document no 400 get this one."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method in HTTP_METHODS:
                operation.setdefault("responses", {}).setdefault(
                    "400",
                    {
                        "description": "A query parameter or body field is malformed (e.g. carries a NUL character).",
                        "content": {"application/json": {"schema": FIELD_ERRORS}},
                    },
                )
    return result
