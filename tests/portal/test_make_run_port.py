"""`make run` serves on the port and interface the README documents: PORT= and HOST= reach
runserver, 127.0.0.1:8000 without them. Read from make's dry run, so nothing is installed or served."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _dry_run(*variables: str) -> str:
    done = subprocess.run(
        ["make", "-n", "run", *variables], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_port_and_host_reach_runserver() -> None:
    assert "manage.py runserver 0.0.0.0:8123" in _dry_run("PORT=8123", "HOST=0.0.0.0")
    assert "manage.py runserver 127.0.0.1:8000" in _dry_run()


def test_the_readme_documents_them() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`make run PORT=8080`" in readme and "`HOST=0.0.0.0`" in readme
