"""The README's notebook example, run as written by a plain Python process against a live portal with a token."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from allocations.models import GpuRequest, RequestStatus, SlaTier, Team
from tests.factories import api_key_for

README = Path(__file__).resolve().parents[2] / "README.md"


def notebook_example() -> str:
    section = README.read_text().split("## The REST API, from a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_readme_notebook_example_runs_end_to_end(live_server) -> None:
    with override_settings(DEBUG=True):
        call_command("seed_demo", verbosity=0)
    # No approver is watching in a test: the team opts in to auto-approval for the example's tier.
    Team.objects.get(slug="vision").auto_approve_tiers.add(SlaTier.objects.get(slug="tier2_batch"))
    token = api_key_for(user=Team.objects.get(slug="vision").members.get(username="alice"))

    code = notebook_example()
    assert 'PORTAL = "http://127.0.0.1:8000/api/v1"' in code and "<your token>" in code
    assert "while True" not in code and "deadline" in code  # the polling loop gives up: a notebook never hangs
    code = code.replace("http://127.0.0.1:8000", live_server.url).replace("<your token>", token.key)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)

    assert result.returncode == 0, result.stdout + result.stderr
    request = GpuRequest.objects.get(name="inspection-api", team__slug="vision")
    assert "mig nvidia.com/mig-2g.10gb x 1 on A100-40GB" in result.stdout
    assert "active" in result.stdout
    assert f"name: gpr-{request.pk}" in result.stdout  # the manifests, as YAML
    assert request.status == RequestStatus.RELEASED
