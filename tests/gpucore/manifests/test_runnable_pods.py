"""What a workload's container needs to run as the portal's non-root user: host memory for an inference model's
weights, and a writable HOME for Hugging Face, torch and pip caches. Every object validated strictly."""

from decimal import Decimal

from gpucore.manifests import render_workload_objects
from tests.gpucore.manifests.cases import context, validate


def pod_template(objects):
    """The pod template of the one workload: a Deployment's or Job's, or a JobSet's (multi-pod training) job's."""
    [obj] = [o for o in objects if o["kind"] in ("Deployment", "Job", "JobSet")]
    if obj["kind"] == "JobSet":
        [replicated] = obj["spec"]["replicatedJobs"]
        return replicated["template"]["spec"]["template"]
    return obj["spec"]["template"]


def container(objects):
    return pod_template(objects)["spec"]["containers"][0]


def test_inference_host_memory_is_at_least_the_models_gpu_memory():
    # A 40 GiB model on a dedicated H100: the per-GPU rule of thumb alone gives 8-16 GiB of RAM.
    objects = render_workload_objects(
        context("H100-80GB", "dedicated", "batch_inference", model_memory_gib=Decimal(40))
    )
    for obj in objects:
        validate(obj)
    resources = container(objects)["resources"]
    assert resources["requests"]["memory"] == "40Gi"
    assert resources["limits"]["memory"] == "40Gi"
    small = container(render_workload_objects(context("H100-80GB", "dedicated", "batch_inference", model_memory_gib=4)))
    assert small["resources"]["limits"]["memory"] == "16Gi"  # the rule of thumb where it is larger


def test_training_memory_is_still_sized_per_gpu():
    with_model = render_workload_objects(context("H100-80GB", "dedicated", "training", model_memory_gib=Decimal(70)))
    without = render_workload_objects(context("H100-80GB", "dedicated", "training"))
    assert container(with_model)["resources"] == container(without)["resources"]


def test_home_and_caches_are_on_a_writable_volume():
    for workload_type in ("training", "batch_inference", "development"):
        objects = render_workload_objects(context("A100-40GB", "dedicated", workload_type))
        for obj in objects:
            validate(obj)
        main = container(objects)
        env = {item["name"]: item.get("value") for item in main["env"]}
        assert env["HOME"] == "/home/portal"
        assert env["HF_HOME"] == "/home/portal/.cache/huggingface"
        assert env["TORCH_HOME"] == "/home/portal/.cache/torch"
        assert env["XDG_CACHE_HOME"] == "/home/portal/.cache"
        assert {"name": "home", "mountPath": "/home/portal"} in main["volumeMounts"]
        volumes = pod_template(objects)["spec"]["volumes"]
        assert {"name": "home", "emptyDir": {}} in volumes


def test_a_requests_own_env_wins_over_the_home_defaults():
    objects = render_workload_objects(context(env={"HF_HOME": "/models/hf"}))
    env = {item["name"]: item.get("value") for item in container(objects)["env"]}
    assert env["HF_HOME"] == "/models/hf"
