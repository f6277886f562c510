"""gpucore.attribution: DCGM labels to GPU identity and owner, request pod names, sentinels. Pure: no Django."""

from __future__ import annotations

import math

import pytest

from gpucore.attribution import (
    GpuIdentity,
    HourStats,
    Owner,
    clean_value,
    device_minutes_covered,
    gpu_identity,
    hour_is_covered,
    is_blank,
    merge_stats,
    owner_from_labels,
    request_id_from_pod,
    utilization_pct,
    workload_labels,
)

TEAMS = {"team-vision": 1, "team-nlp": 2}
# Verbatim label sets from shared/reference/dcgm/README.md (upstream NVIDIA/dcgm-exporter reports).
MIG_WITH_POD = {
    "gpu": "0",
    "UUID": "GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77",
    "pci_bus_id": "00000000:1A:00.0",
    "device": "nvidia0",
    "modelName": "NVIDIA H100 80GB HBM3",
    "GPU_I_PROFILE": "1g.10gb",
    "GPU_I_ID": "7",
    "Hostname": "gsrh100-074",
    "DCGM_FI_DRIVER_VERSION": "535.129.03",
    "container": "kserve-container",
    "namespace": "model-playground-stg",
    "pod": "text-embedding-predictor-00008-deployment-57946f6c67-vdtjl",
}
IDLE_OLD_EXPORTER = {
    "gpu": "0",
    "UUID": "GPU-55274b56-9033-f166-7723-77088b0ff94d",
    "device": "nvidia0",
    "modelName": "NVIDIA TITAN V",
    "Hostname": "dcgm-exporter-lcxpl",
    "container": "",
    "namespace": "",
    "pod": "",
}
A30_MIG_LOWERCASE_HOST = {
    "gpu": "2",
    "UUID": "GPU-63bc0b91-2265-1b94-831c-15c41fe92675",
    "modelName": "NVIDIA A30",
    "GPU_I_PROFILE": "1g.6gb",
    "GPU_I_ID": "3",
    "hostname": "dcgm-exporter-wwwjh",
    "namespace": "team-nlp",
    "pod": "gpr-41",
}


def test_identity_of_a_mig_instance() -> None:
    assert gpu_identity(MIG_WITH_POD, cluster="prod") == GpuIdentity(
        cluster="prod",
        uuid="GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77",
        model_name="NVIDIA H100 80GB HBM3",
        host="gsrh100-074",
        gpu_index=0,
        mig_instance_id="7",
        mig_profile="1g.10gb",
    )


def test_identity_reads_lower_case_hostname_and_whole_gpus() -> None:
    mig = gpu_identity(A30_MIG_LOWERCASE_HOST, cluster="c")
    assert (mig.host, mig.gpu_index, mig.is_mig_instance, mig.mig_profile) == ("dcgm-exporter-wwwjh", 2, True, "1g.6gb")
    whole = gpu_identity(IDLE_OLD_EXPORTER, cluster="c")
    assert (whole.host, whole.mig_instance_id, whole.mig_profile, whole.is_mig_instance) == (
        "dcgm-exporter-lcxpl",
        "",
        "",
        False,
    )


def test_series_without_uuid_is_not_a_device() -> None:
    assert gpu_identity({"__name__": "up", "job": "dcgm"}, cluster="c") is None


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        ("gpr-12", 12),
        ("gpr-12-abcde", 12),
        ("gpr-12-0", 12),
        ("gpr-123", 123),
        ("gpr-123-abc", 123),
        ("gpr-", None),
        ("gpr-x12", None),
        ("gpr12", None),
        ("my-gpr-12", None),
        ("gpr-12abc", None),
        ("", None),
    ],
)
def test_request_id_from_pod(pod: str, expected: int | None) -> None:
    assert request_id_from_pod(pod) == expected


def test_gpr_123_is_not_request_12() -> None:
    owner = owner_from_labels({"namespace": "team-vision", "pod": "gpr-123"}, team_by_namespace=TEAMS)
    assert owner.request_id == 123 and owner.request_id != 12


def test_plain_labels_attribute_team_and_request() -> None:
    owner = owner_from_labels(A30_MIG_LOWERCASE_HOST, team_by_namespace=TEAMS)
    assert owner == Owner(namespace="team-nlp", pod="gpr-41", team=2, request_id=41)


def test_exported_labels_win_over_the_exporters_own() -> None:
    # honor_labels: false under a ServiceMonitor: namespace/pod are the exporter's, exported_* the workload's.
    labels = {
        "UUID": "GPU-1",
        "namespace": "gpu-operator",
        "pod": "nvidia-dcgm-exporter-x7k2p",
        "exported_namespace": "team-vision",
        "exported_pod": "gpr-12-abcde",
    }
    assert workload_labels(labels) == ("team-vision", "gpr-12-abcde")
    assert owner_from_labels(labels, team_by_namespace=TEAMS) == Owner("team-vision", "gpr-12-abcde", 1, 12)


def test_each_label_is_read_on_its_own() -> None:
    # A target with a namespace label but no pod label renames only the namespace.
    labels = {"namespace": "monitoring", "exported_namespace": "team-nlp", "pod": "gpr-7-q"}
    assert owner_from_labels(labels, team_by_namespace=TEAMS) == Owner("team-nlp", "gpr-7-q", 2, 7)


@pytest.mark.parametrize(
    "labels",
    [
        IDLE_OLD_EXPORTER,  # empty pod labels (older exporters)
        {"UUID": "GPU-1", "Hostname": "n"},  # pod labels absent (current exporters)
        MIG_WITH_POD,  # a namespace no team owns
        {"UUID": "GPU-1", "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p"},  # idle under a monitor
        {"UUID": "GPU-1", "exported_namespace": "research", "exported_pod": "gpr-12-abc"},  # gpr pod, unknown ns
    ],
)
def test_everything_else_is_unallocated(labels: dict[str, str]) -> None:
    owner = owner_from_labels(labels, team_by_namespace=TEAMS)
    assert owner.is_unallocated and owner.team is None and owner.request_id is None


def test_a_request_of_another_team_is_not_attributed() -> None:
    labels = {"namespace": "team-vision", "pod": "gpr-12-abc"}
    assert owner_from_labels(labels, team_by_namespace=TEAMS, request_team={12: 1}).request_id == 12
    foreign = owner_from_labels(labels, team_by_namespace=TEAMS, request_team={12: 2})
    assert (foreign.team, foreign.request_id) == (1, None)
    unknown = owner_from_labels(labels, team_by_namespace=TEAMS, request_team={})
    assert (unknown.team, unknown.request_id) == (1, None)


def test_namespace_owned_by_a_team_without_a_request_pod() -> None:
    owner = owner_from_labels({"namespace": "team-vision", "pod": "notebook-0"}, team_by_namespace=TEAMS)
    assert (owner.team, owner.request_id) == (1, None)


@pytest.mark.parametrize(
    "value",
    [
        9223372036854775794,  # DCGM_INT64_BLANK + 2 ("not supported"), README quick-start
        9223372036854775792.0,
        float(2**63),
        140737488355328.0,  # DCGM_FP64_BLANK
        140737488355330.0,
        2147483632,  # DCGM_INT32_BLANK
        2147483634,
        math.nan,
        math.inf,
        None,
    ],
)
def test_sentinels_are_missing(value: float | None) -> None:
    assert is_blank(value)
    assert clean_value(value) is None


@pytest.mark.parametrize("value", [0.0, 97.0, 61250.0, 512.337, 4335301032.0, 2147483631.0])
def test_real_values_are_kept(value: float) -> None:
    assert clean_value(value) == value


def test_utilization_from_gpu_util_or_gr_engine_active() -> None:
    assert utilization_pct("DCGM_FI_DEV_GPU_UTIL", 97) == 97
    assert utilization_pct("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.912345) == pytest.approx(91.2345)
    assert utilization_pct("DCGM_FI_DEV_GPU_UTIL", 9223372036854775794) is None
    assert utilization_pct("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 140737488355328.0) is None
    with pytest.raises(ValueError, match="not a utilization metric"):
        utilization_pct("DCGM_FI_DEV_FB_USED", 1.0)


def test_merge_weights_averages_and_keeps_peaks() -> None:
    merged = merge_stats(
        [
            HourStats(
                samples=30,
                avg_utilization_pct=80,
                peak_utilization_pct=90,
                avg_memory_used_mib=100,
                peak_memory_used_mib=200,
                energy_kwh=0.2,
            ),
            HourStats(
                samples=10,
                avg_utilization_pct=40,
                peak_utilization_pct=95,
                avg_memory_used_mib=None,
                peak_memory_used_mib=300,
                energy_kwh=0.3,
            ),
            HourStats(samples=0, avg_utilization_pct=1000),  # no sample: ignored
        ]
    )
    assert merged.samples == 40
    assert merged.avg_utilization_pct == pytest.approx(70.0)
    assert (merged.peak_utilization_pct, merged.avg_memory_used_mib, merged.peak_memory_used_mib) == (95, 100, 300)
    assert merged.energy_kwh == 0.3


def test_merge_never_counts_more_than_the_hour() -> None:
    assert merge_stats([HourStats(samples=60), HourStats(samples=60)]).samples == 60
    assert merge_stats([]) == HourStats()


def test_a_device_hour_is_covered_only_when_its_owners_minutes_fill_it() -> None:
    assert hour_is_covered(device_minutes_covered([20, 40]))  # a pod left at minute 20: the idle series took over
    assert device_minutes_covered([31, 30]) == 60  # a hand-over minute scraped under both owners counts once
    assert not hour_is_covered(device_minutes_covered([5]))  # 55 minutes of scrapes missing
    assert not hour_is_covered(device_minutes_covered([59]))
    assert not hour_is_covered(device_minutes_covered([]))
