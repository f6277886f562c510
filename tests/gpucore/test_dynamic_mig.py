"""Dynamic MIG as a policy: a new instance goes on a partitioned GPU it fills best, a whole GPU is opened only when no
partitioned one can host it, and the choice keeps fewer GPUs fragmented than first-fit onto empty GPUs."""

from __future__ import annotations

import pytest

from gpucore.catalog import BUILTIN_CATALOG, CatalogError
from gpucore.mig_planner.dynamic import choose_gpu, fragmented_gpus

A100 = BUILTIN_CATALOG.get("A100-40GB")


def test_a_partitioned_gpu_is_filled_before_a_whole_one_is_opened() -> None:
    gpus = [{}, {"3g.20gb": 1}, {}]
    choice = choose_gpu(A100, gpus, "1g.5gb")
    assert choice is not None and choice.gpu == 1 and not choice.opens_whole_gpu


def test_the_best_fit_among_partitioned_gpus_wins() -> None:
    # GPU 0 has 4 of 8 memory slices free, GPU 1 has 1 free: a 1g.5gb fills GPU 1 exactly.
    gpus = [{"3g.20gb": 1}, {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}]
    choice = choose_gpu(A100, gpus, "1g.5gb")
    assert choice is not None and (choice.gpu, choice.memory_slices_left) == (1, 0)


def test_a_whole_gpu_is_opened_only_when_no_partitioned_one_fits_and_none_left_is_none() -> None:
    full = {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}
    choice = choose_gpu(A100, [full, {}], "3g.20gb")
    assert choice is not None and choice.gpu == 1 and choice.opens_whole_gpu
    assert choose_gpu(A100, [full, full], "1g.5gb") is None
    with pytest.raises(CatalogError):
        choose_gpu(A100, [{}], "9g.99gb")


def test_the_policy_keeps_fewer_gpus_fragmented_than_spreading() -> None:
    # Eight 1g.5gb and two 3g.20gb arriving one by one on four GPUs.
    arrivals = ["1g.5gb", "3g.20gb", "1g.5gb", "1g.5gb", "3g.20gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"]
    gpus: list[dict[str, int]] = [{} for _ in range(4)]
    for profile in arrivals:
        choice = choose_gpu(A100, gpus, profile)
        assert choice is not None, profile
        gpus[choice.gpu][profile] = gpus[choice.gpu].get(profile, 0) + 1
    assert fragmented_gpus(gpus) == 2  # two GPUs stay whole
    assert sum(sum(counts.values()) for counts in gpus) == len(arrivals)


def test_a_claim_on_chosen_gpus_selects_only_slices_of_those_gpus() -> None:
    from gpucore.manifests.dra import DraTarget, render_resource_claim_template
    from gpucore.vocabulary import Strategy
    from tests.gpucore.manifests.dra_samples import A100_40, DEVICES, matching_devices
    from tests.gpucore.manifests.dra_validation import validate_dra

    template = render_resource_claim_template(
        request_id=7,
        team_slug="vision",
        namespace="team-vision",
        strategy=Strategy.MIG,
        model=A100,
        quantity=1,
        mig_profile="3g.20gb",
        time_slice_replicas=None,
        target=DraTarget(product_name=A100_40),
        parent_gpus=["GPU-00000003"],
    )
    validate_dra(template)
    chosen = matching_devices(template, DEVICES)
    assert chosen and {(d.parent_uuid, d.profile, d.node) for d in chosen} == {
        ("GPU-00000003", "3g.20gb", "a100-mig-node-1")
    }
    # Without a choice the same claim may be given the slice of any of the eight GPUs.
    anywhere = render_resource_claim_template(
        request_id=7,
        team_slug="vision",
        namespace="team-vision",
        strategy=Strategy.MIG,
        model=A100,
        quantity=1,
        mig_profile="3g.20gb",
        time_slice_replicas=None,
        target=DraTarget(product_name=A100_40),
    )
    assert len({d.parent_uuid for d in matching_devices(anywhere, DEVICES)}) == 8
