"""The README's first two commands on SQLite, as a laptop runs them (``make run``: migrate, seed the demo organisation,
serve): every page of the demo answers for each of its users, the requests API lists the demo's requests, and a
request goes from the notebook's recommendation through approval and provisioning (tasks in-process) to release.

The rest of the suite runs on PostgreSQL in CI, so a SQLite-only fault (a JSON key read that SQLite answers otherwise)
would break ``make run`` unseen; this runs in a fresh interpreter with its own SQLite file."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, django
django.setup()
from django.core.management import call_command
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from allocations.models import GpuRequest

call_command("migrate", verbosity=0)
call_command("seed_demo", verbosity=0)
from billing.costs.services import previous_month
month = f"{previous_month():%Y-%m}"
every_request = [f"/requests/{pk}/" for pk in GpuRequest.objects.order_by("pk").values_list("pk", flat=True)]
pages = {
    "alice": ["/", "/requests/", "/requests/new/", "/teams/vision/", "/billing/dashboards/",
              "/billing/reports/", f"/billing/reports/vision/{month}/", "/account/tokens/", "/search/?q=res",
              "/api/v1/requests/", "/api/v1/requests/?after=0&brief=true"],
    "carol": ["/", "/approvals/", "/approvals/?team=vision", "/requests/", *every_request, "/clusters/",
              "/clusters/demo/", "/clusters/demo/pools/a100-mig/mig/", "/billing/utilization/",
              "/billing/dashboards/", "/billing/reports/", "/teams/", "/teams/nlp/", "/audit/", "/search/?q=demo",
              "/api/v1/requests/?brief=true"],
    "finance": ["/", "/billing/dashboards/", "/billing/reports/", f"/billing/reports/nlp/{month}/"],
}
answers = {}
for username, paths in pages.items():
    client = Client()
    client.force_login(User.objects.get(username=username))
    for path in paths:
        answers[f"{username} {path}"] = client.get(path).status_code
listed = Client()
listed.force_login(User.objects.get(username="alice"))
body = listed.get("/api/v1/requests/").json()
specs = {row["id"]: row["spec"] for row in body["results"]}
stored = dict(GpuRequest.objects.filter(pk__in=specs).values_list("pk", "spec"))

# The README's notebook steps, then an approver's: recommend, submit, approve (tasks run in-process), release.
profile = {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "sla_tier": "tier2_batch"}
lifecycle = {"recommend": listed.post("/api/v1/recommendations/", profile, content_type="application/json")}
submitted = listed.post("/api/v1/requests/", {**profile, "team": "vision", "name": "sqlite-check",
                        "duration_hours": 2, "command": ["tritonserver", "--model-repository=/models"]},
                        content_type="application/json")
lifecycle["submit"] = submitted
approver = Client()
approver.force_login(User.objects.get(username="carol"))
new_id = submitted.json().get("id")
lifecycle["approve"] = approver.post(f"/api/v1/requests/{new_id}/approve/", {"comment": "ok"},
                                     content_type="application/json")
lifecycle["page"] = listed.get(f"/requests/{new_id}/")
status_after_approval = GpuRequest.objects.get(pk=new_id).status
lifecycle["release"] = listed.post(f"/api/v1/requests/{new_id}/release/", {}, content_type="application/json")
print(json.dumps({"vendor": connection.vendor, "answers": answers, "count": body["count"],
                  "specs_equal": specs == stored,
                  "lifecycle": {step: response.status_code for step, response in lifecycle.items()},
                  "status_after_approval": status_after_approval,
                  "final_status": GpuRequest.objects.get(pk=new_id).status}))
"""


def test_make_runs_first_steps_on_sqlite_serve_every_page(tmp_path: Path) -> None:
    unset = {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {key: value for key, value in os.environ.items() if key not in unset}
    env.update(DJANGO_SETTINGS_MODULE="portal.settings.base", DEBUG="1", PORTAL_VAR_DIR=str(tmp_path))
    env["ALLOWED_HOSTS"] = "testserver"  # the test client's host
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["vendor"] == "sqlite"
    assert {page: code for page, code in report["answers"].items() if code != 200} == {}
    assert report["count"] > 0 and report["specs_equal"]
    assert report["lifecycle"] == {"recommend": 200, "submit": 201, "approve": 202, "page": 200, "release": 200}
    assert report["status_after_approval"] == "active"  # provisioned in-process, to the demo cluster's GitOps tree
    assert report["final_status"] == "released"
