"""recommend() answers exactly what the golden file holds: a regression guard on the frozen spec.

``golden_recommendations.json.gz`` holds, for a spread of profiles and framework inputs (every workload type and
SLA tier, MIG, time-sliced and dedicated outcomes, multi-GPU replicas, latency targets, price books, other
currencies, time-sliced pools, MIG layouts, node sizes, node-pool offers), the JSON of each recommendation
(``Recommendation.to_dict()``: rationale, alternatives, tradeoffs, costs) or the field errors of its refusal, as
the framework produced them when the file was written. A change of the prose or of a figure fails here, naming
the case and the first key that differs.

A deliberate change of the answers regenerates the file (and the diff is then reviewed):

    .venv/bin/python -m tests.gpucore.decision.test_golden --write
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpucore.decision import (
    BUILTIN_CATALOG,
    DEFAULT_TIERS_BY_SLUG,
    IsolationFloor,
    ProfileError,
    SlaTierSpec,
    WorkloadProfile,
    recommend,
)

GOLDEN = Path(__file__).with_name("golden_recommendations.json.gz")

WORKLOADS = ["training", "batch_inference", "realtime_inference", "development", "hpc_simulation"]
MODELS = [None, "A100-40GB", "A100", "A100-80GB", "H100-80GB", "H200", "A30", "L4", "T4", "V100-32GB", "B200"]
TIERS = [None, "tier1_realtime", "tier2_batch", "tier3_development"]
# Boundaries of the catalog's MIG profiles, time-sliced shares and GPUs (GB), and numbers on either side.
MEMORIES = [0.5, 1, 4.9, 5, 5.1, 6, 9.99, 10, 10.01, 12, 18, 20, 20.5, 24, 32, 35, 39.9, 40, 41, 70, 71, 79.9, 80]
MEMORIES += [81, 100, 140, 141, 142, 160, 320, 1000]
LATENCIES = [None, None, None, 1, 10, 10.5, 20, 49.9, 50, 200]

# A cluster's offers, as allocations.clusters.placement gives them: dedicated, time-sliced and (some) MIG pools.
_OFFERS = {
    ("A100-40GB", "dedicated", None),
    ("A100-40GB", "mig", "1g.5gb"),
    ("A100-40GB", "mig", "3g.20gb"),
    ("A100-80GB", "dedicated", None),
    ("A100-80GB", "time-slicing", None),
    ("H100-80GB", "mig", "2g.20gb"),
    ("H100-80GB", "mig", "1g.10gb"),
    ("H100-80GB", "dedicated", None),
    ("A30", "mig", "1g.6gb"),
    ("A30", "mig", "2g.12gb"),
    ("L4", "time-slicing", None),
    ("T4", "time-slicing", None),
    ("T4", "dedicated", None),
}
LAB_TIER = SlaTierSpec("lab", "Lab", IsolationFloor.NONE, "lab", 1, default_time_slice_replicas=3)
HALF_PRICE_TIER = SlaTierSpec(
    "cheap", "Cheap", IsolationFloor.HARDWARE, "cheap", 1, price_multiplier=Decimal("0.55"), latency_p99_ms=Decimal(25)
)


def _offered(model: str, strategy: str, mig_profile: str | None) -> bool:
    return (model, strategy, mig_profile) in _OFFERS


# Framework inputs besides the profile, by name (the golden file stores the name).
CONTEXTS: dict[str, dict[str, Any]] = {
    "default": {},
    "price-book": {"rates": {"A100-40GB": Decimal("2.10"), "h100": Decimal("3.7512"), "T4": Decimal("0.35")}},
    "eur": {"rates": {"A100-80GB": Decimal("3.10"), "L4": Decimal("0.8")}, "currency": "EUR"},
    "cluster": {
        "rates": {"A100-40GB": Decimal("1.99")},
        "time_slice_replicas": {"A100-80GB": [7, 3], "L4": 3, "T4": [4, 2]},
        "gpus_per_node": {"A100-40GB": 8, "A100-80GB": 4, "H100-80GB": 8, "T4": 2},
        "mig_layouts": {
            ("A100-40GB", "1g.5gb"): {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
            ("A100-40GB", "3g.20gb"): {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
            ("H100-80GB", "2g.20gb"): {"1g.10gb": 3, "2g.20gb": 2},
            ("H100-80GB", "1g.10gb"): {"1g.10gb": 3, "2g.20gb": 2},
            ("A30", "1g.6gb"): {"1g.6gb": 4},
        },
        "offered": _offered,
    },
    "tiers": {
        "tiers": {**DEFAULT_TIERS_BY_SLUG, "lab": LAB_TIER, "cheap": HALF_PRICE_TIER},
        "default_time_slice_replicas": 5,
    },
}


def _hand_picked() -> list[tuple[str, dict[str, Any]]]:
    """Every workload type over the memory boundaries, with the floors that change the outcome."""
    cases = []
    for workload in WORKLOADS:
        for memory in MEMORIES:
            cases.append(("default", {"workload_type": workload, "gpu_memory_gb": memory}))
        for memory in (5, 20, 40, 79.9):
            for count in (2, 4, 8, 16):
                cases.append(
                    ("default", {"workload_type": workload, "gpu_memory_gb": memory * count, "gpu_count": count})
                )
                cases.append(
                    ("cluster", {"workload_type": workload, "gpu_memory_gb": memory * count, "gpu_count": count})
                )
        for tier in TIERS[1:]:
            cases.append(("default", {"workload_type": workload, "gpu_memory_gb": 8, "sla_tier": tier, "replicas": 2}))
        cases.append(("default", {"workload_type": workload, "gpu_memory_gb": 8, "isolation_required": True}))
        cases.append(("default", {"workload_type": workload, "gpu_memory_gb": 8, "latency_sensitive": True}))
        cases.append(("default", {"workload_type": workload, "gpu_memory_gb": 8, "latency_sensitive": False}))
        for expected in (10, 59, 60, 85, 96):
            cases.append(
                ("default", {"workload_type": workload, "gpu_memory_gb": 8, "expected_utilization_pct": expected})
            )
        cases.append(("default", {"workload_type": workload, "gpu_memory_gb": 8, "duration_hours": 48}))
        cases.append(("price-book", {"workload_type": workload, "gpu_memory_gb": 8, "duration_hours": 2.5}))
    cases.append(("default", {"workload_type": "training", "gpu_memory_gb": 8, "sla_tier": "tier1_realtime"}))
    cases.append(("default", {"workload_type": "training", "gpu_memory_gb": 8, "sla_tier": "nope", "gpu_model": "X"}))
    return cases


def _swept(count: int, seed: int = 15) -> list[tuple[str, dict[str, Any]]]:
    """A reproducible random sweep over every field and every context."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        profile: dict[str, Any] = {
            "workload_type": rng.choice(WORKLOADS),
            "gpu_memory_gb": rng.choice(MEMORIES) if rng.random() < 0.3 else round(rng.uniform(0.5, 24), 1),
            "gpu_count": rng.choice([1, 1, 1, 1, 2, 4, 8]),
            "replicas": rng.choice([1, 2, 2, 3]),
        }
        if profile["gpu_count"] > 1 and rng.random() < 0.7:
            profile["gpu_memory_gb"] = round(profile["gpu_memory_gb"] * profile["gpu_count"], 1)
        optional = {
            "isolation_required": rng.random() < 0.15,
            "latency_sensitive": rng.choice([None, None, None, True, False]),
            "latency_p99_ms": rng.choice(LATENCIES + [None] * 6),
            "sla_tier": rng.choice(TIERS),
            "gpu_model": rng.choice(MODELS + [None] * 4),
            "expected_utilization_pct": rng.choice([None, None, 30, 70, 90]),
            "duration_hours": rng.choice([None, None, None, 1, 36, 0.5, 730]),
        }
        profile.update({key: value for key, value in optional.items() if value is not None})
        context = rng.choice(list(CONTEXTS))
        if context == "tiers" and rng.random() < 0.6:
            profile["sla_tier"] = rng.choice(["lab", "cheap"])
        cases.append((context, profile))
    return cases


def golden_cases() -> list[tuple[str, dict[str, Any]]]:
    return _hand_picked() + _swept(2000)


def answer(context: str, profile: dict[str, Any]) -> dict[str, Any]:
    """The recommendation as stored (its JSON), or the refusal's field errors."""
    try:
        recommendation = recommend(WorkloadProfile.from_mapping(profile), BUILTIN_CATALOG, **CONTEXTS[context])
    except ProfileError as error:
        return {"errors": error.errors}
    return {"recommendation": recommendation.to_dict()}


def _canonical(value: Any) -> str:
    """The JSON text, keys in the order the framework wrote them: the order an API client reads is part of it."""
    return json.dumps(value, ensure_ascii=False)


def _first_difference(expected: Any, actual: Any, path: str = "") -> str:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if expected.get(key, "<absent>") != actual.get(key, "<absent>"):
                return _first_difference(expected.get(key, "<absent>"), actual.get(key, "<absent>"), f"{path}.{key}")
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            if left != right:
                return _first_difference(left, right, f"{path}[{index}]")
    return f"{path}: expected {expected!r}, got {actual!r}"


def _load() -> list[dict[str, Any]]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as stream:
        return json.load(stream)


def test_the_golden_file_covers_every_outcome():
    """The spread is what this guard claims: every strategy chosen, refusals, multi-GPU, every context."""
    stored = _load()
    chosen = {item["answer"]["recommendation"]["strategy"] for item in stored if "recommendation" in item["answer"]}
    assert chosen == {"dedicated", "mig", "time-slicing"}
    assert {item["context"] for item in stored} == set(CONTEXTS)
    assert {item["profile"]["workload_type"] for item in stored} == set(WORKLOADS)
    assert any("errors" in item["answer"] for item in stored)
    assert any(
        item["answer"]["recommendation"]["quantity"] > 1 for item in stored if "recommendation" in item["answer"]
    )
    assert len(stored) == len(golden_cases())


def test_recommend_answers_exactly_what_it_answered_before():
    stored = _load()
    cases = golden_cases()
    assert [[item["context"], item["profile"]] for item in stored] == json.loads(json.dumps(cases))
    differences = []
    for item in stored:
        actual = json.loads(_canonical(answer(item["context"], item["profile"])))
        if _canonical(actual) != _canonical(item["answer"]):  # same text: same values, types and key order
            where = _first_difference(item["answer"], actual)
            differences.append(f"{item['context']} {item['profile']}: {where}")
    assert not differences, f"{len(differences)} answer(s) changed; first: {differences[:3]}"


def write() -> None:
    stored = [
        {"context": context, "profile": profile, "answer": json.loads(_canonical(answer(context, profile)))}
        for context, profile in golden_cases()
    ]
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as stream:
        stream.write(json.dumps(stored, ensure_ascii=False, indent=0).encode())
    print(f"wrote {len(stored)} cases to {GOLDEN}")


if __name__ == "__main__" and "--write" in sys.argv:
    write()
