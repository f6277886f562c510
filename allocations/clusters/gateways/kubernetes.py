"""The Kubernetes API gateway: server-side apply with the official client, pod and node observation, error mapping.

Objects go out as ``PATCH`` with ``application/apply-patch+yaml`` (JSON is YAML), field manager ``gpu-portal`` and
``force=true``: the portal owns what it renders, and a hand edit to those fields is taken back (and reported as drift).
Reads of pods, events and nodes use the typed ``CoreV1Api``. Errors leave as ``TransientGatewayError`` (unreachable,
5xx, 429) or ``PermanentGatewayError`` (other 4xx), carrying the API's own ``message``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from allocations.clusters.gateways.base import (
    FIELD_MANAGER,
    ApplyResult,
    GpuPod,
    KubeObject,
    NodeInventory,
    ObjectRef,
    PermanentGatewayError,
    QueuedWorkload,
    TransientGatewayError,
    WorkloadEvent,
    WorkloadStatus,
)
from allocations.clusters.gateways.kubernetes_readings import (
    condition_of,
    covers,
    gateway_error,
    holds_gpus,
    job_finished,
    mig_instances,
    needs_replacement,
    node_inventory,
    pod_status,
    queued_workload_of,
    summarize,
    timestamp_of,
)
from gpucore.manifests import REQUEST_LABEL, workload_name
from gpucore.manifests.jobset import JOBSET_API_VERSION

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
KUEUE_WORKLOADS = "kueue.x-k8s.io/v1beta2"
T = TypeVar("T")

# (apiVersion, kind) -> (plural, namespaced) for what the renderer emits and the gateway reads; any other kind is
# looked up once through API discovery (``_resource``), so a CRD works without a code change.
BUILTIN_RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "Service"): ("services", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("v1", "ResourceQuota"): ("resourcequotas", True),
    ("v1", "LimitRange"): ("limitranges", True),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("v1", "Pod"): ("pods", True),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): ("resourceclaimtemplates", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): ("networkpolicies", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True),
}


def api_client_for(
    *, kubeconfig_ref: str = "", host: str = "", token: str = "", verify_ssl: bool = True
) -> client.ApiClient:
    """An ApiClient from a kubeconfig reference (``env:VAR`` holding YAML, ``file:/path``, ``in-cluster``) or a host."""
    # With no reference, host (and an optional bearer token) is used as is, as tests and port-forwards do; a host
    # given with a reference overrides the kubeconfig's server (an API endpoint reached through a tunnel).
    configuration = client.Configuration()
    ref = kubeconfig_ref.strip()
    try:
        _load(configuration, ref, host)
    except config.ConfigException as error:
        raise PermanentGatewayError(f"The cluster's kubeconfig ({ref}) is unusable: {error}") from error
    if not ref:
        configuration.verify_ssl = verify_ssl
    _override(configuration, host=host.rstrip("/"), token=token)
    refresh = configuration.refresh_api_key_hook
    if refresh is not None and (host or token):
        # The kubeconfig loader's hook rewrites host and token before every request; keep the overrides on top.
        def refresh_then_override(target: client.Configuration) -> None:
            refresh(target)
            _override(target, host=host.rstrip("/"), token=token)

        configuration.refresh_api_key_hook = refresh_then_override
    return client.ApiClient(configuration)


def _load(configuration: client.Configuration, ref: str, host: str) -> None:
    """Fill a configuration from a kubeconfig reference; no reference needs a host."""
    if ref.startswith("env:"):
        variable = ref.removeprefix("env:")
        text = os.environ.get(variable)
        if not text:
            raise PermanentGatewayError(f"Environment variable {variable} (the cluster's kubeconfig) is not set.")
        try:
            kubeconfig = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise PermanentGatewayError(f"Environment variable {variable} does not hold kubeconfig YAML.") from error
        if not isinstance(kubeconfig, dict):
            raise PermanentGatewayError(f"Environment variable {variable} does not hold kubeconfig YAML.")
        # persist_config=False: a refreshed token has nowhere to be written back to.
        config.load_kube_config_from_dict(kubeconfig, client_configuration=configuration, persist_config=False)
    elif ref.startswith("file:"):
        path = ref.removeprefix("file:")
        if not os.path.isfile(path):
            raise PermanentGatewayError(f"Kubeconfig file {path} does not exist.")
        config.load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
    elif ref == "in-cluster":
        config.load_incluster_config(client_configuration=configuration)
    elif ref:
        raise PermanentGatewayError(f"Unknown kubeconfig reference {ref!r}: use env:VAR, file:/path or in-cluster.")
    elif not host:
        raise PermanentGatewayError("The cluster has neither a kubeconfig reference nor an API endpoint.")


def _override(configuration: client.Configuration, *, host: str, token: str) -> None:
    if host:
        configuration.host = host
    if token:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}


class KubernetesGateway:
    """A cluster reached through its API server: server-side apply, pod and node reads, mapped errors."""

    def __init__(self, api_client: client.ApiClient, *, timeout_seconds: float = 30.0) -> None:
        self._api = api_client
        self._core = client.CoreV1Api(api_client)
        self._timeout = timeout_seconds
        self._discovered: dict[tuple[str, str], tuple[str, bool]] = {}

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig_ref: str = "",
        host: str = "",
        token: str = "",
        verify_ssl: bool = True,
        timeout_seconds: float = 30.0,
    ) -> KubernetesGateway:
        """A gateway configured as ``api_client_for`` describes; each API call gives up after ``timeout_seconds``."""
        api = api_client_for(kubeconfig_ref=kubeconfig_ref, host=host, token=token, verify_ssl=verify_ssl)
        return cls(api, timeout_seconds=timeout_seconds)

    @property
    def location(self) -> str:
        """The API server's URL."""
        return str(self._api.configuration.host)

    def apply(self, objects: Sequence[KubeObject]) -> ApplyResult:
        """Server-side apply each object in order; an object whose live fields differ from the rendering drifted."""
        applied: list[ObjectRef] = []
        drifted: list[ObjectRef] = []
        for obj in objects:
            ref = ObjectRef.of(obj)
            path = self._path(ref)
            live = self._call("GET", path, what=ref, missing_ok=True)
            if live is not None and not covers(live, obj):
                drifted.append(ref)
            if needs_replacement(live, obj):
                self._call("DELETE", path, what=ref, missing_ok=True)
            query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
            self._call("PATCH", path, what=ref, query=query, body=dict(obj), content_type=APPLY_PATCH)
            applied.append(ref)
        return ApplyResult(applied=tuple(applied), drifted=tuple(drifted), location=self.location)

    def delete(self, objects: Sequence[KubeObject]) -> tuple[ObjectRef, ...]:
        """Delete the objects in reverse order (dependents first); one already gone is skipped, not an error."""
        deleted: list[ObjectRef] = []
        for obj in reversed(objects):
            ref = ObjectRef.of(obj)
            # Background propagation: a Job deleted through the API otherwise orphans its pods.
            query = [("propagationPolicy", "Background")]
            if self._call("DELETE", self._path(ref), what=ref, query=query, missing_ok=True) is not None:
                deleted.append(ref)
        return tuple(deleted)

    def workload_status(self, *, namespace: str, request_id: int) -> WorkloadStatus:
        """The request's pods (label ``gpu-portal/request=<id>``) and, for a Pending one, the scheduler's reason."""
        wanted = str(request_id)
        listing = self._read(
            lambda: self._core.list_namespaced_pod(
                namespace, label_selector=f"{REQUEST_LABEL}={wanted}", _request_timeout=self._timeout
            ),
            what=f"pods of request {request_id} in {namespace}",
        )
        # Filtered again here: a selector the server ignored must not show another request's pods.
        pods = [
            pod
            for pod in listing.items or []
            if (pod.metadata.labels or {}).get(REQUEST_LABEL) == wanted and not pod.metadata.deletion_timestamp
        ]
        if not pods:
            return self._status_without_pods(namespace, request_id)
        unschedulable = self._scheduling_messages(namespace, pods)
        statuses = tuple(sorted((pod_status(pod, unschedulable) for pod in pods), key=lambda p: p.name))
        summary = summarize(statuses)
        if summary.phase in ("Succeeded", "Failed"):
            # Only the Job (JobSet) says whether its pods' end is final (a failed pod may be retried): ask it.
            job = self._batch_workload(namespace, request_id)
            return (job_finished(job, statuses) if job else None) or summary
        return summary

    def workload_events(self, *, namespace: str, request_id: int, limit: int = 10) -> tuple[WorkloadEvent, ...]:
        """The newest ``limit`` events of the namespace about ``gpr-<id>`` or ``gpr-<id>-*`` (its ReplicaSets, pods)."""
        name = workload_name(request_id)
        listing = self._read(
            lambda: self._core.list_namespaced_event(namespace, _request_timeout=self._timeout),
            what=f"events in {namespace}",
        )
        found = []
        for event in listing.items or []:
            involved = event.involved_object
            if involved is None or not (involved.name == name or (involved.name or "").startswith(f"{name}-")):
                continue
            when = event.last_timestamp or event.event_time or event.metadata.creation_timestamp
            found.append(
                WorkloadEvent(
                    object_kind=involved.kind or "",
                    object_name=involved.name or "",
                    type=event.type or "",
                    reason=event.reason or "",
                    message=event.message or "",
                    count=event.count or 1,
                    last_seen=when,
                )
            )
        found.sort(key=lambda item: timestamp_of(item.last_seen), reverse=True)
        return tuple(found[:limit])

    def queued_workload(self, *, namespace: str, request_id: int) -> QueuedWorkload | None:
        """The namespace's Kueue Workload owned by ``gpr-<id>`` (its Job or JobSet) or one of its pods; None when
        Kueue is not installed (no Workload API) or it has made none yet."""
        path = f"/apis/{KUEUE_WORKLOADS}/namespaces/{quote(namespace, safe='')}/workloads"
        listing = self._call("GET", path, what=f"Kueue Workloads in {namespace}", missing_ok=True)
        return queued_workload_of((listing or {}).get("items") or [], workload_name(request_id))

    def list_gpu_nodes(self) -> tuple[NodeInventory, ...]:
        """Nodes advertising ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` or ``nvidia.com/mig-*``, or labelled as GPU
        nodes by GPU Feature Discovery (a MIG node under the wrong strategy advertises no GPU resource), by name."""
        listing = self._read(lambda: self._core.list_node(_request_timeout=self._timeout), what="nodes")
        inventory = [node_inventory(node) for node in listing.items or []]
        gpu_nodes = (node for node in inventory if node.allocatable or "nvidia.com/gpu.product" in node.labels)
        return tuple(sorted(gpu_nodes, key=lambda node: node.name))

    def list_resource_slices(self) -> tuple[dict[str, Any], ...]:
        """Every ResourceSlice (``resource.k8s.io/v1``): the devices DRA drivers publish (none before 1.34)."""
        listing = self._call("GET", "/apis/resource.k8s.io/v1/resourceslices", what="ResourceSlices", missing_ok=True)
        return tuple((listing or {}).get("items") or ())

    def read_node(self, name: str) -> dict[str, Any] | None:
        """The Node object as the API server has it, or None."""
        return self._call("GET", f"/api/v1/nodes/{quote(name, safe='')}", what=f"Node {name}", missing_ok=True)

    def patch_node(self, name: str, *, labels: dict[str, str] | None = None, unschedulable: bool | None = None) -> None:
        """A JSON merge patch of labels and ``spec.unschedulable``.

        Not server-side apply: an apply of only some fields would drop the others this field manager set before
        (the cordon when the label is applied), so node maintenance patches exactly what it changes.
        """
        body: dict[str, Any] = {}
        if labels:
            body["metadata"] = {"labels": labels}
        if unschedulable is not None:
            body["spec"] = {"unschedulable": unschedulable}
        path = f"/api/v1/nodes/{quote(name, safe='')}"
        self._call("PATCH", path, what=f"Node {name}", body=body, content_type=MERGE_PATCH)

    def gpu_pods_on_node(self, name: str) -> tuple[GpuPod, ...]:
        """Running or pending pods on the node that request GPU resources, by namespace and name."""
        listing = self._call(
            "GET", "/api/v1/pods", what=f"pods on {name}", query=[("fieldSelector", f"spec.nodeName={name}")]
        )
        pods = []
        for pod in (listing or {}).get("items") or []:
            meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
            if spec.get("nodeName") != name or meta.get("deletionTimestamp"):
                continue
            if status.get("phase") in ("Succeeded", "Failed") or not holds_gpus(spec):
                continue
            request_id = (meta.get("labels") or {}).get(REQUEST_LABEL, "")
            phase = status.get("phase", "")
            pods.append(GpuPod(meta.get("namespace", ""), meta["name"], phase, request_id, mig_instances(spec)))
        return tuple(sorted(pods, key=lambda pod: (pod.namespace, pod.name)))

    def evict_pod(self, *, namespace: str, name: str) -> None:
        """POST an Eviction (policy/v1): the API server refuses it (429) while a PodDisruptionBudget forbids it."""
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/eviction"
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        self._call("POST", path, what=f"Pod {namespace}/{name}", body=body, missing_ok=True)

    @staticmethod
    def _job_path(namespace: str, request_id: int) -> str:
        return f"/apis/batch/v1/namespaces/{quote(namespace, safe='')}/jobs/{workload_name(request_id)}"

    def _batch_workload(self, namespace: str, request_id: int) -> dict[str, Any] | None:
        """The request's Job, else its JobSet (multi-pod training and HPC), else None."""
        name = workload_name(request_id)
        job = self._call("GET", self._job_path(namespace, request_id), what=name, missing_ok=True)
        if job is None:
            path = f"/apis/{JOBSET_API_VERSION}/namespaces/{quote(namespace, safe='')}/jobsets/{name}"
            job = self._call("GET", path, what=name, missing_ok=True)
        return job

    def _status_without_pods(self, namespace: str, request_id: int) -> WorkloadStatus:
        name = workload_name(request_id)
        job = self._batch_workload(namespace, request_id)
        if job is not None:
            return job_finished(job) or WorkloadStatus(
                phase="Pending", pending_reason=f"The {job.get('kind') or 'Job'} has created no pods yet."
            )
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        deployment = self._call("GET", path, what=name, missing_ok=True)
        if deployment is None:
            return WorkloadStatus(phase="NotFound", message=f"No workload {name} in namespace {namespace}.")
        reason = "The Deployment has created no pods yet."
        for condition in (deployment.get("status") or {}).get("conditions") or []:
            # ReplicaFailure carries admission refusals such as "exceeded quota".
            if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
                reason = condition.get("message") or reason
        return WorkloadStatus(phase="Pending", pending_reason=reason)

    def _scheduling_messages(self, namespace: str, pods: Sequence[Any]) -> dict[str, str]:
        """The newest ``FailedScheduling`` event message per Pending pod that has no PodScheduled message."""
        waiting = {
            pod.metadata.name
            for pod in pods
            if (pod.status and pod.status.phase) == "Pending" and not condition_of(pod, "PodScheduled").get("message")
        }
        if not waiting:
            return {}
        events = self._read(
            lambda: self._core.list_namespaced_event(
                namespace, field_selector="reason=FailedScheduling", _request_timeout=self._timeout
            ),
            what=f"events in {namespace}",
        )
        newest: dict[str, tuple[float, str]] = {}
        for event in events.items or []:
            involved = event.involved_object
            if event.reason != "FailedScheduling" or involved is None or involved.name not in waiting:
                continue
            if involved.kind not in (None, "Pod"):
                continue
            when = timestamp_of(event.last_timestamp or event.event_time or event.metadata.creation_timestamp)
            if involved.name not in newest or when >= newest[involved.name][0]:
                newest[involved.name] = (when, event.message or "")
        return {name: message for name, (_, message) in newest.items()}

    def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        key = (api_version, kind)
        if key in BUILTIN_RESOURCES:
            return BUILTIN_RESOURCES[key]
        if key not in self._discovered:
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listing = self._call("GET", prefix, what=f"API {api_version}", missing_ok=True) or {}
            for resource in listing.get("resources") or []:
                if resource.get("kind") == kind and "/" not in resource.get("name", ""):
                    self._discovered[key] = (resource["name"], bool(resource.get("namespaced")))
                    break
            else:
                raise PermanentGatewayError(f"The cluster does not serve {kind} in {api_version}.", status=404)
        return self._discovered[key]

    def _path(self, ref: ObjectRef) -> str:
        plural, namespaced = self._resource(ref.api_version, ref.kind)
        prefix = "/api/v1" if ref.api_version == "v1" else f"/apis/{ref.api_version}"
        name = quote(ref.name, safe="")
        if not namespaced:
            return f"{prefix}/{plural}/{name}"
        if not ref.namespace:
            raise PermanentGatewayError(f"{ref} is namespaced but names no namespace.")
        return f"{prefix}/namespaces/{quote(ref.namespace, safe='')}/{plural}/{name}"

    def _call(
        self,
        method: str,
        path: str,
        *,
        what: object,
        query: Sequence[tuple[str, str]] = (),
        body: KubeObject | None = None,
        content_type: str = "application/json",
        missing_ok: bool = False,
    ) -> dict[str, Any] | None:
        """One raw API request (``param_serialize`` then ``call_api``): the JSON answer, or None for 404 if allowed."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            method_, url, headers_, body_, post = self._api.param_serialize(
                method, path, query_params=list(query), header_params=headers, body=body, auth_settings=["BearerToken"]
            )
            response = self._api.call_api(method_, url, headers_, body_, post, _request_timeout=self._timeout)
            data = response.read()
        except ApiException as error:
            raise gateway_error(error.status or 0, error.body or error.reason, what) from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self._unreachable(what, error) from error
        if response.status == 404 and missing_ok:
            return None
        if not 200 <= response.status < 300:
            raise gateway_error(response.status, data, what)
        try:
            return json.loads(data) if data else {}
        except ValueError as error:
            raise self._not_kubernetes(what, error) from error

    def _unreachable(self, what: object, error: Exception) -> TransientGatewayError:
        return TransientGatewayError(f"{what}: the API server at {self.location} is unreachable ({error}).")

    def _not_kubernetes(self, what: object, error: Exception) -> PermanentGatewayError:
        return PermanentGatewayError(f"{what}: {self.location} did not answer as a Kubernetes API server ({error}).")

    def _read(self, call: Callable[[], T], *, what: str) -> T:
        """A typed CoreV1Api call, its errors mapped like raw ones."""
        try:
            return call()
        except ApiException as error:
            raise gateway_error(error.status or 0, error.body or error.reason, what) from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise self._unreachable(what, error) from error
        except (ValueError, TypeError, AttributeError) as error:
            # The client could not read the answer as the object it asked for: no API server answers there.
            raise self._not_kubernetes(what, error) from error
