"""GPU Feature Discovery's node labels against a pool's configuration (gpucore.gfd_labels): each disagreement named
with its fix; labels GFD has not written are not judged."""

from gpucore.gfd_labels import DEDICATED, MIG, TIME_SLICING, PoolExpectation, node_problems, pool_problems

A100 = "NVIDIA-A100-SXM4-40GB"
L4 = "NVIDIA-L4"


def words(problems):
    return [p.problem for p in problems]


def test_a_mig_node_that_agrees_has_no_problem():
    labels = {
        "nvidia.com/gpu.product": A100,
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config.state": "success",
    }
    assert node_problems(PoolExpectation(MIG, A100), labels, {"nvidia.com/mig-3g.20gb": 2}) == []


def test_single_strategy_and_no_mig_resources():
    labels = {"nvidia.com/gpu.product": f"{A100}-MIG-INVALID", "nvidia.com/mig.strategy": "single"}
    problems = node_problems(PoolExpectation(MIG, A100), labels, {"nvidia.com/gpu": 0})
    assert words(problems) == [
        "the nodes run the MIG strategy single, the portal needs mixed",
        "the nodes advertise no nvidia.com/mig-* resources, so no MIG pod can be scheduled",
    ]
    assert "mig.strategy=mixed" in problems[0].fix


def test_a_failed_mig_config_is_named():
    labels = {
        "nvidia.com/gpu.product": A100,
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config.state": "failed",
    }
    problems = node_problems(PoolExpectation(MIG, A100), labels, {})
    assert "the MIG manager failed to apply the nodes' MIG config" in words(problems)[0]
    assert "migManager.config" in problems[0].fix


def test_time_slicing_replicas_and_product_must_agree():
    labels = {"nvidia.com/gpu.product": f"{L4}-SHARED", "nvidia.com/gpu.replicas": "2"}
    assert words(node_problems(PoolExpectation(TIME_SLICING, L4, 4), labels, {"nvidia.com/gpu": 8})) == [
        "the nodes share each GPU 2 way(s), the pool is configured for 4"
    ]
    assert node_problems(PoolExpectation(TIME_SLICING, L4, 2), labels, {"nvidia.com/gpu": 8}) == []
    wrong = node_problems(PoolExpectation(DEDICATED, A100), {"nvidia.com/gpu.product": L4}, {"nvidia.com/gpu": 1})
    assert words(wrong) == [f"GPU Feature Discovery reports {L4}, the pool is configured for {A100}"]


def test_unlabelled_nodes_are_not_judged_and_problems_group_by_node():
    assert node_problems(PoolExpectation(TIME_SLICING, L4, 4), {}, {"nvidia.com/gpu": 4}) == []
    single = node_problems(
        PoolExpectation(MIG, A100), {"nvidia.com/mig.strategy": "single"}, {"nvidia.com/mig-1g.5gb": 7}
    )
    grouped = pool_problems([("b", single), ("a", single), ("c", [])])
    assert grouped == [{"problem": single[0].problem, "fix": single[0].fix, "nodes": ["a", "b"]}]
