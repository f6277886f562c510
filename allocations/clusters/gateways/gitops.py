"""The GitOps gateway: one YAML file per object in a stable tree that Argo CD or Flux applies, optionally committed.

Layout under ``<root>/<cluster path>/``: ``cluster/<plural>/<name>.yaml`` for cluster-scoped objects (PriorityClass),
``namespaces/<ns>/namespace.yaml`` for a Namespace and ``namespaces/<ns>/<kind>-<name>.yaml`` for what lives in it.
Writes are atomic (temporary file, then rename), so a sync never reads half a file; an unchanged object is not
rewritten, so applying twice changes no byte and makes no commit.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from allocations.clusters.gateways.base import (
    ApplyResult,
    KubeObject,
    NodeInventory,
    ObjectRef,
    PermanentGatewayError,
    QueuedWorkload,
    TransientGatewayError,
    WorkloadEvent,
    WorkloadStatus,
)
from gpucore.manifests import to_yaml

GIT_AUTHOR_NAME = "GPU Portal"
GIT_AUTHOR_EMAIL = "gpu-portal@localhost"
LOCK_FILE = ".gpu-portal.lock"


def plural(kind: str) -> str:
    """The lower-case plural of a kind, as the API names its resource (PriorityClass -> priorityclasses)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "ch", "sh")):
        return f"{lower}es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return f"{lower[:-1]}ies"
    return f"{lower}s"


def _segment(value: str, what: str) -> str:
    # Object names are DNS names, but a file path built from them must never climb out of the tree.
    if not value or "/" in value or "\\" in value or value.startswith("."):
        raise PermanentGatewayError(f"{what} {value!r} cannot name a file in the GitOps tree.")
    return value


def relative_path(obj: KubeObject) -> Path:
    """Where an object's file lives, relative to the cluster's directory."""
    ref = ObjectRef.of(obj)
    name = _segment(ref.name, f"{ref.kind} name")
    if ref.kind == "Namespace":
        return Path("namespaces", name, "namespace.yaml")
    if ref.namespace:
        namespace = _segment(ref.namespace, "Namespace")
        return Path("namespaces", namespace, f"{ref.kind.lower()}-{name}.yaml")
    return Path("cluster", plural(ref.kind), f"{name}.yaml")


class GitOpsGateway:
    """A cluster reached through a GitOps tree: files written here, applied by Argo CD or Flux, never observed."""

    def __init__(self, root: Path, cluster_path: str, *, commit: bool = False) -> None:
        relative = Path(cluster_path or ".")
        if relative.is_absolute() or ".." in relative.parts:
            raise PermanentGatewayError(f"GitOps path {cluster_path!r} must be relative to the GitOps root.")
        self.root = Path(root).resolve()
        self.directory = (self.root / relative).resolve()
        self.commit = commit

    def apply(self, objects: Sequence[KubeObject]) -> ApplyResult:
        """Write each object's file; one whose file differs from the rendering drifted (and is rewritten)."""
        applied: list[ObjectRef] = []
        drifted: list[ObjectRef] = []
        changed: list[ObjectRef] = []
        with self._locked():
            for obj in objects:
                ref = ObjectRef.of(obj)
                path = self.directory / relative_path(obj)
                content = to_yaml([obj])
                current = path.read_text(encoding="utf-8") if path.is_file() else None
                if current != content:
                    self._write(path, content)
                    changed.append(ref)
                    if current is not None:
                        drifted.append(ref)
                applied.append(ref)
            if self.commit and changed:
                self._commit("Apply", changed)
        return ApplyResult(applied=tuple(applied), drifted=tuple(drifted), location=str(self.directory))

    def delete(self, objects: Sequence[KubeObject]) -> tuple[ObjectRef, ...]:
        """Remove the objects' files in reverse order, and directories left empty; a missing file is skipped."""
        deleted: list[ObjectRef] = []
        with self._locked():
            for obj in reversed(objects):
                path = self.directory / relative_path(obj)
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                except OSError as error:
                    raise _file_error(path, error) from error
                deleted.append(ObjectRef.of(obj))
                self._prune(path.parent)
            if self.commit and deleted:
                self._commit("Delete", deleted)
        return tuple(deleted)

    def workload_status(self, *, namespace: str, request_id: int) -> WorkloadStatus:
        """Always ``Unobservable``: the tree says what should run, not what runs."""
        # Relative to the GitOps root: every team member reads this, and the server's paths are not theirs to see.
        where = self.directory.relative_to(self.root)
        return WorkloadStatus(
            phase="Unobservable", message=f"Written to the GitOps tree at {where}/; Argo CD or Flux applies it."
        )

    def list_gpu_nodes(self) -> tuple[NodeInventory, ...]:
        """No nodes: a GitOps tree cannot see the cluster."""
        return ()

    def queued_workload(self, *, namespace: str, request_id: int) -> QueuedWorkload | None:
        """A tree cannot see Kueue's Workloads."""
        return None

    def workload_events(self, *, namespace: str, request_id: int, limit: int = 10) -> tuple[WorkloadEvent, ...]:
        """No events: a GitOps tree cannot see the cluster."""
        return ()

    def _write(self, path: Path, content: str) -> None:
        """Write a file atomically: a temporary file in the same directory, flushed, then renamed over the old one."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    stream.write(content)
                    stream.flush()
                    os.fsync(stream.fileno())
                os.chmod(temporary, 0o644)  # mkstemp makes 0600; reviewers and the sync controller read these
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
                raise
        except OSError as error:
            raise _file_error(path, error) from error

    def _prune(self, directory: Path) -> None:
        """Remove directories emptied by a delete, up to (not including) the cluster's directory."""
        while directory != self.directory and self.directory in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return  # not empty (or already gone): stop climbing
            directory = directory.parent

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise writers (Celery workers on this host) on the tree, so files and the git index stay consistent."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = open(self.root / LOCK_FILE, "a")  # noqa: SIM115 (held open for the flock's lifetime)
        except OSError as error:
            raise _file_error(self.root, error) from error
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _commit(self, verb: str, refs: Sequence[ObjectRef]) -> None:
        """Commit the cluster directory's changes, naming the objects; the repository is the root, made if missing."""
        if not (self.root / ".git").exists():
            # Only a repository at the root counts: a parent repository (the portal's own checkout) must not be used.
            self._git("init", "--quiet")
            self._git("config", "core.excludesFile", os.devnull)
            (self.root / ".gitignore").write_text(f"{LOCK_FILE}\n", encoding="utf-8")
            self._git("add", ".gitignore")
        pathspec = str(self.directory.relative_to(self.root))
        self._git("add", "--all", "--", pathspec)
        staged = subprocess.run(  # noqa: S603 (fixed argv, no shell)
            ["git", "diff", "--cached", "--quiet", "--", pathspec],  # noqa: S607 (git from PATH, as operators run it)
            cwd=self.root,
            check=False,
            capture_output=True,
        )
        if staged.returncode == 0:
            return  # nothing changed on disk after all
        where = pathspec if pathspec != "." else self.root.name
        summary = f"{verb} {len(refs)} object{'s' if len(refs) != 1 else ''} in {where}"
        body = "\n".join(f"- {ref}" for ref in refs)
        self._git("commit", "--quiet", "--no-verify", "-m", summary, "-m", body)

    def _git(self, *args: str) -> None:
        identity = {
            "GIT_AUTHOR_NAME": GIT_AUTHOR_NAME,
            "GIT_AUTHOR_EMAIL": GIT_AUTHOR_EMAIL,
            "GIT_COMMITTER_NAME": GIT_AUTHOR_NAME,
            "GIT_COMMITTER_EMAIL": GIT_AUTHOR_EMAIL,
        }
        try:
            subprocess.run(  # noqa: S603 (fixed argv, no shell)
                ["git", "-c", "commit.gpgsign=false", *args],  # noqa: S607 (git from PATH)
                cwd=self.root,
                env={**os.environ, **identity},
                check=True,
                capture_output=True,
                text=True,
            )
        except FileNotFoundError as error:
            raise PermanentGatewayError(
                "git is not installed; turn off commits for this cluster or install it."
            ) from error
        except subprocess.CalledProcessError as error:
            message = f"git {args[0]} failed in {self.root}: {(error.stderr or error.stdout).strip()}"
            # Another process holding the index lock goes away; anything else needs a person.
            if "index.lock" in (error.stderr or ""):
                raise TransientGatewayError(message) from error
            raise PermanentGatewayError(message) from error


def _file_error(path: Path, error: OSError) -> PermanentGatewayError | TransientGatewayError:
    message = f"Cannot write the GitOps tree at {path}: {error.strerror or error}."
    if isinstance(error, PermissionError):
        return PermanentGatewayError(message)
    return TransientGatewayError(message)  # a full disk or a busy file system may recover
