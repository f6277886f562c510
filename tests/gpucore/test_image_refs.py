"""Container image references (gpucore.image_refs): what registries accept, pinned by a tag or a digest."""

import pytest

from gpucore.image_refs import image_reference_problem

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/pytorch:24.05-py3",
        "registry.example.com:5000/ml/train_job:2.4-cuda12",
        "localhost:5000/notebook:v1",
        "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
        f"nvcr.io/nvidia/tritonserver@{DIGEST}",
        f"nvcr.io/nvidia/tritonserver:24.05-py3@{DIGEST}",
    ],
)
def test_references_registries_accept(image):
    assert image_reference_problem(image) is None


@pytest.mark.parametrize(
    ("image", "words"),
    [
        ("not an image!! ;rm -rf /", "is not a container image reference"),
        ("nvcr.io/NVIDIA/pytorch:24.05", "is not a container image reference"),  # uppercase path
        ("nvcr.io/nvidia/pytorch:", "is not a container image reference"),
        ("nvcr.io/nvidia/pytorch:24.05 && curl x", "is not a container image reference"),
        ("nvcr.io/nvidia/pytorch", "Pin the image with a tag or a digest"),
        ("a" * 256, "at most 255 characters"),
    ],
)
def test_references_that_are_refused_say_why(image, words):
    assert words in image_reference_problem(image)
