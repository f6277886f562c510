"""GitOpsGateway: the tree a rendered request becomes, idempotence, drift, delete, and git commits (real git)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from allocations.clusters.gateways import gateway_for
from allocations.clusters.gateways.base import ObjectRef, PermanentGatewayError
from allocations.clusters.gateways.gitops import GitOpsGateway, plural, relative_path
from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import is_request_owned, render_request_objects, to_yaml
from tests.gpucore.manifests.cases import context, spec_for

EXPECTED_FILES = {
    "cluster/priorityclasses/gpu-portal-tier2-batch.yaml",
    "namespaces/team-vision/namespace.yaml",
    "namespaces/team-vision/networkpolicy-gpu-portal-default.yaml",
    "namespaces/team-vision/resourcequota-gpu-portal-quota.yaml",
    "namespaces/team-vision/limitrange-gpu-portal-limits.yaml",
    "namespaces/team-vision/job-gpr-42.yaml",
}
JOB_FILE = "namespaces/team-vision/job-gpr-42.yaml"


def objects() -> list[dict[str, Any]]:
    """A one-pod training request's objects: PriorityClass, the team's namespace objects, and its Job."""
    spec = spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", replicas=1)
    return render_request_objects(context("A100-40GB", "dedicated", "training", spec=spec))


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under a directory, by relative path."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(directory).parts
    }


def git(root: Path, *args: str) -> str:
    """Run git in the tree's repository and return its output."""
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def gateway(tmp_path: Path) -> GitOpsGateway:
    return GitOpsGateway(tmp_path / "gitops", "lab-a")


def test_apply_writes_one_file_per_object_in_a_stable_tree(gateway: GitOpsGateway) -> None:
    rendered = objects()

    result = gateway.apply(rendered)

    files = tree(gateway.directory)
    assert set(files) == EXPECTED_FILES
    for obj in rendered:
        content = files[str(relative_path(obj))]
        assert content.decode() == to_yaml([obj])
        assert yaml.safe_load(content) == obj
    assert result.applied == tuple(ObjectRef.of(obj) for obj in rendered)
    assert result.drifted == ()
    assert result.location == str(gateway.directory)
    assert gateway.directory == (gateway.root / "lab-a")
    assert not list(gateway.directory.rglob("*.tmp"))


def test_applying_twice_changes_no_byte_and_reports_no_drift(gateway: GitOpsGateway) -> None:
    gateway.apply(objects())
    before = tree(gateway.directory)
    stamps = {path: path.stat().st_mtime_ns for path in gateway.directory.rglob("*.yaml")}

    again = gateway.apply(objects())

    assert again.drifted == ()
    assert tree(gateway.directory) == before
    assert {path: path.stat().st_mtime_ns for path in gateway.directory.rglob("*.yaml")} == stamps


def test_a_hand_edited_file_is_drift_and_is_rewritten(gateway: GitOpsGateway) -> None:
    rendered = objects()
    gateway.apply(rendered)
    job_file = gateway.directory / JOB_FILE
    job_file.write_text(job_file.read_text().replace("backoffLimit: ", "backoffLimit: 9"))

    result = gateway.apply(rendered)

    assert result.drifted == (ObjectRef.of(rendered[-1]),)
    assert job_file.read_text() == to_yaml([rendered[-1]])
    assert gateway.apply(rendered).drifted == ()


def test_a_missing_file_is_written_again_without_drift(gateway: GitOpsGateway) -> None:
    rendered = objects()
    gateway.apply(rendered)
    (gateway.directory / JOB_FILE).unlink()

    result = gateway.apply(rendered)

    assert result.drifted == ()
    assert set(tree(gateway.directory)) == EXPECTED_FILES


def test_delete_removes_only_the_given_files_and_empty_directories(gateway: GitOpsGateway) -> None:
    rendered = objects()
    gateway.apply(rendered)
    owned = [obj for obj in rendered if is_request_owned(obj)]

    assert gateway.delete(owned) == (ObjectRef.of(rendered[-1]),)
    assert set(tree(gateway.directory)) == EXPECTED_FILES - {JOB_FILE}
    assert gateway.delete(owned) == ()

    assert len(gateway.delete(rendered)) == len(rendered) - 1
    assert tree(gateway.directory) == {}
    assert not (gateway.directory / "namespaces").exists()
    assert not (gateway.directory / "cluster").exists()
    assert gateway.directory.is_dir()


def test_observation_is_not_possible(gateway: GitOpsGateway) -> None:
    status = gateway.workload_status(namespace="team-vision", request_id=42)

    assert status.phase == "Unobservable"
    assert "at lab-a/" in status.message
    assert str(gateway.root) not in status.message  # users see it: no server paths
    assert "Argo CD or Flux" in status.message
    assert gateway.list_gpu_nodes() == ()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_commit_mode_commits_each_change_once(tmp_path: Path) -> None:
    root = tmp_path / "gitops"
    gateway = GitOpsGateway(root, "lab-a", commit=True)
    rendered = objects()

    gateway.apply(rendered)

    assert (root / ".git").is_dir()
    assert git(root, "log", "--format=%an <%ae>|%cn").splitlines() == ["GPU Portal <gpu-portal@localhost>|GPU Portal"]
    message = git(root, "log", "-1", "--format=%B")
    assert message.startswith("Apply 6 objects in lab-a")
    assert "- Job team-vision/gpr-42" in message
    assert "- PriorityClass gpu-portal-tier2-batch" in message
    assert set(git(root, "ls-files", "lab-a").split()) == {f"lab-a/{name}" for name in EXPECTED_FILES}
    assert git(root, "status", "--porcelain") == ""

    gateway.apply(rendered)
    assert len(git(root, "log", "--format=%H").split()) == 1  # nothing changed: no commit

    # Someone commits a hand edit to the repository; the next apply takes it back in a commit of its own.
    job_file = gateway.directory / JOB_FILE
    job_file.write_text(job_file.read_text() + "# edited by hand\n")
    git(root, "-c", "user.name=Someone", "-c", "user.email=someone@example.com", "commit", "-qam", "Hand edit")
    assert gateway.apply(rendered).drifted == (ObjectRef.of(rendered[-1]),)
    assert git(root, "log", "-1", "--format=%s|%an").strip() == "Apply 1 object in lab-a|GPU Portal"

    gateway.delete([obj for obj in rendered if is_request_owned(obj)])
    assert git(root, "log", "-1", "--format=%B").startswith("Delete 1 object in lab-a\n\n- Job team-vision/gpr-42")
    assert f"lab-a/{JOB_FILE}" not in git(root, "ls-files")
    assert len(git(root, "log", "--format=%H").split()) == 4
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_commit_mode_keeps_to_its_own_repository_and_directory(tmp_path: Path) -> None:
    root = tmp_path / "gitops"
    GitOpsGateway(root, "lab-a", commit=True).apply(objects())
    other = root / "lab-b" / "notes.txt"
    other.parent.mkdir()
    other.write_text("not the portal's")

    GitOpsGateway(root, "lab-a", commit=True).apply(objects())

    assert git(root, "status", "--porcelain").strip() == "?? lab-b/"


@pytest.mark.parametrize("cluster_path", ["../elsewhere", "/etc", "lab/../../x"])
def test_a_cluster_path_must_stay_inside_the_root(tmp_path: Path, cluster_path: str) -> None:
    with pytest.raises(PermanentGatewayError, match="relative to the GitOps root"):
        GitOpsGateway(tmp_path, cluster_path)


def test_an_object_name_cannot_escape_the_tree(gateway: GitOpsGateway) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "../../x", "namespace": "team-vision"}}

    with pytest.raises(PermanentGatewayError, match="cannot name a file"):
        gateway.apply([bad])


def test_plural() -> None:
    assert [plural(kind) for kind in ("PriorityClass", "ConfigMap", "Policy", "Gateway")] == [
        "priorityclasses",
        "configmaps",
        "policies",
        "gateways",
    ]


def test_gateway_for_builds_a_gitops_gateway(tmp_path: Path) -> None:
    gateway = gateway_for(backend="gitops", gitops_root=tmp_path, gitops_path="lab-a", gitops_commit=True)

    assert isinstance(gateway, GitOpsGateway)
    assert (gateway.directory, gateway.commit) == ((tmp_path / "lab-a").resolve(), True)
    with pytest.raises(PermanentGatewayError, match="root directory"):
        gateway_for(backend="gitops", gitops_path="lab-a")
