"""The guide's hardware-vs-software tree (Part 3.4) on measured evidence (gpucore.gpu_triage)."""

from __future__ import annotations

from datetime import UTC, datetime

from gpucore.gpu_triage import GpuSignals, Message, Verdict, triage

HOUR = datetime(2026, 11, 23, 14, tzinfo=UTC)
HEALTHY = GpuSignals(
    gpu_uuid="GPU-a", hostname="node-1", gpu_index=0, driver_version="535.129.03", max_temperature_c=71
)


def keys(branches) -> list[str]:
    return [branch.key for branch in branches]


def test_nothing_measured_wrong_shows_no_branch() -> None:
    assert triage(gpus=[HEALTHY], drivers={"node-1": "535.129.03", "node-2": "535.129.03"}) == ()
    assert triage(gpus=[HEALTHY], messages=[Message("pod", "Running")]) == ()


def test_a_hardware_xid_points_to_the_gpu_with_each_codes_meaning_and_next_step() -> None:
    faulty = GpuSignals(
        gpu_uuid="GPU-b", hostname="node-2", gpu_index=3, xid_codes=(79,), xid_events=1, last_xid_hour=HOUR
    )
    (branch,) = triage(gpus=[HEALTHY, faulty])
    assert (branch.key, branch.verdict) == ("xid", Verdict.HARDWARE)
    assert branch.evidence == ("GPU 3 on node-2: 1 XID event (XID 79), the last in the hour of 2026-11-23 14:00 UTC",)
    (finding,) = branch.xids
    assert finding.xid.name == "GPU has fallen off the bus" and finding.gpus == ("GPU 3 on node-2",)
    assert "drain and reboot the node" in finding.xid.next_step


def test_application_xids_alone_are_a_software_branch_and_mixed_ones_hardware() -> None:
    app = GpuSignals(gpu_uuid="GPU-c", hostname="node-1", gpu_index=1, xid_codes=(31, 13), xid_events=4)
    (branch,) = triage(gpus=[app])
    assert branch.verdict is Verdict.SOFTWARE
    assert [f.xid.code for f in branch.xids] == [13, 31]
    ecc = GpuSignals(gpu_uuid="GPU-d", hostname="node-1", gpu_index=2, xid_codes=(48,), xid_events=1)
    (mixed,) = triage(gpus=[app, ecc])
    assert mixed.verdict is Verdict.HARDWARE and [f.xid.code for f in mixed.xids] == [13, 31, 48]


def test_driver_mismatch_between_nodes_or_in_a_message() -> None:
    (branch,) = triage(gpus=[HEALTHY], drivers={"node-1": "535.129.03", "node-3": "550.54.15"})
    assert (branch.key, branch.verdict) == ("driver", Verdict.SOFTWARE)
    assert branch.evidence == ("Nodes run different NVIDIA drivers: 535.129.03 on node-1; 550.54.15 on node-3",)
    said = Message("pod gpr-7-0", "Failed to initialize NVML: Driver/library version mismatch")
    (branch,) = triage(gpus=[HEALTHY], messages=[said])
    assert branch.evidence == ("pod gpr-7-0: Failed to initialize NVML: Driver/library version mismatch",)


def test_temperature_above_83_is_hardware_and_83_is_not() -> None:
    at_limit = GpuSignals(gpu_uuid="GPU-e", hostname="node-1", gpu_index=0, max_temperature_c=83.0)
    assert triage(gpus=[at_limit]) == ()
    hot = GpuSignals(gpu_uuid="GPU-f", hostname="node-1", gpu_index=1, max_temperature_c=88.4, hottest_hour=HOUR)
    (branch,) = triage(gpus=[at_limit, hot])
    assert (branch.key, branch.verdict) == ("temperature", Verdict.HARDWARE)
    assert branch.evidence == ("GPU 1 on node-1 reached 88 °C (hour of 2026-11-23 14:00 UTC)",)


def test_cuda_errors_quote_the_line_that_names_them() -> None:
    log = "epoch 3\nRuntimeError: CUDA error: an illegal memory access was encountered\nexiting"
    (branch,) = triage(messages=[Message("request #7", log)])
    assert (branch.key, branch.verdict) == ("cuda", Verdict.SOFTWARE)
    assert branch.evidence == ("request #7: RuntimeError: CUDA error: an illegal memory access was encountered",)
    long = "x" * 500 + " CUDA out of memory. Tried to allocate 2.00 GiB " + "y" * 500
    (branch,) = triage(messages=[Message("pod", long)])
    assert "CUDA out of memory" in branch.evidence[0] and len(branch.evidence[0]) < 260


def test_every_branch_that_applies_in_the_trees_order() -> None:
    hot_faulty = GpuSignals(
        gpu_uuid="GPU-g",
        hostname="node-2",
        gpu_index=0,
        driver_version="550.54.15",
        xid_codes=(48,),
        xid_events=2,
        max_temperature_c=90,
    )
    branches = triage(
        gpus=[HEALTHY, hot_faulty],
        messages=[Message("pod", "CUDA error: uncorrectable ECC error encountered")],
    )
    assert keys(branches) == ["xid", "driver", "temperature", "cuda"]


def test_the_container_runtime_leaf_only_for_a_failing_workload_with_no_other_branch() -> None:
    assert triage(gpus=[HEALTHY]) == ()
    (leaf,) = triage(gpus=[HEALTHY], failing=True)
    assert (leaf.key, leaf.verdict) == ("runtime", Verdict.RUNTIME)
    assert keys(triage(messages=[Message("pod", "CUDA error: unspecified launch failure")], failing=True)) == ["cuda"]
