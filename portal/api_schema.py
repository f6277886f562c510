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


REF_PREFIX = "#/components/schemas/"


def document_field_selection(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Operations taking ``?fields=`` and ``?omit=`` (and ``?brief=``) may leave any field out of their answer.

    Their 200 answers point at a copy of the item's component with no required properties (``<Name>Selectable``,
    and its paginated list), so the schema says what the server does; every other operation keeps the strict one.
    """
    components = result.get("components", {}).get("schemas", {})

    def selectable(ref: str) -> str:
        name = ref.removeprefix(REF_PREFIX)
        copy_name = f"{name}Selectable"
        if copy_name not in components:
            copy = {key: value for key, value in components[name].items() if key != "required"}
            copy["description"] = (
                copy.get("description", "") + " Fields may be left out with ?fields=/?omit=."
            ).strip()
            components[copy_name] = copy
        return REF_PREFIX + copy_name

    def loosen(schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref", "")
        if not ref.startswith(REF_PREFIX):
            return schema
        component = components[ref.removeprefix(REF_PREFIX)]
        items = component.get("properties", {}).get("results", {}).get("items", {})
        if "$ref" not in items:  # one item (the detail)
            return {"$ref": selectable(ref)}
        page_name = ref.removeprefix(REF_PREFIX).replace("List", "SelectableList")
        if page_name not in components:
            page = {**component, "properties": {**component["properties"]}}
            page["properties"]["results"] = {
                **page["properties"]["results"],
                "items": {"$ref": selectable(items["$ref"])},
            }
            components[page_name] = page
        return {"$ref": REF_PREFIX + page_name}

    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in HTTP_METHODS:
                continue
            query = {p.get("name") for p in operation.get("parameters", []) if p.get("in") == "query"}
            if not {"fields", "omit"} <= query:
                continue
            for media in operation.get("responses", {}).get("200", {}).get("content", {}).values():
                media["schema"] = loosen(media["schema"])
    return result
