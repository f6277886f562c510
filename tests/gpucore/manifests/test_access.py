"""How a request is reached, read from the objects rendered for it: Service DNS names and ports, kubectl commands."""

from __future__ import annotations

from gpucore.manifests import render_request_objects
from gpucore.manifests.access import workload_access
from tests.gpucore.manifests.cases import context

NAMESPACE = "team-vision"


def access_for(workload_type: str, **overrides):
    objects = render_request_objects(context("A100-40GB", "dedicated", workload_type, **overrides))
    return workload_access(objects, request_id=42, workload_type=workload_type)


def commands(access) -> dict[str, str]:
    return {item.purpose: item.command for item in access.commands}


def test_inference_names_the_services_dns_name_and_port() -> None:
    access = access_for("realtime_inference", port=8000)

    assert access.kind == "Deployment" and access.namespace == NAMESPACE and access.container == "main"
    [service] = access.services
    assert service.dns_name == f"gpr-42.{NAMESPACE}.svc.cluster.local"
    assert service.urls == (f"http://gpr-42.{NAMESPACE}.svc.cluster.local:8000",)
    assert not service.headless
    forwards = [command for command in commands(access).values() if "port-forward" in command]
    assert forwards == [f"kubectl -n {NAMESPACE} port-forward svc/gpr-42 8080:8000"]


def test_a_development_pod_gets_exec_and_port_forward() -> None:
    access = access_for("development")

    assert access.services == ()
    found = commands(access)
    assert f"kubectl -n {NAMESPACE} exec -it deploy/gpr-42 -c main -- bash" in found.values()
    assert f"kubectl -n {NAMESPACE} port-forward deploy/gpr-42 8888:8888" in found.values()
    assert f"kubectl -n {NAMESPACE} get pods -l gpu-portal/request=42 -o wide" in found.values()


def test_a_distributed_job_has_a_headless_service_and_logs_of_every_pod() -> None:
    # H100 training in the cases is two replicas: a JobSet with a headless rendezvous Service.
    objects = render_request_objects(context("H100-80GB", "dedicated", "training"))
    access = workload_access(objects, request_id=42, workload_type="training")

    assert access.kind == "JobSet" and access.name == "gpr-42" and access.container == "main"
    [service] = access.services
    assert service.headless and service.ports[0].port == 29500
    found = commands(access)
    assert f"kubectl -n {NAMESPACE} logs -l gpu-portal/request=42 --prefix -f" in found.values()
    assert not any("port-forward" in command for command in found.values())
    assert f"kubectl -n {NAMESPACE} exec -it job/gpr-42-worker-0 -c main -- bash" in found.values()


def test_nothing_rendered_means_no_commands() -> None:
    access = workload_access([], request_id=7, workload_type="development")

    assert access.kind == "" and access.commands == () and access.services == ()


def test_another_requests_objects_are_not_read() -> None:
    objects = render_request_objects(context("A100-40GB", "dedicated", "realtime_inference"))

    assert workload_access(objects, request_id=43, workload_type="realtime_inference").services == ()
