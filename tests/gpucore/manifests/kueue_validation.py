"""Validate Kueue (and Prometheus Operator) objects against the CRDs' own schemas, as the API server would
(kueue_schemas/README.md, monitoring_schemas/README.md).

1. schema defaults are applied (the API server defaults before it validates, and CEL rules read defaulted fields);
2. the JSON Schema (``jsonschema``, Draft 7 keywords the CRD uses), with unknown fields refused wherever the schema
   lists its properties (the API server's strict field validation; ``metadata`` is checked by the callers);
3. every ``x-kubernetes-validations`` CEL rule on the path, evaluated with ``common-expression-language``; rules that
   read ``oldSelf`` are transition rules (updates only) and are skipped.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import cel
import jsonschema

HERE = Path(__file__).resolve().parent
SCHEMA_DIR = HERE / "kueue_schemas"
API_VERSION = "kueue.x-k8s.io/v1beta2"
# apiVersion -> (folder, file suffix) of the extracted CRD schemas: Kueue's, and the Prometheus Operator's.
SCHEMA_DIRS = {
    API_VERSION: (SCHEMA_DIR, "v1beta2"),
    "monitoring.coreos.com/v1": (HERE / "monitoring_schemas", "v1"),
    # JobSet and KAI Scheduler (crd_schemas/README.md).
    "jobset.x-k8s.io/v1alpha2": (HERE / "crd_schemas", "v1alpha2"),
    "scheduling.run.ai/v2": (HERE / "crd_schemas", "v2"),
}


@cache
def schema_for(kind: str, api_version: str = API_VERSION) -> dict[str, Any]:
    """The extracted ``openAPIV3Schema`` of a CRD kind (Kueue v1beta2 unless told another apiVersion)."""
    folder, suffix = SCHEMA_DIRS[api_version]
    return json.loads((folder / f"{kind.lower()}.{suffix}.json").read_text(encoding="utf-8"))


def _strict(schema: Any) -> Any:
    """A copy where every object schema that lists its properties refuses others."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: _strict(value) for key, value in schema.items() if key != "properties"}
    if "properties" in schema:
        result["properties"] = {name: _strict(sub) for name, sub in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            result["additionalProperties"] = False
    return result


def with_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """A copy of ``value`` with the schema's ``default``s filled in where a field is absent."""
    value = copy.deepcopy(value)
    _default(schema, value)
    return value


def _default(schema: Mapping[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                _default(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)


def _rules(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Every (path, rule, value) the CEL rules of the schema apply to, for the fields the value has."""
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, value
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name in value:
                yield from _rules(sub, value[name], f"{path}.{name}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                yield from _rules(extra, item, f"{path}[{key}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _rules(schema["items"], item, f"{path}[{index}]")


def kueue_errors(obj: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in a CRD object (Kueue, Prometheus Operator): schema errors and failed CEL
    rules (empty: accepted)."""
    if obj.get("apiVersion") not in SCHEMA_DIRS:
        return [f"apiVersion is {obj.get('apiVersion')!r}, not one of {', '.join(SCHEMA_DIRS)}"]
    schema = schema_for(obj["kind"], obj["apiVersion"])
    value = with_defaults(schema, obj)
    validator = jsonschema.Draft7Validator(_strict(schema))
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(value)]
    for path, rule, node in _rules(schema, value, ""):
        if "oldSelf" in rule["rule"]:
            continue  # a transition rule: evaluated on updates only
        context = cel.Context()
        context.add_variable("self", node)
        if cel.evaluate(rule["rule"], context) is not True:
            errors.append(f"{path or '<root>'}: {rule.get('message') or rule['rule']}")
    return errors


def validate_kueue(obj: Mapping[str, Any]) -> None:
    """Fail with every reason the API server would refuse this Kueue object."""
    errors = kueue_errors(obj)
    assert not errors, f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}: " + "; ".join(errors)
