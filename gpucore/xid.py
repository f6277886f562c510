"""NVIDIA XID errors: what the common codes mean, where they usually come from, and how DCGM minutes become events.

Pure. ``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding "the value of the last XID error encountered" (dcgm-exporter's
default counters, docs/reference-sources.md#dcgm): 0 until a GPU reports one, then the code. The ingest reads it at
one-minute points and keeps, per GPU and hour, the codes seen, the last one, the minutes it showed and the *events* (a
minute whose code differs from the minute before: a gauge that stays at 79 for an hour is one event, not sixty).

The meanings and likely causes are a short summary of NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors),
limited to the codes a data-centre GPU platform meets in practice; any other code is shown by number and treated as
the guide's tree treats every XID: a hardware suspect until shown otherwise.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

MINUTE = 60
HOUR = 3600


class Cause(enum.StrEnum):
    """Where an XID usually comes from."""

    HARDWARE = "hardware"  # the GPU, its memory, NVLink or the PCIe bus: drain the node, reset or replace the GPU
    SOFTWARE = "software"  # the application (a bad address, a killed process) or the driver: fix or restart the job
    EITHER = "either"  # the driver or firmware, or failing hardware under it: restart, then watch whether it recurs


@dataclass(frozen=True, slots=True)
class XidCode:
    """One XID code: its number, NVIDIA's short name for it, the usual cause and the next step to take."""

    code: int
    name: str
    cause: Cause
    next_step: str


def _code(code: int, name: str, cause: Cause, next_step: str) -> tuple[int, XidCode]:
    return code, XidCode(code, name, cause, next_step)


CATALOG: dict[int, XidCode] = dict(
    (
        _code(
            13,
            "Graphics engine exception",
            Cause.SOFTWARE,
            "Usually the application (an out-of-range access or illegal instruction): run it under "
            "compute-sanitizer; if it recurs with other code on this GPU only, treat the GPU as suspect.",
        ),
        _code(
            31,
            "GPU memory page fault",
            Cause.SOFTWARE,
            "Usually the application touched an invalid GPU address: check the job's CUDA errors and run it under "
            "compute-sanitizer.",
        ),
        _code(
            32,
            "Invalid or corrupted push buffer stream",
            Cause.EITHER,
            "Driver or PCIe trouble: check the node's PCIe errors (dmesg) and the driver version.",
        ),
        _code(
            43,
            "GPU stopped processing",
            Cause.SOFTWARE,
            "The channel of a faulting application was stopped; the GPU stays usable. Restart the job and look at "
            "its own error first.",
        ),
        _code(
            45,
            "Preemptive cleanup, due to previous errors",
            Cause.SOFTWARE,
            "The driver cleaned up after a killed or failed process; look for another XID just before it.",
        ),
        _code(
            48,
            "Double-bit ECC error",
            Cause.HARDWARE,
            "Uncorrectable memory error: drain the node, reset the GPU; if it recurs, replace the GPU.",
        ),
        _code(
            61,
            "Internal micro-controller breakpoint or warning",
            Cause.EITHER,
            "Firmware trouble: reset the GPU and update the driver; report it to NVIDIA if it recurs.",
        ),
        _code(
            62,
            "Internal micro-controller halt",
            Cause.EITHER,
            "Firmware halted: drain the node and reset the GPU; if it recurs, replace the GPU.",
        ),
        _code(
            63,
            "ECC page retirement or row remapping recorded",
            Cause.HARDWARE,
            "Memory rows were remapped: drain the node and reset the GPU to apply the remapping.",
        ),
        _code(
            64,
            "ECC page retirement or row remapping failed",
            Cause.HARDWARE,
            "The GPU could not remap a failing row: drain the node and replace the GPU.",
        ),
        _code(
            74,
            "NVLink error",
            Cause.HARDWARE,
            "Check the links (nvidia-smi nvlink -s): drain the node, reset the GPUs; reseat or replace on recurrence.",
        ),
        _code(
            79,
            "GPU has fallen off the bus",
            Cause.HARDWARE,
            "The GPU vanished from PCIe (power, thermal or board fault): drain and reboot the node, then check "
            "power, cooling and the PCIe slot.",
        ),
        _code(
            92,
            "High single-bit ECC error rate",
            Cause.HARDWARE,
            "Corrected errors pile up: schedule a GPU reset and watch for XID 48/63.",
        ),
        _code(
            94,
            "Contained ECC error",
            Cause.HARDWARE,
            "The affected application was stopped, others continue: restart the job; reset the GPU when it is free.",
        ),
        _code(
            95,
            "Uncontained ECC error",
            Cause.HARDWARE,
            "Every application on the GPU is affected: drain the node and reset the GPU.",
        ),
        _code(
            119,
            "GSP RPC timeout",
            Cause.EITHER,
            "The GPU System Processor stopped answering: drain the node, reset the GPU, and check the driver version.",
        ),
        _code(
            120,
            "GSP error",
            Cause.EITHER,
            "GPU System Processor firmware error: reset the GPU and update the driver.",
        ),
    )
)


def describe(code: int) -> XidCode:
    """What an XID code means; a code outside the catalog is a hardware suspect, as the guide's tree has it."""
    return CATALOG.get(
        code,
        XidCode(
            code,
            f"XID {code}",
            Cause.HARDWARE,
            "Look the code up in NVIDIA's Xid catalog and read the node's kernel log (dmesg | grep -i xid).",
        ),
    )


@dataclass(frozen=True, slots=True)
class XidHour:
    """One GPU's XID reports in one hour: minutes showing a code, events (code changes), the codes and the last."""

    minutes: int
    events: int
    codes: tuple[int, ...]
    last: int


def xid_hours(points: Iterable[tuple[float, float]], *, start: float) -> dict[int, XidHour]:
    """Per hour (unix seconds of its start), the XID summary of one GPU's minute points from ``start`` on.

    ``points`` are (unix time, code) at one-minute steps, only where the code was non-zero, in any order; a point
    before ``start`` is context only (it tells whether the first minute continues an older code).
    """
    by_minute: dict[int, int] = {}
    for timestamp, value in points:
        if int(value) > 0:
            by_minute[round(timestamp) // MINUTE] = int(value)
    minutes: dict[int, int] = defaultdict(int)
    events: dict[int, int] = defaultdict(int)
    codes: dict[int, list[int]] = defaultdict(list)
    last: dict[int, int] = {}
    for minute in sorted(by_minute):
        if minute * MINUTE < start:
            continue
        code, hour = by_minute[minute], minute * MINUTE // HOUR * HOUR
        minutes[hour] += 1
        if by_minute.get(minute - 1) != code:
            events[hour] += 1
        if code not in codes[hour]:
            codes[hour].append(code)
        last[hour] = code
    return {
        hour: XidHour(minutes=minutes[hour], events=events[hour], codes=tuple(codes[hour]), last=last[hour])
        for hour in last
    }
