"""gpucore is importable without Django, DRF, Celery or the Kubernetes client, and needs no settings."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import gpucore

REPO_ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("django", "rest_framework", "celery", "kubernetes")


def test_every_gpucore_module_imports_in_a_bare_interpreter() -> None:
    modules = sorted(info.name for info in pkgutil.walk_packages(gpucore.__path__, prefix="gpucore."))
    assert "gpucore.decision.framework" in modules and "gpucore.manifests.workload" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))"
    )
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
