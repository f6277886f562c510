"""The demo organisation's request templates: three for every team and one of a team's own."""

from __future__ import annotations

from allocations.models import RequestTemplate, Team

# (team slug or None for every team, name, description, profile, image, command)
DEMO_TEMPLATES: list[tuple[str | None, str, str, dict[str, object], str, list[str]]] = [
    (
        None,
        "Jupyter notebook, T4 share, 8 h",
        "Interactive development on a quarter of a time-sliced T4 for a working day: the share offers 3.75 GiB "
        "(15 GiB usable / 4), so the notebook keeps its peak at 3 GiB (3.53 GiB with headroom); preemptible, so it "
        "may borrow.",
        {
            "workload_type": "development",
            "gpu_memory_gb": 3,
            "gpu_model": "T4",
            "sla_tier": "tier3_development",
            "duration_hours": 8,
        },
        "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11",
        [],
    ),
    (
        None,
        "LLM inference 7B",
        "Serve a 7B model in fp16 (about 14 GB of weights plus KV cache) behind an API, on 2 replicas "
        "(tier 1 needs two).",
        {
            "workload_type": "realtime_inference",
            "gpu_memory_gb": 24,
            "replicas": 2,
            "latency_p99_ms": 200,
            "sla_tier": "tier1_realtime",
            "duration_hours": 168,
        },
        "vllm/vllm-openai:v0.6.3",
        ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/7b"],
    ),
    (
        None,
        "Multi-node training",
        "Distributed training on 2 nodes of 8 dedicated GPUs (torchrun/NCCL); 480 GiB per replica is 60 GiB a GPU "
        "(70.59 GiB with headroom), which an 80 GB GPU's 79.25 GiB usable holds.",
        {
            "workload_type": "training",
            "gpu_memory_gb": 480,
            "gpu_count": 8,
            "replicas": 2,
            "sla_tier": "tier2_batch",
            "duration_hours": 72,
        },
        "nvcr.io/nvidia/pytorch:24.05-py3",
        ["torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py"],
    ),
    (
        "vision",
        "ResNet fine-tune",
        "The team's usual fine-tune: one A100-class GPU for a day.",
        {"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch", "duration_hours": 24},
        "nvcr.io/nvidia/pytorch:24.05-py3",
        ["python", "finetune.py", "--epochs", "10"],
    ),
]


def seed_demo_request_templates(teams: dict[str, Team]) -> int:
    """Create the demo templates (by scope and name), or bring those seeded before up to date: a database seeded by an
    older demo would otherwise keep values the demo has since corrected. Returns how many were created."""
    created = 0
    for team_slug, name, description, profile, image, command in DEMO_TEMPLATES:
        team = teams.get(team_slug) if team_slug else None
        if team_slug and team is None:
            continue
        _, made = RequestTemplate.objects.update_or_create(
            team=team,
            name=name,
            defaults={"description": description, "profile": profile, "image": image, "command": command},
        )
        created += made
    return created
