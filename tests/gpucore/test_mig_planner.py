"""gpucore.mig_planner: the layout space against the reference placements, the plan against exhaustive search,
and generated demands against the invariants (valid layouts, demand covered, never more GPUs than first fit)."""

from __future__ import annotations

import math
from functools import cache
from itertools import combinations, product
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import check_mig_layout
from gpucore.mig_planner import (
    CurrentGpu,
    MigPlanError,
    candidate_layouts,
    first_fit_decreasing,
    layout_of,
    lp_lower_bound,
    min_gpu_layouts,
    plan,
    plan_summary_gpus,
    valid_layouts,
)

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "mig_profiles.yaml"
MIG_MODELS = {"A100-40GB": "A100-40GB", "A100-80GB": "A100-80GB", "H100-80GB": "H100-80GB", "H200": "H200-141GB"}
MIG_MODELS["A30"] = "A30-24GB"


def _reference_multisets(gpu: dict) -> set[tuple[tuple[str, int], ...]]:
    """Every instance multiset with non-overlapping placements, straight from the reference tables (DFS)."""
    slices, compute = gpu["memory_slices"], gpu["compute_slices"]
    options = [
        (row["profile"], start, row.get("placement_size_memory_slices", row["memory_slices"]), row)
        for row in gpu["profiles"]
        for start in row["placement_starts"]
    ]
    found: set[tuple[tuple[str, int], ...]] = set()

    def walk(first: int, used: list[bool], counts: dict[str, int], compute_used: int) -> None:
        if counts:
            found.add(tuple(sorted(counts.items())))
        for index in range(first, len(options)):
            name, start, size, row = options[index]
            if start + size > slices or any(used[start : start + size]):
                continue
            if counts.get(name, 0) + 1 > row["max_instances"] or compute_used + row["compute_slices"] > compute:
                continue
            # The reference caveat: at most one media-extension instance per GPU.
            if name.endswith("+me") and any(n.endswith("+me") for n in counts):
                continue
            taken = list(used)
            taken[start : start + size] = [True] * size
            walk(index + 1, taken, {**counts, name: counts.get(name, 0) + 1}, compute_used + row["compute_slices"])

    walk(0, [False] * slices, {}, 0)
    return found


@pytest.mark.reference
@pytest.mark.parametrize(("name", "key"), sorted(MIG_MODELS.items()))
def test_the_layout_space_is_exactly_the_reference_placements(name: str, key: str) -> None:
    reference = _reference_multisets(yaml.safe_load(REFERENCE.read_text())["gpus"][key])
    model = BUILTIN_CATALOG.get(name)
    with_media = {tuple(sorted(layout.instances)) for layout in valid_layouts(model, media_extensions=True)}
    without = {tuple(sorted(layout.instances)) for layout in valid_layouts(model)}
    assert with_media == reference
    assert without == {m for m in reference if not any(n.endswith("+me") for n, _ in m)}
    # The counts the reference placements give: 77 on the 7-slice models and 9 on the A30 without +me profiles.
    assert len(without) == (9 if name == "A30" else 77)


@pytest.mark.parametrize("name", sorted(MIG_MODELS))
def test_every_layout_passes_the_checker_and_its_placement_is_disjoint_at_allowed_starts(name: str) -> None:
    model = BUILTIN_CATALOG.get(name)
    for layout in valid_layouts(model, media_extensions=True):
        assert check_mig_layout(model, layout.counts()) == layout.counts()
        used = [False] * model.mig_memory_slices
        for profile_name, start in layout.placement:
            profile = model.profile(profile_name)
            assert start in profile.placement_starts
            assert not any(used[start : start + profile.memory_slices])
            used[start : start + profile.memory_slices] = [True] * profile.memory_slices
        assert sorted(n for n, _ in layout.placement) == sorted(n for n, c in layout.instances for _ in range(c))


def test_the_design_example_needs_two_gpus_with_shares_from_the_layout() -> None:
    model = BUILTIN_CATALOG.get("A100-40GB")
    result = plan(model, {"3g.20gb": 1, "1g.5gb": 9})
    assert result.gpu_count == 2 == result.lower_bound
    gpus = plan_summary_gpus(model, result)
    assert len(gpus) == 2
    hosted = {"3g.20gb": 0, "1g.5gb": 0}
    for gpu in gpus:
        for name in hosted:
            hosted[name] += gpu["instances"].get(name, 0)
        assert all("@" in item for item in gpu["placement"])
    assert hosted["3g.20gb"] >= 1 and hosted["1g.5gb"] >= 9
    # 3g.20gb next to four 1g.5gb: weight 1/2 over a layout weighing 1/2 + 4/7.
    with_three = next(gpu for gpu in gpus if "3g.20gb" in gpu["instances"])
    assert with_three["gpu_share"]["3g.20gb"] == "0.466667"


def test_first_fit_decreasing_is_beaten_where_greedy_packing_strands_slices() -> None:
    # FFD puts the 3g.20gb first, then 2g.10gb beside it; a 4g.20gb (4 slices) needs slices 0-3 and cannot join
    # a GPU whose 3g took 0-3. The optimum pairs 4g+3g and puts 2g+2g+... elsewhere.
    model = BUILTIN_CATALOG.get("A100-40GB")
    demand = {"4g.20gb": 2, "3g.20gb": 2, "2g.10gb": 2, "1g.5gb": 2}
    optimum, greedy = len(min_gpu_layouts(model, demand)), len(first_fit_decreasing(model, demand))
    assert optimum == _exhaustive_min_gpus("A100-40GB", tuple(sorted(demand.items())))
    assert optimum <= greedy


@pytest.mark.parametrize(
    ("model", "demand", "field", "message"),
    [
        ("A100-40GB", {"9g.99gb": 1}, "demand", "no MIG profile '9g.99gb'"),
        ("A100-40GB", {"1g.5gb": -1}, "demand", "whole number"),
        ("A100-40GB", {"1g.5gb": 1.5}, "demand", "whole number"),
        ("T4", {"1g.5gb": 1}, "gpu_model", "not MIG-capable"),
    ],
)
def test_bad_input_names_the_field(model: str, demand: dict, field: str, message: str) -> None:
    with pytest.raises(MigPlanError, match=message) as caught:
        plan(BUILTIN_CATALOG.get(model), demand)
    assert caught.value.field == field


def test_an_empty_demand_needs_no_gpu() -> None:
    result = plan(BUILTIN_CATALOG.get("A30"), {"1g.6gb": 0})
    assert result.gpu_count == 0 and result.gpus == ()


# --- Exhaustive search: the exact optimum by dynamic programming over demand vectors ------------------------------


@cache
def _all_layouts(name: str) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    model = BUILTIN_CATALOG.get(name)
    names = tuple(p.name for p in model.mig_profiles)
    layouts = valid_layouts(model, media_extensions=True)
    return names, tuple(tuple(layout.capacity(n) for n in names) for layout in layouts)


@cache
def _best(name: str, remaining: tuple[int, ...]) -> int:
    """f(d) = 0 if d = 0, else 1 + min over every layout l (with +me) of f(max(d - l, 0))."""
    if not any(remaining):
        return 0
    _, layouts = _all_layouts(name)
    options = set()
    for layout in layouts:
        after = tuple(max(0, r - c) for r, c in zip(remaining, layout, strict=True))
        if after != remaining:
            options.add(after)
    return 1 + min(_best(name, after) for after in options)


def _exhaustive_min_gpus(name: str, demand: tuple[tuple[str, int], ...]) -> int:
    """Fewest GPUs by exhaustive recursion over every layout of the model, independent of the integer program."""
    names, _ = _all_layouts(name)
    counts = dict(demand)
    return _best(name, tuple(counts.get(n, 0) for n in names))


SMALL_DEMANDS = [
    ("A30", dict(zip(["1g.6gb", "2g.12gb", "4g.24gb"], counts, strict=True)))
    for counts in product(range(4), range(3), range(2))
    if any(counts)
] + [
    ("A100-40GB", dict(zip(["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb"], counts, strict=True)))
    for counts in product(range(8), range(4), range(3), range(2))
    if any(counts)
]


def test_the_plan_equals_exhaustive_search_on_every_small_demand() -> None:
    checked = 0
    for name, demand in SMALL_DEMANDS:
        model = BUILTIN_CATALOG.get(name)
        result = plan(model, demand)
        key = tuple((n, c) for n, c in demand.items() if c)
        assert result.gpu_count == _exhaustive_min_gpus(name, key), (name, demand)
        checked += 1
    assert checked == len(SMALL_DEMANDS) == 23 + 191


def test_media_extension_demand_gets_one_media_instance_per_gpu() -> None:
    model = BUILTIN_CATALOG.get("A30")
    demand = {"1g.6gb+me": 2, "2g.12gb+me": 1, "1g.6gb": 2}
    result = plan(model, demand)
    assert result.gpu_count == _exhaustive_min_gpus("A30", tuple(demand.items())) == 3
    for gpu in result.gpus:
        assert sum(c for n, c in gpu.layout.instances if n.endswith("+me")) <= 1


# --- Properties over generated demands ------------------------------------------------------------------------


def _demands(name: str, largest: int):
    model = BUILTIN_CATALOG.get(name)
    names = [p.name for p in model.mig_profiles if not p.media_extensions]
    return st.fixed_dictionaries({n: st.integers(min_value=0, max_value=largest) for n in names}).filter(
        lambda d: any(d.values())
    )


def _check_plan(name: str, demand: dict[str, int]) -> None:
    model = BUILTIN_CATALOG.get(name)
    result = plan(model, demand)
    hosted: dict[str, int] = {}
    for gpu in result.gpus:
        assert check_mig_layout(model, gpu.layout.counts()) == gpu.layout.counts()
        for profile_name, count in gpu.hosts.items():
            assert count <= gpu.layout.capacity(profile_name)
            hosted[profile_name] = hosted.get(profile_name, 0) + count
        assert gpu.used
    assert {n: c for n, c in hosted.items() if c} == {n: c for n, c in demand.items() if c}
    greedy = first_fit_decreasing(model, demand)
    for layout in greedy:
        assert check_mig_layout(model, layout.counts()) == layout.counts()
    greedy_hosts = {n: sum(layout.capacity(n) for layout in greedy) for n in demand}
    assert all(greedy_hosts[n] >= c for n, c in demand.items())
    assert math.ceil(lp_lower_bound(model, demand) - 1e-6) <= result.gpu_count <= len(greedy)
    assert result.gpu_count == len(result.gpus)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(demand=_demands("A100-40GB", 30))
def test_generated_a100_demands_hold_the_invariants(demand: dict[str, int]) -> None:
    _check_plan("A100-40GB", demand)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(demand=_demands("A30", 40))
def test_generated_a30_demands_hold_the_invariants(demand: dict[str, int]) -> None:
    _check_plan("A30", demand)


@settings(max_examples=30, deadline=None)
@given(demand=_demands("H100-80GB", 3))
def test_small_generated_h100_demands_are_optimal(demand: dict[str, int]) -> None:
    model = BUILTIN_CATALOG.get("H100-80GB")
    key = tuple((n, c) for n, c in demand.items() if c)
    assert plan(model, demand).gpu_count == _exhaustive_min_gpus("H100-80GB", key)


# --- Plans against current GPUs ------------------------------------------------------------------------------


def _pool(model_name: str, layouts: list[dict[str, int]], in_use: list[dict[str, int]], per_node: int = 2):
    return [
        CurrentGpu(
            gpu_id=f"node-{i // per_node}/{i % per_node}",
            node=f"node-{i // per_node}",
            layout=layout,
            in_use=used,
            holders=tuple(f"gpr-{i}-{n}" for n, c in used.items() for _ in range(c)),
        )
        for i, (layout, used) in enumerate(zip(layouts, in_use, strict=True))
    ]


def test_a_pool_that_already_hosts_the_demand_changes_nothing() -> None:
    model = BUILTIN_CATALOG.get("A100-40GB")
    current = _pool("A100-40GB", [{"3g.20gb": 2}, {"1g.5gb": 7}], [{"3g.20gb": 1}, {"1g.5gb": 3}])
    result = plan(model, {"3g.20gb": 2, "1g.5gb": 5}, current=current)
    assert result.gpu_count == 2 and result.gpus_changed == 0 and result.nodes_to_drain() == []


def test_instances_in_use_stay_and_the_changed_gpus_name_who_moves() -> None:
    model = BUILTIN_CATALOG.get("A100-40GB")
    # Four GPUs of 7 x 1g.5gb, two with one in use; the demand is now two 7g.40gb and the two running 1g.5gb.
    current = _pool("A100-40GB", [{"1g.5gb": 7}] * 4, [{"1g.5gb": 1}, {}, {}, {"1g.5gb": 1}])
    result = plan(model, {"7g.40gb": 2, "1g.5gb": 2}, current=current)
    assert result.gpu_count == 3
    # Optimum: keep one GPU with a 1g in use (hosting both 1g), change two idle GPUs to 7g; one GPU moves nothing.
    # Keeping both GPUs with a 1g.5gb in use would take 4 GPUs: one of them changes, its request moves, and one
    # idle GPU changes; the other idle GPU stays as it is, free.
    assert result.gpus_changed == 2 and result.gpus_free == 1
    assert len(result.requests_to_move()) == 1
    changed = [gpu for gpu in result.gpus if gpu.changed]
    assert all(gpu.layout.counts() == {"7g.40gb": 1} for gpu in changed)
    # Both changes land on one node (node-0 holds GPUs 0-1, node-1 GPUs 2-3), so only one node is drained.
    assert len(result.nodes_to_drain()) == 1


def test_when_in_use_gpus_must_change_the_plan_lists_their_requests() -> None:
    model = BUILTIN_CATALOG.get("A100-40GB")
    current = _pool("A100-40GB", [{"1g.5gb": 7}, {"1g.5gb": 7}], [{"1g.5gb": 2}, {"1g.5gb": 1}])
    result = plan(model, {"7g.40gb": 1, "1g.5gb": 3}, current=current)
    assert result.gpu_count == 2 and result.gpus_changed == 1
    # The GPU with fewer instances in use is the one that changes.
    changed = next(gpu for gpu in result.gpus if gpu.changed)
    assert changed.gpu_id == "node-0/1" and changed.must_move == {"1g.5gb": 1}
    assert result.requests_to_move() == ["gpr-1-1g.5gb"]
    kept = next(gpu for gpu in result.gpus if not gpu.changed)
    assert kept.hosts == {"1g.5gb": 3}


def test_a_pool_too_small_gets_added_gpus() -> None:
    model = BUILTIN_CATALOG.get("A30")
    current = _pool("A30", [{"4g.24gb": 1}], [{"4g.24gb": 1}])
    result = plan(model, {"4g.24gb": 1, "2g.12gb": 2, "1g.6gb": 1}, current=current)
    assert result.gpu_count == 3 and result.gpus_added == 2 and result.gpus_changed == 0


def test_a_current_layout_that_is_not_valid_is_refused_naming_the_gpu() -> None:
    model = BUILTIN_CATALOG.get("A30")
    current = _pool("A30", [{"4g.24gb": 2}], [{}])
    with pytest.raises(MigPlanError, match="node-0/0") as caught:
        plan(model, {"1g.6gb": 1}, current=current)
    assert caught.value.field == "current[0]"


def _fewest_changes_by_brute_force(name: str, demand: dict[str, int], current: list[CurrentGpu]) -> int:
    """Try every set of kept GPUs and every set of them used; the rest of the demand goes on changed/added GPUs."""
    model = BUILTIN_CATALOG.get(name)
    key = tuple((n, c) for n, c in demand.items() if c)
    optimum = _exhaustive_min_gpus(name, key)
    extra = max(0, optimum - len(current))
    best = None
    indices = range(len(current))
    for kept_size in range(len(current), -1, -1):
        for kept in combinations(indices, kept_size):
            must_use = [i for i in kept if any(current[i].in_use.values())]
            optional = [i for i in kept if i not in must_use]
            for size in range(len(optional) + 1):
                for extra_used in combinations(optional, size):
                    used = must_use + list(extra_used)
                    left = tuple(
                        (n, max(0, c - sum(current[i].layout.get(n, 0) for i in used))) for n, c in demand.items()
                    )
                    new = _exhaustive_min_gpus(name, left) if any(c for _, c in left) else 0
                    if len(used) + new == optimum and new <= len(current) - kept_size + extra:
                        best = len(current) - kept_size if best is None else min(best, len(current) - kept_size)
        if best is not None:
            return best
    raise AssertionError(f"no plan found for {model.name}")


POOL_CASES = [
    ("A30", [{"1g.6gb": 4}, {"2g.12gb": 2}, {"4g.24gb": 1}], [{"1g.6gb": 1}, {}, {}], {"2g.12gb": 3, "1g.6gb": 2}),
    ("A30", [{"4g.24gb": 1}] * 3, [{}, {"4g.24gb": 1}, {}], {"1g.6gb": 5, "4g.24gb": 1}),
    (
        "A100-40GB",
        [{"3g.20gb": 2}, {"1g.5gb": 7}, {"2g.10gb": 3, "1g.5gb": 1}, {"7g.40gb": 1}],
        [{"3g.20gb": 1}, {"1g.5gb": 2}, {}, {}],
        {"3g.20gb": 2, "1g.5gb": 6, "4g.20gb": 1, "2g.10gb": 1},
    ),
    ("A100-40GB", [{"7g.40gb": 1}] * 4, [{}] * 4, {"2g.10gb": 6, "1g.5gb": 3}),
]


@pytest.mark.parametrize(("name", "layouts", "in_use", "demand"), POOL_CASES)
def test_fewest_changes_equal_brute_force(name: str, layouts: list, in_use: list, demand: dict) -> None:
    model = BUILTIN_CATALOG.get(name)
    current = _pool(name, layouts, in_use)
    result = plan(model, demand, current=current)
    wanted = {n: max(c, sum(g.in_use.get(n, 0) for g in current)) for n, c in demand.items()}
    assert result.gpu_count == _exhaustive_min_gpus(name, tuple(wanted.items()))
    assert result.gpus_changed == _fewest_changes_by_brute_force(name, wanted, current)
    hosted: dict[str, int] = {}
    for gpu in result.gpus:
        if not gpu.changed and gpu.gpu_id is not None:
            original = next(g for g in current if g.gpu_id == gpu.gpu_id)
            for n, c in original.in_use.items():
                assert gpu.hosts.get(n, 0) >= c  # what runs on a kept GPU stays there
        for n, c in gpu.hosts.items():
            hosted[n] = hosted.get(n, 0) + c
    assert hosted == {n: c for n, c in wanted.items() if c}
    assert sum(1 for gpu in result.gpus if gpu.used) == result.gpu_count


def test_layout_of_and_candidates_agree() -> None:
    model = BUILTIN_CATALOG.get("H200")
    layout = layout_of(model, {"3g.71gb": 1, "4g.71gb": 1})
    assert layout.placement_strings() == ["4g.71gb@0", "3g.71gb@4"]
    assert all(set(c.counts()) <= {"1g.18gb", "7g.141gb"} for c in candidate_layouts(model, ["1g.18gb", "7g.141gb"]))
