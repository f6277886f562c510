"""The rows every benchmark reports against its target (a helper, not a benchmark).

A benchmark calls ``record()`` for each figure it prints against a target (or for information); when
``BENCH_RESULTS`` names a file (``benchmarks/run_all.py`` sets it) the row is appended to it as one JSON line, and
``run_all.py`` prints them all as the summary table. A verdict is taken on the median of the runs: min and max show
how much the machine moved.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

RESULTS_ENV = "BENCH_RESULTS"


@dataclass(frozen=True)
class Target:
    """A bound on a figure: ``>= 0.5`` (higher is better) or ``<= 1.3`` (lower is better)."""

    op: str
    bound: float

    def met_by(self, value: float) -> bool:
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def __str__(self) -> str:
        return f"{self.op} {self.bound:g}"


AT_LEAST = ">="
AT_MOST = "<="


@dataclass
class Row:
    benchmark: str
    name: str
    values: list[float] = field(default_factory=list)
    unit: str = "x"
    target: Target | None = None
    detail: str = ""
    passed: bool | None = None  # a row without figures (a test that passes or not)
    skipped: bool = False

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "SKIP"
        if self.passed is not None:
            return "PASS" if self.passed else "FAIL"
        if not self.values:
            return "ERROR"
        if self.target is None:
            return "info"
        return "PASS" if self.target.met_by(statistics.median(self.values)) else "FAIL"

    def spread(self) -> str:
        if not self.values:
            return "-"
        return spread(self.values, "{:.3f}" if self.unit == "MB" else "{:.2f}")


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """min/median/max."""
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def record(
    benchmark: str,
    name: str,
    values: Sequence[float] = (),
    target: Target | None = None,
    *,
    unit: str = "x",
    detail: str = "",
    passed: bool | None = None,
    skipped: bool = False,
) -> Row:
    """Report one figure (its value in each run) and its target; appended to ``$BENCH_RESULTS`` when set."""
    row = Row(benchmark, name, [float(v) for v in values], unit, target, detail, passed, skipped)
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as results:
            results.write(json.dumps(asdict(row)) + "\n")
    return row


def read_rows(path: str) -> list[Row]:
    rows = []
    with open(path, encoding="utf-8") as results:
        for line in results:
            data = json.loads(line)
            target = data.pop("target")
            rows.append(Row(**data, target=Target(**target) if target else None))
    return rows


def table(rows: Sequence[Row]) -> str:
    """The rows as a fixed-width table: benchmark, figure, min/median/max, target, verdict, detail."""
    bench = max([len("benchmark"), *(len(row.benchmark) for row in rows)])
    name = max([len("figure"), *(len(row.name) for row in rows)])
    header = f"{'benchmark':{bench}} {'figure':{name}} {'min/median/max':>22} {'target':>10} {'result':>6}  detail"
    lines = [header, "-" * len(header)]
    for row in rows:
        target = f"{row.target} {row.unit}" if row.target else "-"
        figures = f"{row.spread()} {row.unit}".strip()
        lines.append(
            f"{row.benchmark:{bench}} {row.name:{name}} {figures:>22} {target:>10} {row.verdict:>6}  {row.detail}"
        )
    return "\n".join(lines)
