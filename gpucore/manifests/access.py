"""How people reach a running request: its Services' in-cluster DNS names and ports, and the kubectl commands to use.

Pure: read from the objects the portal rendered for the request (the same list it applied), so what the page says
is what is on the cluster, and nothing is guessed from the workload type alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucore.manifests.jobset import child_job_name
from gpucore.manifests.naming import REQUEST_LABEL, workload_name

CLUSTER_DOMAIN = "cluster.local"
# A development pod has no Service; a notebook or an IDE server in it is reached through a port-forward of this port.
DEVELOPMENT_PORT = 8888
LOCAL_INFERENCE_PORT = 8080


@dataclass(frozen=True)
class ServicePort:
    """One port of a Service: its name and number."""

    name: str
    port: int


@dataclass(frozen=True)
class ServiceEndpoint:
    """A Service of the request, by its in-cluster DNS name (``<name>.<namespace>.svc.cluster.local``)."""

    name: str
    namespace: str
    dns_name: str
    ports: tuple[ServicePort, ...]
    headless: bool

    @property
    def urls(self) -> tuple[str, ...]:
        """``http://<dns name>:<port>`` per port: what another pod in the cluster calls."""
        return tuple(f"http://{self.dns_name}:{port.port}" for port in self.ports)


@dataclass(frozen=True)
class AccessCommand:
    """A kubectl command and what it is for."""

    purpose: str
    command: str


@dataclass(frozen=True)
class WorkloadAccess:
    """Everything the request page says about reaching the workload; empty before the objects are rendered."""

    kind: str  # "Deployment", "Job", "JobSet" or "" (nothing rendered)
    name: str
    namespace: str
    container: str
    services: tuple[ServiceEndpoint, ...]
    commands: tuple[AccessCommand, ...]


WORKLOAD_KINDS = ("Deployment", "Job", "JobSet")


def pod_template_of(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod template of a Deployment, a Job or a JobSet's first replicated job (empty when absent)."""
    spec = workload.get("spec") or {}
    if workload.get("kind") == "JobSet":
        replicated = spec.get("replicatedJobs") or [{}]
        spec = ((replicated[0].get("template") or {}).get("spec")) or {}
    return spec.get("template") or {}


def workload_access(
    objects: Sequence[Mapping[str, Any]], *, request_id: int, workload_type: str, cluster_domain: str = CLUSTER_DOMAIN
) -> WorkloadAccess:
    """The Services and kubectl commands of one request's rendered objects (``gpr-<id>``)."""
    name = workload_name(request_id)
    workload = next(
        (
            obj
            for obj in objects
            if obj.get("kind") in WORKLOAD_KINDS and (obj.get("metadata") or {}).get("name") == name
        ),
        None,
    )
    if workload is None:
        return WorkloadAccess("", name, "", "", (), ())
    namespace = str(workload["metadata"].get("namespace") or "default")
    kind = str(workload["kind"])
    containers = (pod_template_of(workload).get("spec") or {}).get("containers") or []
    container = str(containers[0].get("name", "")) if containers else ""
    services = tuple(
        _endpoint(obj, cluster_domain)
        for obj in objects
        if obj.get("kind") == "Service" and (obj.get("metadata") or {}).get("name") == name
    )
    return WorkloadAccess(
        kind=kind,
        name=name,
        namespace=namespace,
        container=container,
        services=services,
        commands=_commands(
            kind=kind,
            name=name,
            namespace=namespace,
            container=container,
            request_id=request_id,
            workload_type=workload_type,
            services=services,
        ),
    )


def _endpoint(service: Mapping[str, Any], cluster_domain: str) -> ServiceEndpoint:
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
    ports = tuple(
        ServicePort(name=str(item.get("name") or ""), port=int(item["port"]))
        for item in spec.get("ports") or []
        if "port" in item
    )
    return ServiceEndpoint(
        name=name,
        namespace=namespace,
        dns_name=f"{name}.{namespace}.svc.{cluster_domain}",
        ports=ports,
        headless=spec.get("clusterIP") == "None",
    )


def _commands(
    *,
    kind: str,
    name: str,
    namespace: str,
    container: str,
    request_id: int,
    workload_type: str,
    services: tuple[ServiceEndpoint, ...],
) -> tuple[AccessCommand, ...]:
    ns = f"kubectl -n {namespace}"
    on_container = f" -c {container}" if container else ""
    selector = f"{REQUEST_LABEL}={request_id}"
    commands = [AccessCommand("List its pods", f"{ns} get pods -l {selector} -o wide")]
    if kind == "Deployment":
        commands.append(AccessCommand("Open a shell in the pod", f"{ns} exec -it deploy/{name}{on_container} -- bash"))
        served = [service for service in services if not service.headless and service.ports]
        if served:
            port = served[0].ports[0].port
            commands.append(
                AccessCommand(
                    f"Call it from your machine (then http://localhost:{LOCAL_INFERENCE_PORT})",
                    f"{ns} port-forward svc/{served[0].name} {LOCAL_INFERENCE_PORT}:{port}",
                )
            )
        if workload_type == "development":
            commands.append(
                AccessCommand(
                    f"Reach a notebook or server listening on port {DEVELOPMENT_PORT} in the pod",
                    f"{ns} port-forward deploy/{name} {DEVELOPMENT_PORT}:{DEVELOPMENT_PORT}",
                )
            )
        commands.append(AccessCommand("Follow its logs", f"{ns} logs deploy/{name}{on_container} -f"))
    else:
        commands.append(AccessCommand("Follow the logs of every pod", f"{ns} logs -l {selector} --prefix -f"))
        commands.append(
            # A JobSet's pods belong to its child Job <name>-worker-0.
            AccessCommand(
                "Open a shell in a running pod",
                f"{ns} exec -it job/{child_job_name(name) if kind == 'JobSet' else name}{on_container} -- bash",
            )
        )
    commands.append(AccessCommand("Why a pod waits or restarts (its events)", f"{ns} describe pods -l {selector}"))
    return tuple(commands)
