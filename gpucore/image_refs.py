"""Container image references as registries read them: ``[registry[:port]/]path[:tag][@digest]``. Pure: no Django.

The grammar is the distribution project's (``reference/regexp.go``): lowercase path components separated by ``/``,
an optional registry host first, a tag of word characters, dots and dashes (at most 128), a digest
``algorithm:hex``. The portal also asks for a tag or a digest, so that what runs is the image the approver saw
rather than whatever ``latest`` is when a node pulls it.
"""

from __future__ import annotations

import re

_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_HOST}/)?{_PATH_PART}(?:/{_PATH_PART})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"^(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$")
MAX_LENGTH = 255
EXAMPLE = "nvcr.io/nvidia/pytorch:24.05-py3"


def image_reference_problem(image: str) -> str | None:
    """Why ``image`` is not a pullable, pinned image reference; None when it is."""
    if len(image) > MAX_LENGTH:
        return f"An image reference has at most {MAX_LENGTH} characters."
    match = _REFERENCE.match(image)
    if match is None:
        return (
            f"'{image[:80]}' is not a container image reference: give registry/name:tag or registry/name@sha256:..., "
            f"e.g. {EXAMPLE} (lowercase name; no spaces or shell characters)."
        )
    if match["tag"] is None and match["digest"] is None:
        return f"Pin the image with a tag or a digest ({image}:<tag> or {image}@sha256:...), e.g. {EXAMPLE}."
    return None
