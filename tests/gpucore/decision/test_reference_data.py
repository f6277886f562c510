"""catalog.py against the gathered reference data: shared/reference/mig_profiles.yaml and gpu-catalog.csv.

The folder is ``shared/`` beside the repository root (``<root>/../shared/reference``); CI clones it there, so a
missing folder is a failure, not a skip.
"""

import csv
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpucore.decision import BUILTIN_CATALOG, MigProfile

# tests/allocations/decision/<this file>: parents[3] is the repository root; shared/ sits beside it.
pytestmark = pytest.mark.reference

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference"

# Catalog name -> key in mig_profiles.yaml, and -> the gpu-catalog.csv row for the form factor the catalog models
# (its product label: SXM4 / SXM5 / SXM boards).
YAML_KEYS = {
    "A100-40GB": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100-80GB": "H100-80GB",
    "H200": "H200-141GB",
    "A30": "A30-24GB",
}
CSV_ROWS = {
    "A100-40GB": "A100-40GB-SXM4",
    "A100-80GB": "A100-80GB-SXM4",
    "H100-80GB": "H100-80GB-SXM5",
    "H200": "H200-141GB-SXM",
    "A30": "A30",
    "L4": "L4",
    "T4": "T4",
}
NOT_IN_REFERENCE = {"V100-32GB"}  # catalog notes: TDP from NVIDIA's datasheet, not in the reference data


@pytest.fixture(scope="module")
def mig_reference():
    path = REFERENCE / "mig_profiles.yaml"
    assert path.is_file(), f"{path} is missing: the shared/ folder must sit beside the repository root"
    return yaml.safe_load(path.read_text())["gpus"]


@pytest.fixture(scope="module")
def csv_reference():
    path = REFERENCE / "gpu-catalog.csv"
    assert path.is_file(), f"{path} is missing: the shared/ folder must sit beside the repository root"
    with path.open(newline="") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def test_the_reference_folder_is_where_the_tests_look():
    assert REFERENCE.parent.name == "shared"
    assert (REFERENCE.parents[1] / Path(__file__).resolve().parents[3].name).is_dir()
    assert REFERENCE.is_dir(), f"{REFERENCE} is missing"


def test_every_catalog_model_is_cross_checked():
    names = set(BUILTIN_CATALOG.names())
    assert names == set(CSV_ROWS) | NOT_IN_REFERENCE
    assert {m.name for m in BUILTIN_CATALOG if m.mig_capable} == set(YAML_KEYS)


@pytest.mark.parametrize("name", sorted(YAML_KEYS))
def test_mig_geometry_matches_the_profile_tables(name, mig_reference):
    model = BUILTIN_CATALOG.get(name)
    reference = mig_reference[YAML_KEYS[name]]
    assert model.memory_gb == reference["total_memory_gb"]
    assert model.mig_compute_slices == reference["compute_slices"]
    assert model.mig_memory_slices == reference["memory_slices"]
    assert max(p.max_instances for p in model.mig_profiles) == reference["max_mig_instances"]

    expected = {row["profile"]: row for row in reference["profiles"]}
    assert [p.name for p in model.mig_profiles] == list(expected)
    for profile in model.mig_profiles:
        row = expected[profile.name]
        compute, memory = MigProfile.parse_name(profile.name.removesuffix("+me"))
        assert (profile.compute_slices, profile.memory_gb) == (row["compute_slices"], memory), profile.name
        assert compute == row["compute_slices"], profile.name
        assert profile.memory_slices == row["memory_slices"], profile.name
        assert profile.max_instances == row["max_instances"], profile.name
        assert profile.placement_starts == tuple(row["placement_starts"]), profile.name
        if "placement_size_memory_slices" in row:
            assert profile.memory_slices == row["placement_size_memory_slices"], profile.name


@pytest.mark.parametrize("name", sorted(YAML_KEYS))
def test_recommendable_profiles_leave_out_media_two_slice_1g_and_full(name, mig_reference):
    model = BUILTIN_CATALOG.get(name)
    rows = mig_reference[YAML_KEYS[name]]["profiles"]
    expected = [
        row["profile"]
        for row in rows
        if not row["profile"].endswith("+me")
        and not (row["compute_slices"] == 1 and row["memory_slices"] > 1)
        and row["compute_slices"] < mig_reference[YAML_KEYS[name]]["compute_slices"]
    ]
    assert sorted(p.name for p in model.recommendable_profiles()) == sorted(expected)
    memories = [p.memory_gb for p in model.recommendable_profiles()]
    assert memories == sorted(memories)


@pytest.mark.parametrize("name", sorted(CSV_ROWS))
def test_models_match_the_gpu_catalog_csv(name, csv_reference):
    model = BUILTIN_CATALOG.get(name)
    row = csv_reference[CSV_ROWS[name]]
    assert model.memory_gb == int(row["memory_gb"])
    assert model.tdp_watts == int(row["tdp_watts"])
    assert model.mig_capable is (row["mig_capable"] == "yes")
    max_instances = max((p.max_instances for p in model.mig_profiles), default=0)
    assert max_instances == int(row["max_mig_instances"])
    assert model.purchase_price_usd == (Decimal(row["typical_purchase_usd"]) if row["typical_purchase_usd"] else None)
    assert model.list_hourly_usd == (
        Decimal(row["typical_cloud_hourly_usd"]) if row["typical_cloud_hourly_usd"] else None
    )
