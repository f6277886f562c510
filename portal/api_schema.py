"""drf-spectacular's schema class and hooks for what every API operation shares."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

FIELD_ERRORS = {
    "type": "object",
    "description": 'DRF\'s shape: `{"field": ["message", ...]}` naming each bad field or query parameter.',
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}
ERROR_DETAIL = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
HTTP_METHODS = {"get", "put", "patch", "post", "delete", "head", "options", "trace"}
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
UNKNOWN_OBJECT = {
    "description": (
        "A well-formed body names an object that does not exist or is not yours (a team, quota or cluster), or a "
        "workload profile no pool can serve: "
        '`{"field": ["message", ...]}` naming the field.'
    ),
    "content": {"application/json": {"schema": FIELD_ERRORS}},
}


def _names_objects(serializer: Any) -> bool:
    """Whether a request body takes a reference to a stored object (a slug or id the server looks up)."""
    serializer = force_instance(serializer)
    if isinstance(serializer, serializers.ListSerializer):
        serializer = serializer.child
    if not isinstance(serializer, serializers.BaseSerializer):
        return False
    return any(
        isinstance(field, (serializers.RelatedField, serializers.ManyRelatedField)) and not field.read_only
        for field in getattr(serializer, "fields", {}).values()
    )


def _own_pattern(field: serializers.CharField) -> str | None:
    """The field's own regex in ECMA form (as spectacular writes it, which it would skip once a pattern is set)."""
    for validator in field.validators:
        if isinstance(validator, RegexValidator) and not validator.inverse_match:
            return validator.regex.pattern.replace(r"\Z", "$").replace(r"\A", "^")
    return None


class PortalAutoSchema(AutoSchema):
    """Spectacular's schema, stating what DRF does beyond it:

    - the 422 of a body that names an unknown object (``portal.api_errors``): the reference is well formed, so the
      schema cannot refuse it, and the answer is documented instead;
    - a required text field that DRF trims must hold a non-space character (``pattern: \\S``): `" "` is blank;
      one with a regex of its own gets that regex instead;
    - a serializer with ``refuses_unknown_fields`` answers an unknown key 400: ``additionalProperties: false``.
    """

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> Any:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            direction == "request"
            and isinstance(schema, dict)
            and schema.get("type") == "string"
            and isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and not {"pattern", "enum", "format"} & schema.keys()
        ):
            schema["pattern"] = _own_pattern(field) or r"\S"
        return schema

    def _map_basic_serializer(self, serializer: Any, direction: str) -> Any:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        return schema

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if self.method not in ("POST", "PUT", "PATCH") or not _names_objects(self.get_request_serializer()):
            return responses
        documented = responses.get("422")
        if documented is None:
            responses["422"] = UNKNOWN_OBJECT
            return responses
        for media in documented.get("content", {}).values():  # the operation's own 422, or this one
            media["schema"] = {"anyOf": [media["schema"], FIELD_ERRORS]}
        documented["description"] = f"{documented.get('description', '')} Or: {UNKNOWN_OBJECT['description']}"
        return responses


class NonEmptyFilterExtension(DjangoFilterExtension):
    """django-filter's parameters, each a non-empty string where it is a string: ``infra.filtering.FilterBackend``
    answers an empty filter value 400, so ``?status=`` is not read as "any status"."""

    target_class = "infra.filtering.FilterBackend"
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(auto_schema, *args, **kwargs)
        for parameter in parameters:
            schema = parameter.get("schema", {})
            for value in (schema, schema.get("items", {})):
                if value.get("type") == "string":
                    value.setdefault("minLength", 1)
        return parameters


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


def document_missing_page(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Every paginated list may answer 404: a ``?page=`` of 0 or past the last page (``infra.api_pagination``)."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in HTTP_METHODS:
                continue
            if any(p.get("in") == "query" and p.get("name") == "page" for p in operation.get("parameters", [])):
                operation.setdefault("responses", {}).setdefault(
                    "404",
                    {
                        "description": (
                            "No such page (`page` is 0 or past the last page), or a filter names an object that "
                            "does not exist or is not yours."
                        ),
                        "content": {"application/json": {"schema": ERROR_DETAIL}},
                    },
                )
    return result


# What a form sends for "none" in a nullable field.
EMPTY_FORM_VALUE = {"type": "string", "enum": [""], "description": "Empty: none."}


def document_form_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A form (urlencoded or multipart) cannot carry a JSON null: its request bodies point at a copy of the JSON
    body's component (``<Name>Form``) where a nullable field takes an empty value instead, which DRF reads as null
    (``Field.get_value`` on form input)."""
    components = result.get("components", {}).get("schemas", {})

    def form_copy(ref: str) -> str:
        name = ref.removeprefix(REF_PREFIX)
        copy_name = f"{name}Form"
        if copy_name not in components:
            copy = {**components[name], "properties": {}}
            for field, schema in components[name].get("properties", {}).items():
                nullable = bool(schema.get("nullable"))
                schema = {key: value for key, value in schema.items() if key != "nullable"}
                if "oneOf" in schema:  # a nullable enum: the enum or NullEnum
                    choices = [c for c in schema["oneOf"] if c.get("$ref") != f"{REF_PREFIX}NullEnum"]
                    schema = choices[0] if len(choices) == 1 else {**schema, "oneOf": choices}
                    nullable = True
                if nullable:
                    described = {key: schema.pop(key) for key in ("title", "description") if key in schema}
                    schema = {**described, "anyOf": [schema, EMPTY_FORM_VALUE]}
                copy["properties"][field] = schema
            components[copy_name] = copy
        return REF_PREFIX + copy_name

    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in HTTP_METHODS:
                continue
            content = operation.get("requestBody", {}).get("content", {})
            for media_type in FORM_MEDIA_TYPES:
                ref = content.get(media_type, {}).get("schema", {}).get("$ref", "")
                if ref.startswith(REF_PREFIX) and "properties" in components.get(ref.removeprefix(REF_PREFIX), {}):
                    content[media_type]["schema"] = {"$ref": form_copy(ref)}
    return result
