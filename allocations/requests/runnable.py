"""Whether a request runs something: the default images (NGC PyTorch, Triton, HPC benchmarks) do nothing useful
without a command, so a request using one must give it, unless the workload type has a default command
(``PORTAL_DEFAULT_COMMANDS``: JupyterLab for development). An image of the requester's own runs its entrypoint."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

# What a command looks like for each workload type, in the refusal.
COMMAND_EXAMPLES = {
    "training": "torchrun --nproc-per-node=2 train.py --epochs 10",
    "batch_inference": "python infer.py --input s3://bucket/batch --output s3://bucket/out",
    "realtime_inference": "tritonserver --model-repository=s3://bucket/models",
    "development": "jupyter lab --ip=0.0.0.0 --port=8888",
    "hpc_simulation": "mpirun -np 8 ./simulate",
}


def command_problem(*, workload_type: str, image: str, command: Sequence[str]) -> str | None:
    """Why the request would run nothing (a message for ``command``); None when it runs something."""
    if command or image or settings.PORTAL_DEFAULT_COMMANDS.get(workload_type):
        return None
    default_image = settings.PORTAL_DEFAULT_IMAGES.get(workload_type, "")
    example = COMMAND_EXAMPLES.get(workload_type, "python main.py")
    if workload_type == "realtime_inference":
        what = "serves nothing without a model repository"
    else:
        what = "runs nothing by itself"
    return (
        f"Give the command to run: the default image ({default_image}) {what}. For example: {example}. Or name an "
        "image of your own whose entrypoint runs the work."
    )
