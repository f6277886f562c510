"""deploy/kubernetes renders with `kubectl kustomize`, every object validates strictly, and the shape holds.

Both overlays (dev and prod) are rendered by kubectl's own kustomize and every object is validated against the
Kubernetes 1.30 and 1.37 schemas with ``strict=True`` (a misspelt field fails). The checks below are what the schema
cannot say: probes on /healthz, exactly one beat, the migrate Job and the wait for it, secrets by reference only,
least-privilege identities, NetworkPolicy coverage and a restricted pod security context.
"""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.kustomize import (
    NAMESPACES,
    OVERLAYS,
    ROOT,
    by_kind,
    containers,
    named,
    pod_templates,
    render,
)

KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
SECRET_NAMES = {"gpu-portal-secrets", "gpu-portal-oidc"}


def _validate(obj: dict[str, Any], version: str) -> None:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = "/".join(str(part) for part in error.path)
        raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: {error.message} at {path}") from None


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_rendered_object_validates_strictly(overlay: str, version: str) -> None:
    objects = render(overlay)
    assert len(objects) >= 15
    for obj in objects:
        _validate(obj, version)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_everything_lives_in_the_overlays_namespace(overlay: str) -> None:
    objects = render(overlay)
    namespace = NAMESPACES[overlay]
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for obj in objects:
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"], obj["metadata"]
        else:
            assert obj["metadata"]["namespace"] == namespace, (obj["kind"], obj["metadata"])
    assert named(objects, "Namespace", namespace)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "restricted"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_runs_gunicorn_with_probes_on_healthz_autoscaling_and_a_budget(overlay: str) -> None:
    objects = render(overlay)
    web = named(objects, "Deployment", "gpu-portal-web")
    (container,) = web["spec"]["template"]["spec"]["containers"]
    assert container["command"][:2] == ["gunicorn", "portal.wsgi:application"]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert port == 8000
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz/live", "port": "http"}

    hpa = named(objects, "HorizontalPodAutoscaler", "gpu-portal-web")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gpu-portal-web"}
    assert 1 <= hpa["spec"]["minReplicas"] <= web["spec"]["replicas"] <= hpa["spec"]["maxReplicas"]
    web_labels = web["spec"]["template"]["metadata"]["labels"]
    pdb = named(objects, "PodDisruptionBudget", "gpu-portal-web")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= web_labels.items()
    service = named(objects, "Service", "gpu-portal-web")
    assert service["spec"]["selector"].items() <= web_labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_exactly_one_beat_and_no_autoscaler_on_it(overlay: str) -> None:
    objects = render(overlay)
    beats = [
        d
        for d in by_kind(objects, "Deployment")
        if "beat" in d["spec"]["template"]["spec"]["containers"][0].get("command", [])
    ]
    assert [b["metadata"]["name"] for b in beats] == ["gpu-portal-beat"]
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert all(
        h["spec"]["scaleTargetRef"]["name"] != "gpu-portal-beat" for h in by_kind(objects, "HorizontalPodAutoscaler")
    )
    worker = named(objects, "Deployment", "gpu-portal-worker")
    assert worker["spec"]["template"]["spec"]["containers"][0]["command"][:4] == ["celery", "-A", "portal", "worker"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_migrate_job_runs_migrations_and_every_long_running_pod_waits_for_them(overlay: str) -> None:
    objects = render(overlay)
    job = named(objects, "Job", "gpu-portal-migrate")
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    templates = pod_templates(objects)
    for component in ("web", "worker", "beat"):
        init = templates[component]["spec"].get("initContainers", [])
        waits = [c for c in init if "manage.py migrate --check" in " ".join(c["command"])]
        assert waits, f"{component} does not wait for migrations"
        assert waits[0]["image"] == migrate["image"]  # the same release checks the same migrations


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_are_only_referenced_never_committed(overlay: str) -> None:
    objects = render(overlay)
    assert not by_kind(objects, "Secret")
    referenced = set()
    for template in pod_templates(objects).values():
        for volume in template["spec"].get("volumes", []):
            if "secret" in volume:
                referenced.add(volume["secret"]["secretName"])
        for container in containers(template):
            for env in container.get("env", []):
                if "valueFrom" in env and "secretKeyRef" in env["valueFrom"]:
                    referenced.add(env["valueFrom"]["secretKeyRef"]["name"])
                else:
                    # A literal value is for non-secret settings only.
                    assert not re.search(r"SECRET|PASSWORD|TOKEN|DATABASE_URL|BROKER_URL|CACHE_URL", env["name"]), env
            for source in container.get("envFrom", []):
                assert "secretRef" not in source, "every secret variable is named (secretKeyRef), not imported whole"
    assert "gpu-portal-secrets" in referenced and referenced <= SECRET_NAMES
    for configmap in by_kind(objects, "ConfigMap"):
        for key, value in configmap.get("data", {}).items():
            secret_like = r"SECRET_KEY$|_PASSWORD$|^DATABASE_URL$|^CELERY_BROKER_URL$|^CACHE_URL$"
            assert not re.search(secret_like, key), (key, value)
            assert key != "OIDC_CLIENT_SECRET_REF" or value.startswith(("env:", "file:"))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_worker_holds_a_kubernetes_token(overlay: str) -> None:
    objects = render(overlay)
    templates = pod_templates(objects)
    assert templates["worker"]["spec"]["serviceAccountName"] == "gpu-portal-worker"
    assert templates["worker"]["spec"]["automountServiceAccountToken"] is True
    for component in ("web", "beat", "migrate"):
        spec = templates[component]["spec"]
        assert spec["serviceAccountName"] == "gpu-portal"
        assert spec["automountServiceAccountToken"] is False
    assert named(objects, "ServiceAccount", "gpu-portal")["automountServiceAccountToken"] is False
    (binding,) = by_kind(objects, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gpu-portal-gateway",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-portal-worker", "namespace": NAMESPACES[overlay]}
    ]
    assert not by_kind(objects, "RoleBinding") and not by_kind(objects, "Role")


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        value = labels.get(expression["key"])
        if expression["operator"] == "In" and value not in expression["values"]:
            return False
        if expression["operator"] == "NotIn" and value in expression["values"]:
            return False
    return True


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_covered_by_a_network_policy_with_ingress_and_egress(overlay: str) -> None:
    objects = render(overlay)
    policies = by_kind(objects, "NetworkPolicy")
    for obj in [*by_kind(objects, "Deployment"), *by_kind(objects, "Job")]:
        labels = obj["spec"]["template"]["metadata"]["labels"]
        covering = [p for p in policies if _selects(p["spec"]["podSelector"], labels)]
        assert covering, f"no NetworkPolicy selects {obj['metadata']['name']}"
        assert {"Ingress", "Egress"} <= {t for p in covering for t in p["spec"]["policyTypes"]}
    web = named(objects, "NetworkPolicy", "gpu-portal-web")
    assert web["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert named(objects, "NetworkPolicy", "gpu-portal-worker")["spec"]["ingress"] == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_meet_the_restricted_pod_security_standard_and_have_resources(overlay: str) -> None:
    for obj in [*by_kind(render(overlay), "Deployment"), *by_kind(render(overlay), "Job")]:
        spec = obj["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in containers(obj["spec"]["template"]):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert {"cpu", "memory"} <= container["resources"]["requests"].keys(), container["name"]
            assert "memory" in container["resources"]["limits"], container["name"]


def test_prod_has_an_ingress_to_the_web_service_with_tls_and_sso_for_web_only() -> None:
    objects = render("prod")
    (ingress,) = by_kind(objects, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    service = named(objects, "Service", backend["name"])
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert ingress["spec"]["tls"][0]["hosts"] == [ingress["spec"]["rules"][0]["host"]]
    config = named(objects, "ConfigMap", "gpu-portal-config")["data"]
    assert ingress["spec"]["rules"][0]["host"] in config["ALLOWED_HOSTS"].split(",")

    sso = named(objects, "ConfigMap", "gpu-portal-sso")["data"]
    reference = sso["OIDC_CLIENT_SECRET_REF"].removeprefix("file:")
    templates = pod_templates(objects)
    web = templates["web"]["spec"]
    (mount,) = [m for m in web["containers"][0]["volumeMounts"] if reference.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in web["volumes"] if v["name"] == mount["name"]]
    items = {item["path"]: item["key"] for item in volume["secret"]["items"]}
    assert items[reference.removeprefix(mount["mountPath"] + "/")] == "client-secret"
    for component in ("worker", "beat", "migrate"):
        spec = templates[component]["spec"]
        assert all("secret" not in v for v in spec.get("volumes", [])), component
        assert all(
            s.get("configMapRef", {}).get("name") != "gpu-portal-sso"
            for c in containers(templates[component])
            for s in c.get("envFrom", [])
        )


def _scrape_jobs() -> list[dict[str, Any]]:
    configmap = named(render("prod"), "ConfigMap", "gpu-portal-dcgm-scrape")
    return yaml.safe_load(configmap["data"]["dcgm-exporter.yaml"])


def test_the_dcgm_scrape_job_keeps_the_exporters_attribution_labels() -> None:
    (job,) = _scrape_jobs()
    assert job["job_name"] == "dcgm-exporter"
    assert job["honor_labels"] is True  # namespace/pod as the exporter wrote them
    assert job["kubernetes_sd_configs"][0]["role"] == "pod"
    keep = {tuple(r["source_labels"]): r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"}
    assert keep[("__meta_kubernetes_pod_label_app",)] == "nvidia-dcgm-exporter"


def _deployment_doc_commands() -> list[str]:
    """The shell commands of docs/deployment.md's Kubernetes section, one per line (continuations joined)."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    start = text.index("## Run it on Kubernetes")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else None]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [re.sub(r"\s+#.*$", "", line).strip() for line in lines if line.strip()]


def _namespace_of(command: str) -> str | None:
    found = re.search(r"(?:-n|--namespace)[ =](\S+)", command)
    return found[1] if found else None


def _secret_keys_needed(objects: list[dict[str, Any]]) -> dict[str, set[str]]:
    needed: dict[str, set[str]] = {}
    for template in pod_templates(objects).values():
        for container in containers(template):
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    needed.setdefault(ref["name"], set()).add(ref["key"])
        for volume in template["spec"].get("volumes", []):
            if "secret" in volume:
                needed.setdefault(volume["secret"]["secretName"], set()).update(
                    item["key"] for item in volume["secret"]["items"]
                )
    return needed


def test_the_deployment_doc_steps_match_the_overlays_secrets_and_names() -> None:
    commands = _deployment_doc_commands()
    applied = {}
    created: dict[tuple[str | None, str], set[str]] = {}
    for command in commands:
        if match := re.search(r"kubectl (?:-n \S+ )?apply -k (\S+)", command):
            assert (ROOT / match[1] / "kustomization.yaml").exists(), match[1]
            applied[match[1].rstrip("/").rsplit("/", 1)[-1]] = command
        if match := re.search(r"create secret generic (\S+)", command):
            keys = set(re.findall(r"--from-(?:literal|file)=([A-Za-z0-9_-]+)=", command))
            created.setdefault((_namespace_of(command), match[1]), set()).update(keys)
    assert set(applied) == set(OVERLAYS), applied
    for overlay in OVERLAYS:
        objects = render(overlay)
        namespace = NAMESPACES[overlay]
        for name, keys in _secret_keys_needed(objects).items():
            assert (namespace, name) in created, f"docs/deployment.md never creates the Secret {name} in {namespace}"
            assert keys <= created[namespace, name], (name, keys - created[namespace, name])
        names = {obj["metadata"]["name"] for obj in objects}
        for command in commands:
            if _namespace_of(command) != namespace:
                continue
            for name in re.findall(r"(?:^|\s)(?:deployment|service|job|deploy|svc)/([a-z0-9-]+)", command):
                assert name in names, (overlay, command)
            for name in re.findall(r"delete job ([a-z0-9-]+)", command):
                assert name in names, (overlay, command)
