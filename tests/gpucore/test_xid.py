"""XID codes and the minute-to-event summary of ``DCGM_FI_DEV_XID_ERRORS`` (gpucore.xid)."""

from __future__ import annotations

from gpucore.xid import Cause, describe, xid_hours

H = 1_800_000_000 // 3600 * 3600  # an hour start


def at(minute: int) -> float:
    return float(H + 60 * minute)


def test_a_gauge_that_stays_on_one_code_is_one_event() -> None:
    summary = xid_hours([(at(m), 79) for m in range(5, 60)], start=H)
    assert summary[H].events == 1 and summary[H].minutes == 55 and summary[H].codes == (79,)


def test_changes_and_gaps_are_events_in_first_seen_order() -> None:
    points = [(at(1), 13), (at(2), 13), (at(4), 13), (at(5), 48), (at(6), 13)]
    summary = xid_hours(reversed(points), start=H)[H]  # any order
    assert (summary.events, summary.minutes, summary.codes, summary.last) == (4, 5, (13, 48), 13)


def test_a_code_showing_before_the_start_continues_and_hours_split() -> None:
    points = [(at(-1), 79), (at(0), 79), (at(59), 31), (at(60), 31), (at(61), 0)]
    summary = xid_hours(points, start=H)
    assert set(summary) == {H, H + 3600}
    assert (summary[H].events, summary[H].codes) == (1, (79, 31))  # 79 carried in: only 31 is new
    assert (summary[H + 3600].events, summary[H + 3600].minutes, summary[H + 3600].last) == (0, 1, 31)


def test_zero_and_nothing_make_no_hour() -> None:
    assert xid_hours([(at(3), 0)], start=H) == {}
    assert xid_hours([], start=H) == {}


def test_known_codes_have_a_cause_and_unknown_ones_are_hardware_suspects() -> None:
    assert describe(79).cause is Cause.HARDWARE and "bus" in describe(79).name
    assert describe(31).cause is Cause.SOFTWARE
    assert describe(119).cause is Cause.EITHER
    unknown = describe(999)
    assert (unknown.name, unknown.cause) == ("XID 999", Cause.HARDWARE)
