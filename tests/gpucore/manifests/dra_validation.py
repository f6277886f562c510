"""Strict checks of DRA objects (``resource.k8s.io/v1``): kubernetes-validate at 1.34, 1.35 and 1.37 with a missing
schema a failure (the CLI only warns and exits 0), plus what the schema misses: exactly one of ``exactly`` and
``firstAvailable``, DNS names, ``count >= 1``, a known DeviceClass, and every CEL expression parsed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cel
import kubernetes_validate

from gpucore.manifests.dra import DEVICE_CLASSES
from gpucore.manifests.naming import is_dns_label, is_dns_subdomain

DRA_KUBERNETES_VERSIONS = ("1.34.0", "1.35.0", "1.37.0")


def validate_strictly(obj: Mapping[str, Any], versions: tuple[str, ...] = DRA_KUBERNETES_VERSIONS) -> None:
    """kubernetes-validate, strict, at each version; ``SchemaNotFoundError`` (the CLI's warning) propagates."""
    for version in versions:
        try:
            kubernetes_validate.validate(dict(obj), version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = "/".join(str(p) for p in error.path)
            raise AssertionError(f"{obj['kind']} (Kubernetes {version}): {error.message} at {path}") from None


def cel_errors(expression: object) -> list[str]:
    """Why a CEL expression does not parse (empty: it does)."""
    if not isinstance(expression, str) or not expression.strip():
        return [f"{expression!r} is not a CEL expression"]
    try:
        cel.compile(expression)
    except ValueError as error:
        return [str(error).splitlines()[0]]
    return []


def _request_errors(request: Mapping[str, Any], where: str, *, sub: bool = False) -> list[str]:
    errors = []
    if not is_dns_label(request.get("name")):
        errors.append(f"{where}: name {request.get('name')!r} is not a DNS label")
    body = request if sub else request.get("exactly")
    if not sub and (("exactly" in request) == ("firstAvailable" in request)):
        errors.append(f"{where}: exactly one of exactly and firstAvailable")
    if not sub and "firstAvailable" in request:
        for index, option in enumerate(request["firstAvailable"] or []):
            errors += _request_errors(option, f"{where}.firstAvailable[{index}]", sub=True)
        if not request["firstAvailable"]:
            errors.append(f"{where}: firstAvailable is empty")
    if body is None:
        return errors
    if body.get("deviceClassName") not in DEVICE_CLASSES:
        errors.append(f"{where}: unknown DeviceClass {body.get('deviceClassName')!r}")
    mode = body.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        errors.append(f"{where}: allocationMode {mode!r}")
    if mode == "ExactCount" and (not isinstance(body.get("count", 1), int) or body.get("count", 1) < 1):
        errors.append(f"{where}: count must be >= 1, not {body.get('count')!r}")
    for index, selector in enumerate(body.get("selectors") or []):
        errors += [
            f"{where}.selectors[{index}]: {e}" for e in cel_errors((selector.get("cel") or {}).get("expression"))
        ]
    return errors


def dra_semantic_errors(obj: Mapping[str, Any]) -> list[str]:
    """What kubernetes-validate lets through in a ResourceClaimTemplate (empty: none)."""
    errors = []
    meta = obj.get("metadata") or {}
    if not is_dns_subdomain(meta.get("name")):
        errors.append(f"metadata.name {meta.get('name')!r} is not a DNS subdomain")
    devices = ((obj.get("spec") or {}).get("spec") or {}).get("devices") or {}
    requests = devices.get("requests") or []
    if not requests:
        errors.append("no device requests")
    names = [request.get("name") for request in requests]
    if len(set(names)) != len(names):
        errors.append(f"request names repeat: {names}")
    for index, request in enumerate(requests):
        errors += _request_errors(request, f"requests[{index}]")
    for index, config in enumerate(devices.get("config") or []):
        unknown = set(config.get("requests") or []) - set(names)
        if unknown:
            errors.append(f"config[{index}] names no request: {sorted(unknown)}")
    return errors


def validate_dra(obj: Mapping[str, Any]) -> None:
    """Strict schemas at 1.34/1.35/1.37 and the semantic checks."""
    validate_strictly(obj)
    errors = dra_semantic_errors(obj)
    assert not errors, f"{obj['kind']} {obj['metadata']['name']}: " + "; ".join(errors)
