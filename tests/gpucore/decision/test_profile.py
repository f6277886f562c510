"""WorkloadProfile: contract defaults, parsing of raw input, and per-field validation errors in DRF's shape."""

import dataclasses
import json
from decimal import Decimal

import pytest

from gpucore.decision import ProfileError, WorkloadProfile
from gpucore.vocabulary import WorkloadType

CONTRACT_FIELDS = (
    "workload_type",
    "gpu_memory_gb",
    "gpu_count",
    "replicas",
    "latency_sensitive",
    "latency_p99_ms",
    "isolation_required",
    "expected_utilization_pct",
    "sla_tier",
    "gpu_model",
    "duration_hours",
)


def errors_of(data):
    with pytest.raises(ProfileError) as caught:
        WorkloadProfile.from_mapping(data)
    return caught.value.errors


def test_fields_are_the_design_contract_in_order():
    assert WorkloadProfile.field_names() == CONTRACT_FIELDS


def test_workload_types_are_the_five_of_the_matrix():
    assert [t.value for t in WorkloadType] == [
        "training",
        "batch_inference",
        "realtime_inference",
        "development",
        "hpc_simulation",
    ]


def test_defaults_follow_the_contract():
    profile = WorkloadProfile.from_mapping({"workload_type": "training", "gpu_memory_gb": 24})
    assert profile.gpu_memory_gb == Decimal(24)
    assert isinstance(profile.gpu_memory_gb, Decimal)
    assert profile.gpu_count == 1
    assert profile.replicas == 1
    assert profile.latency_sensitive is False
    assert profile.latency_p99_ms is None
    assert profile.isolation_required is False
    assert profile.expected_utilization_pct is None
    assert profile.sla_tier is None
    assert profile.gpu_model is None
    assert profile.duration_hours is None


@pytest.mark.parametrize(
    ("workload_type", "expected"),
    [
        (WorkloadType.TRAINING, False),
        (WorkloadType.BATCH_INFERENCE, False),
        (WorkloadType.REALTIME_INFERENCE, True),
        (WorkloadType.DEVELOPMENT, False),
        (WorkloadType.HPC_SIMULATION, False),
    ],
)
def test_latency_sensitive_defaults_to_true_only_for_realtime_inference(workload_type, expected):
    assert WorkloadProfile(workload_type, Decimal(8)).latency_sensitive is expected


@pytest.mark.parametrize("explicit", [True, False])
def test_an_explicit_latency_sensitive_is_kept(explicit):
    for workload_type in WorkloadType:
        assert WorkloadProfile(workload_type, Decimal(8), latency_sensitive=explicit).latency_sensitive is explicit


def test_strings_are_parsed_for_numbers_and_booleans():
    profile = WorkloadProfile.from_mapping(
        {
            "workload_type": " Batch_Inference ",
            "gpu_memory_gb": "10.5",
            "gpu_count": "2",
            "replicas": "3.0",
            "latency_sensitive": "yes",
            "latency_p99_ms": "25",
            "isolation_required": "0",
            "expected_utilization_pct": "55.5",
            "sla_tier": " tier2_batch ",
            "gpu_model": "a100",
            "duration_hours": "48",
        }
    )
    assert profile == WorkloadProfile(
        workload_type=WorkloadType.BATCH_INFERENCE,
        gpu_memory_gb=Decimal("10.5"),
        gpu_count=2,
        replicas=3,
        latency_sensitive=True,
        latency_p99_ms=Decimal(25),
        isolation_required=False,
        expected_utilization_pct=Decimal("55.5"),
        sla_tier="tier2_batch",
        gpu_model="a100",
        duration_hours=Decimal(48),
    )


def test_json_floats_become_the_decimal_they_print_as():
    profile = WorkloadProfile.from_mapping({"workload_type": "development", "gpu_memory_gb": 5.01})
    assert profile.gpu_memory_gb == Decimal("5.01")


@pytest.mark.parametrize("value", ["true", "True", "on", "y", "1", 1, True])
def test_true_spellings(value):
    assert WorkloadProfile.from_mapping({"workload_type": "training", "gpu_memory_gb": 1, "isolation_required": value})
    assert (
        WorkloadProfile.from_mapping(
            {"workload_type": "training", "gpu_memory_gb": 1, "isolation_required": value}
        ).isolation_required
        is True
    )


@pytest.mark.parametrize("value", ["false", "FALSE", "off", "n", "0", 0, False])
def test_false_spellings(value):
    profile = WorkloadProfile.from_mapping(
        {"workload_type": "realtime_inference", "gpu_memory_gb": 1, "latency_sensitive": value}
    )
    assert profile.latency_sensitive is False


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("workload_type", "inference", 'is not a valid choice. Choose one of "training", "batch_inference"'),
        ("workload_type", 3, "is not a valid choice"),
        ("gpu_memory_gb", 0, "greater than 0"),
        ("gpu_memory_gb", "-1", "greater than 0"),
        ("gpu_memory_gb", "ten", "A valid number is required."),
        ("gpu_memory_gb", True, "A valid number is required."),
        ("gpu_memory_gb", "NaN", "A valid number is required."),
        ("gpu_memory_gb", float("inf"), "A valid number is required."),
        ("gpu_memory_gb", [8], "A valid number is required."),
        ("gpu_memory_gb", "0.0000001", "no more than 6 decimal places"),
        ("gpu_memory_gb", 10_001, "No replica needs more than 10000 GB of GPU memory"),
        ("gpu_memory_gb", 1e9, "No replica needs more than 10000 GB of GPU memory"),
        ("gpu_count", 1_025, "less than or equal to 1024"),
        ("replicas", 10_001, "less than or equal to 10000"),
        ("gpu_count", 0, "greater than or equal to 1"),
        ("gpu_count", "2.5", "A valid integer is required."),
        ("gpu_count", True, "A valid integer is required."),
        ("gpu_count", "two", "A valid integer is required."),
        ("replicas", -3, "greater than or equal to 1"),
        ("replicas", 1.5, "A valid integer is required."),
        ("latency_sensitive", "maybe", "Must be a valid boolean."),
        ("latency_sensitive", 2, "Must be a valid boolean."),
        ("latency_p99_ms", 0, "greater than 0"),
        ("isolation_required", "sure", "Must be a valid boolean."),
        ("isolation_required", None, "may not be null"),
        ("expected_utilization_pct", "100.01", "less than or equal to 100"),
        ("expected_utilization_pct", -1, "greater than or equal to 0"),
        ("sla_tier", 1, "Not a valid string."),
        ("gpu_model", ["A100"], "Not a valid string."),
        ("gpu_model", "x" * 101, "no more than 100 characters"),
        ("duration_hours", "-2", "greater than 0"),
        ("gpu_count", None, "may not be null"),
    ],
)
def test_each_field_reports_its_own_error(field, value, message):
    data = {"workload_type": "training", "gpu_memory_gb": 8, field: value}
    errors = errors_of(data)
    assert list(errors) == [field]
    assert len(errors[field]) == 1
    assert message in errors[field][0]


@pytest.mark.parametrize(("field", "value"), [("expected_utilization_pct", 0), ("expected_utilization_pct", 100)])
def test_utilization_bounds_are_inclusive(field, value):
    profile = WorkloadProfile.from_mapping({"workload_type": "training", "gpu_memory_gb": 8, field: value})
    assert getattr(profile, field) == Decimal(value)


def test_all_errors_are_collected_at_once():
    errors = errors_of({"gpu_memory_gb": "-5", "gpu_count": "many", "colour": "blue", "replicas": 0})
    assert set(errors) == {"workload_type", "gpu_memory_gb", "gpu_count", "colour", "replicas"}
    assert errors["workload_type"] == ["This field is required."]
    assert errors["colour"][0].startswith("Unknown field. Known fields: workload_type, gpu_memory_gb")
    assert all(isinstance(messages, list) and messages for messages in errors.values())


def test_missing_required_fields_say_required_and_null_ones_say_null():
    assert errors_of({}) == {
        "workload_type": ["This field is required."],
        "gpu_memory_gb": ["This field is required."],
    }
    assert errors_of({"workload_type": None, "gpu_memory_gb": None}) == {
        "workload_type": ["This field may not be null."],
        "gpu_memory_gb": ["This field may not be null."],
    }


def test_input_that_is_not_a_mapping_is_a_non_field_error():
    assert errors_of(["training", 8]) == {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}


def test_blank_optional_fields_mean_not_given():
    profile = WorkloadProfile.from_mapping(
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4, "gpu_model": " ", "latency_sensitive": ""}
    )
    assert profile.gpu_model is None
    assert profile.latency_sensitive is True


def test_the_constructor_validates_too():
    with pytest.raises(ProfileError) as caught:
        WorkloadProfile(workload_type="cooking", gpu_memory_gb=Decimal(0), gpu_count=0)
    assert set(caught.value.errors) == {"workload_type", "gpu_memory_gb", "gpu_count"}


def test_profile_error_is_a_value_error_with_a_readable_message():
    error = ProfileError({"gpu_memory_gb": ["Too big."], "gpu_model": ["Unknown."]})
    assert isinstance(error, ValueError)
    assert str(error) == "gpu_memory_gb: Too big.; gpu_model: Unknown."
    assert error.errors == {"gpu_memory_gb": ["Too big."], "gpu_model": ["Unknown."]}


def test_profile_is_frozen_and_hashable():
    profile = WorkloadProfile(WorkloadType.TRAINING, Decimal(8))
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.gpu_count = 2
    assert hash(profile) == hash(WorkloadProfile(WorkloadType.TRAINING, Decimal("8.0")))


def test_to_dict_is_json_and_round_trips():
    profile = WorkloadProfile.from_mapping(
        {
            "workload_type": "realtime_inference",
            "gpu_memory_gb": "5.01",
            "replicas": 3,
            "latency_p99_ms": 12,
            "sla_tier": "tier1_realtime",
        }
    )
    data = profile.to_dict()
    assert data == {
        "workload_type": "realtime_inference",
        "gpu_memory_gb": 5.01,
        "gpu_count": 1,
        "replicas": 3,
        "latency_sensitive": True,
        "latency_p99_ms": 12,
        "isolation_required": False,
        "expected_utilization_pct": None,
        "sla_tier": "tier1_realtime",
        "gpu_model": None,
        "duration_hours": None,
    }
    assert WorkloadProfile.from_mapping(json.loads(json.dumps(data))) == profile


@pytest.mark.parametrize(
    "data",
    [
        {"workload_type": "training", "gpu_memory_gb": 40},
        {"workload_type": "realtime_inference", "gpu_memory_gb": 7.5, "gpu_count": 2, "replicas": 3},
        {"workload_type": " Development ", "gpu_memory_gb": "12.250", "gpu_count": "2", "replicas": 2.0},
        {"workload_type": "batch_inference", "gpu_memory_gb": Decimal("5"), "latency_sensitive": "yes"},
        {"workload_type": "hpc_simulation", "gpu_memory_gb": 80, "isolation_required": 1, "sla_tier": " tier1 "},
        {"workload_type": "development", "gpu_memory_gb": 3, "gpu_model": "", "sla_tier": None, "latency_p99_ms": ""},
        {"workload_type": "realtime_inference", "gpu_memory_gb": 1, "latency_sensitive": None, "duration_hours": 48},
        {"workload_type": "training", "gpu_memory_gb": 1, "expected_utilization_pct": "55.5", "latency_p99_ms": 20},
    ],
)
def test_from_mapping_gives_what_the_constructor_gives(data):
    parsed, constructed = WorkloadProfile.from_mapping(data), WorkloadProfile(**data)
    for name in WorkloadProfile.field_names():
        value, expected = getattr(parsed, name), getattr(constructed, name)
        assert (value, type(value)) == (expected, type(expected)), name
