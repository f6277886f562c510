"""Importing historical usage from CSV (``manage.py import_usage``): streamed, all rows or none, in bounded memory.

Pass 1 reads the file a row at a time: each row is validated (errors name the file line and the column) and the
valid ones are copied into a temporary staging table (PostgreSQL ``COPY``; batched inserts on SQLite). Pass 2 is
the database's: the staged rows and the earlier imports of the same team, request and resource come back sorted by
key and start, so one sweep that keeps a single interval finds every overlap; then one ``INSERT ... SELECT``
writes the rows. It is all one transaction: a problem anywhere leaves the table as it was. Memory holds a row, a
batch of rows and the first ``MAX_REPORTED_ERRORS`` messages, whatever the length of the file.
"""

from __future__ import annotations

import csv
import heapq
import io
import logging
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from allocations.models import GpuModel, Team
from allocations.selectors import User
from billing.costs.chargeback import last_closed_month, month_bounds
from billing.costs.month_to_date import month_to_date_changed
from billing.costs.selectors import catalog_models_by_name
from billing.models import ImportedUsage
from gpucore.catalog import CatalogError

logger = logging.getLogger(__name__)

USAGE_HEADER = [
    "team",
    "request",
    "gpu_model",
    "strategy",
    "resource_name",
    "quantity",
    "time_slice_replicas",
    "start",
    "end",
    "avg_utilization_pct",
]
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-\d+g\.\d+gb(\+me)?$")
# A file with thousands of bad rows is one mistake repeated: the first messages (by line) say what to fix.
MAX_REPORTED_ERRORS = 100
_BATCH_ROWS = 2_000
_CACHED_CHECKS = 1_024
_STAGING = "billing_usage_import_staging"
# The staged columns, in the order pass 1 writes them; the final INSERT adds the file name and the time.
_STAGED = [
    "team_id",
    "request_label",
    "gpu_model",
    "strategy",
    "resource_name",
    "quantity",
    "time_slice_replicas",
    "start",
    "end",
    "avg_utilization_pct",
    "line_number",
]


_WHOLE_NUMBER = re.compile(r"[0-9]{1,12}")  # ASCII digits only: str.isdigit() also accepts "\u0661" and "²"
MAX_USAGE_QUANTITY = 100_000  # GPUs or slices in one row: far beyond any cluster, well inside the column
MAX_TIME_SLICE_REPLICAS = 1_000


def _parse_time(value: str, column: str, problems: list[str]) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"{column}: '{value}' is not an ISO 8601 time such as 2026-09-01T00:00:00Z.")
        return None
    if timezone.is_naive(parsed):
        problems.append(f"{column}: '{value}' has no UTC offset; write it as ...Z or +00:00.")
        return None
    return parsed.astimezone(UTC)


def _resource_problems(model: GpuModel | None, strategy: str, resource: str) -> list[str]:
    """What is wrong with a row's strategy and resource_name for its GPU model (empty: nothing)."""
    problems: list[str] = []
    if strategy == "dedicated" and resource != "nvidia.com/gpu":
        problems.append("resource_name: a dedicated allocation uses nvidia.com/gpu.")
    if strategy == "time-slicing" and resource not in {"nvidia.com/gpu", "nvidia.com/gpu.shared"}:
        problems.append("resource_name: a time-sliced share uses nvidia.com/gpu or nvidia.com/gpu.shared.")
    if strategy == "mig":
        if not _MIG_RESOURCE.match(resource):
            problems.append("resource_name: a MIG slice uses nvidia.com/mig-<n>g.<m>gb, e.g. nvidia.com/mig-1g.5gb.")
        elif model is not None:
            # The catalog's profiles, never the digits of the name: 3g.99gb has 3 compute slices but no H100 has it.
            try:
                model.to_spec().profile(resource.removeprefix("nvidia.com/mig-"))
            except CatalogError as exc:
                problems.append(f"resource_name: {exc}")
    return problems


def _usage_row(
    row: dict[str, str],
    teams: dict[str, Team],
    catalog: dict[str, GpuModel],
    allocation_checks: dict[tuple, list[str]],
) -> tuple[dict, list[str]]:
    problems: list[str] = []
    value = {k: (row.get(k) or "").strip() for k in USAGE_HEADER}
    for column, text in value.items():
        if "\x00" in text:
            problems.append(f"{column}: contains a NUL character; remove it.")
            value[column] = text.replace("\x00", "")
    team = teams.get(value["team"])
    if team is None:
        problems.append(f"team: '{value['team']}' is not a team slug.")
    if not value["request"]:
        problems.append("request: is required (the request's name or id).")
    model = catalog.get(value["gpu_model"].casefold())
    if model is None:
        problems.append(f"gpu_model: '{value['gpu_model']}' is not a catalog GPU model.")
    strategy = value["strategy"]
    if strategy not in {"dedicated", "mig", "time-slicing"}:
        problems.append(f"strategy: '{strategy}' must be dedicated, mig or time-slicing.")
    resource = value["resource_name"]
    # Most rows of a file repeat a few (model, strategy, resource) triples: judge each once (to_spec() is dear).
    triple = (model.name if model else None, strategy, resource)
    if triple not in allocation_checks:
        if len(allocation_checks) >= _CACHED_CHECKS:
            allocation_checks.clear()
        allocation_checks[triple] = _resource_problems(model, strategy, resource)
    problems.extend(allocation_checks[triple])
    quantity = None
    if not _WHOLE_NUMBER.fullmatch(value["quantity"]) or not 1 <= int(value["quantity"]) <= MAX_USAGE_QUANTITY:
        problems.append(f"quantity: '{value['quantity']}' must be a whole number from 1 to {MAX_USAGE_QUANTITY}.")
    else:
        quantity = int(value["quantity"])
    replicas = None
    if strategy == "time-slicing":
        replicas_text = value["time_slice_replicas"]
        if not _WHOLE_NUMBER.fullmatch(replicas_text) or not 2 <= int(replicas_text) <= MAX_TIME_SLICE_REPLICAS:
            problems.append("time_slice_replicas: a time-sliced share needs the replicas per GPU (>= 2).")
        else:
            replicas = int(value["time_slice_replicas"])
    elif value["time_slice_replicas"]:
        problems.append("time_slice_replicas: only for strategy time-slicing; leave it empty.")
    start = _parse_time(value["start"], "start", problems)
    end = _parse_time(value["end"], "end", problems)
    if start and end and end <= start:
        problems.append("end: must be after start.")
    util = None
    if value["avg_utilization_pct"]:
        try:
            util = float(Decimal(value["avg_utilization_pct"]))
            if not 0 <= util <= 100:
                raise InvalidOperation
        except InvalidOperation:
            problems.append(f"avg_utilization_pct: '{value['avg_utilization_pct']}' must be a number from 0 to 100.")
            util = None
    fields = {
        "team": team,
        "request_label": value["request"][:100],
        "gpu_model": model.name if model else "",
        "strategy": strategy,
        "resource_name": resource,
        "quantity": quantity,
        "time_slice_replicas": replicas,
        "start": start,
        "end": end,
        "avg_utilization_pct": util,
    }
    return fields, problems


class _FirstProblems:
    """The ``MAX_REPORTED_ERRORS`` problems of the lowest lines, and how many there were in all."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []  # (-line, -order, message): the worst kept is on top
        self.count = 0

    def add(self, line: int, message: str) -> None:
        self.count += 1
        item = (-line, -self.count, message)
        if len(self._heap) < MAX_REPORTED_ERRORS:
            heapq.heappush(self._heap, item)
        elif item > self._heap[0]:
            heapq.heapreplace(self._heap, item)

    def messages(self) -> list[str]:
        kept = [message for _, _, message in sorted(self._heap, reverse=True)]
        if self.count > len(kept):
            kept.append(f"... and {self.count - len(kept)} more problems; the first {len(kept)} by line are listed.")
        return kept


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _create_staging() -> None:
    datetime_type = connection.data_types["DateTimeField"]
    columns = (
        f"{_q('team_id')} bigint NOT NULL, {_q('request_label')} varchar(100) NOT NULL, "
        f"{_q('gpu_model')} varchar(40) NOT NULL, {_q('strategy')} varchar(20) NOT NULL, "
        f"{_q('resource_name')} varchar(63) NOT NULL, {_q('quantity')} integer NOT NULL, "
        f"{_q('time_slice_replicas')} integer NULL, {_q('start')} {datetime_type} NOT NULL, "
        f"{_q('end')} {datetime_type} NOT NULL, {_q('avg_utilization_pct')} double precision NULL, "
        f"{_q('line_number')} integer NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {_q(_STAGING)}")
        cursor.execute(f"CREATE TEMPORARY TABLE {_q(_STAGING)} ({columns})")


class _Stager:
    """Writes validated rows into the staging table: one ``COPY`` on PostgreSQL, batched inserts elsewhere."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.batch: list[tuple] = []
        self.count = 0
        self._copy: Any = None
        self._copy_context: Any = None
        if connection.vendor == "postgresql":
            columns = ", ".join(_q(c) for c in _STAGED)
            self._copy_context = cursor.copy(f"COPY {_q(_STAGING)} ({columns}) FROM STDIN")

    def __enter__(self) -> _Stager:
        if self._copy_context is not None:
            self._copy = self._copy_context.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._copy_context is not None:
            self._copy_context.__exit__(*exc)
        elif exc[0] is None:
            self._flush()

    def add(self, row: tuple) -> None:
        self.count += 1
        if self._copy is not None:
            self._copy.write_row(row)
            return
        self.batch.append(row)
        if len(self.batch) >= _BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        adapt = connection.ops.adapt_datetimefield_value
        marks = ", ".join(["%s"] * len(_STAGED))
        columns = ", ".join(_q(c) for c in _STAGED)
        self.cursor.executemany(
            f"INSERT INTO {_q(_STAGING)} ({columns}) VALUES ({marks})",
            [(*row[:7], adapt(row[7]), adapt(row[8]), *row[9:]) for row in self.batch],
        )
        self.batch.clear()


def _stage_rows(records: Iterable[list[str]], line_of: Any, *, problems: _FirstProblems, cursor: Any) -> int:
    """Pass 1: validate each record and stage the valid ones; returns how many rows were read."""
    teams = {t.slug: t for t in Team.objects.all()}
    catalog = catalog_models_by_name()
    last_closed = last_closed_month()
    closed_until = month_bounds(last_closed)[1] if last_closed else None
    now = timezone.now()
    checks: dict[tuple, list[str]] = {}
    read = 0
    with _Stager(cursor) as stager:
        for record in records:
            if not record:
                continue  # a blank line, as csv.DictReader skips it
            read += 1
            line = line_of()
            fields, row_problems = _usage_row(dict(zip(USAGE_HEADER, record, strict=False)), teams, catalog, checks)
            if not row_problems and closed_until is not None and fields["start"] < closed_until:
                row_problems.append(
                    f"start: {last_closed:%Y-%m} and earlier months are closed; their reports never change."
                )
            if not row_problems and fields["start"] > now:
                row_problems.append("start: is in the future; only usage that happened can be imported.")
            for problem in row_problems:
                problems.add(line, f"line {line}: {problem}")
            if not row_problems:
                stager.add(
                    (
                        fields["team"].pk,
                        fields["request_label"],
                        fields["gpu_model"],
                        fields["strategy"],
                        fields["resource_name"],
                        fields["quantity"],
                        fields["time_slice_replicas"],
                        fields["start"],
                        fields["end"],
                        fields["avg_utilization_pct"],
                        line,
                    )
                )
    return read


def _aware(value: datetime | str) -> datetime:
    # SQLite hands back text (or naive UTC); PostgreSQL aware datetimes.
    parsed = parse_datetime(value) if isinstance(value, str) else value
    assert parsed is not None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _span(start: datetime, end: datetime) -> str:
    return f"{start:%Y-%m-%dT%H:%MZ}..{end:%Y-%m-%dT%H:%MZ}"


_KEY = ("team_id", "request_label", "resource_name")
_CLASHES = "billing_usage_import_clashes"


def _same_key(a: str, b: str) -> str:
    return " AND ".join(f"{a}.{_q(c)} = {b}.{_q(c)}" for c in _KEY)


def _rows_of_staged_keys(*, only_clashes: bool) -> str:
    """SQL: the staged rows (is_new 1) and the earlier imports with their keys (0), as one relation."""
    key, table, staging = ", ".join(_q(c) for c in _KEY), _q(ImportedUsage._meta.db_table), _q(_STAGING)
    times = f"{_q('start')}, {_q('end')}"
    clash = f" AND EXISTS (SELECT 1 FROM {_q(_CLASHES)} c WHERE {{}})" if only_clashes else ""
    return (
        f"SELECT {key}, {times}, 1 AS is_new, {_q('line_number')}, '' AS source FROM {staging} s WHERE 1 = 1"
        + clash.format(_same_key("c", "s"))
        + f" UNION ALL SELECT {key}, {times}, 0, {_q('line_number')}, {_q('source_file')} FROM {table} u"
        + f" WHERE EXISTS (SELECT 1 FROM {staging} s WHERE {_same_key('s', 'u')})"
        + clash.format(_same_key("c", "u"))
    )


def _find_overlaps(problems: _FirstProblems) -> None:
    """Pass 2: each staged row that overlaps another of the file or an earlier import for the same team, request
    and resource (one allocation billed twice), naming both lines; rows that only touch (end == start) are fine.

    The database finds the keys with an overlap (a row starting before the latest end of the rows sorted before
    it); only their rows come back, sorted, for a sweep that keeps one interval and names the lines.
    """
    key = ", ".join(_q(c) for c in _KEY)
    order = f"{_q('start')}, is_new, {_q('line_number')}"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {_q(_CLASHES)}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {_q(_CLASHES)} AS SELECT DISTINCT {key} FROM ("
            f"SELECT {key}, {_q('start')}, MAX({_q('end')}) OVER (PARTITION BY {key} ORDER BY {order} "
            f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended "
            f"FROM ({_rows_of_staged_keys(only_clashes=False)}) keyed) sorted WHERE {_q('start')} < ended"
        )
        cursor.execute(f"SELECT COUNT(*) FROM {_q(_CLASHES)}")
        (clashes,) = cursor.fetchone()
    if clashes:
        _name_overlaps(problems, f"{_rows_of_staged_keys(only_clashes=True)} ORDER BY {key}, {order}")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {_q(_CLASHES)}")


def _name_overlaps(problems: _FirstProblems, sql: str) -> None:
    """The sweep over the rows of the keys with an overlap, sorted by key, start, earlier imports first, line."""
    # A server-side cursor on PostgreSQL: the sweep holds one interval per key, never the whole result.
    cursor = connection.chunked_cursor()
    try:
        cursor.execute(sql)
        current: tuple | None = None
        latest: tuple[datetime, datetime, int, int, str] | None = None
        while rows := cursor.fetchmany(_BATCH_ROWS):
            for team_id, label, resource, start, end, is_new, line, source in rows:
                if (team_id, label, resource) != current:
                    current, latest = (team_id, label, resource), None
                interval = (_aware(start), _aware(end), is_new, line, source or "an earlier file")
                if latest is not None and interval[0] < latest[1]:
                    mine, other = (interval, latest) if is_new else (latest, interval)
                    if mine[2]:
                        where = f"line {other[3]}" if other[2] else f"line {other[3]} of {other[4]}, already imported,"
                        problems.add(
                            mine[3],
                            f"line {mine[3]}: request: {_span(mine[0], mine[1])} overlaps {where} "
                            f"({_span(other[0], other[1])}) for the same team, request and resource_name; "
                            "it would be billed twice.",
                        )
                if latest is None or interval[1] > latest[1]:
                    latest = interval
    finally:
        cursor.close()


def _insert_staged(*, source_name: str, now: datetime) -> int:
    columns = list(_STAGED)
    target = ", ".join(_q(c) for c in [*columns, "source_file", "imported_at"])
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_q(ImportedUsage._meta.db_table)} ({target}) "
            f"SELECT {', '.join(_q(c) for c in columns)}, %s, %s FROM {_q(_STAGING)} ORDER BY {_q('line_number')}",
            [source_name[:255], connection.ops.adapt_datetimefield_value(now)],
        )
        inserted = cursor.rowcount
        cursor.execute(f"DROP TABLE {_q(_STAGING)}")
    return inserted


def _csv_problem(line: int, exc: csv.Error) -> str:
    text = str(exc)
    if "field larger than field limit" in text:
        return f"line {line}: a field is longer than {csv.field_size_limit():,} characters; no column is that long."
    if "new-line character seen in unquoted field" in text:
        return f"line {line}: a line ends in a carriage return alone (CR); save the file with LF or CRLF line ends."
    return f"line {line}: not valid CSV ({text[:120]})."


def _csv_records(reader: Any) -> Iterator[list[str]]:
    """The reader's records; a line the csv module cannot read is a ValidationError naming it, not a traceback."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            field = "header" if reader.line_num <= 1 else "rows"
            raise ValidationError({field: [_csv_problem(reader.line_num, exc)]}) from None
        yield record


def usage_import(
    *,
    csv_text: str | None = None,
    lines: Iterable[str] | None = None,
    source_name: str = "",
    acting_user: User | None = None,
) -> int:
    """Load historical allocations from CSV (header in docs/cost-model.md), all or nothing; errors name line and column.

    Give the file as ``csv_text`` or, streamed, as ``lines`` (text lines with their line ends, e.g.
    ``gpucore.textfiles.iter_utf8_lines(binary_file)``). A ``NotUtf8Error`` from ``lines`` leaves nothing written.
    """
    if (csv_text is None) == (lines is None):
        raise TypeError("usage_import takes csv_text or lines")
    source: Iterator[str] = iter(io.StringIO(csv_text.lstrip("\ufeff")) if csv_text is not None else lines)
    reader = csv.reader(source)
    records = _csv_records(reader)
    header = [h.strip() for h in next(records, [])]
    if header != USAGE_HEADER:
        raise ValidationError({"header": [f"line 1: the header must be exactly {','.join(USAGE_HEADER)}."]})
    problems = _FirstProblems()
    with transaction.atomic():
        _create_staging()
        with connection.cursor() as cursor:
            read = _stage_rows(records, lambda: reader.line_num, problems=problems, cursor=cursor)
        _find_overlaps(problems)
        if not read and not problems.count:
            problems.add(2, "line 2: the file has a header but no rows.")
        if problems.count:
            # Raised inside the transaction: the staged rows go with it.
            raise ValidationError({"rows": problems.messages()})
        count = _insert_staged(source_name=source_name, now=timezone.now())
        month_to_date_changed()  # rows written in SQL, past the signals that keep the month so far
    logger.info("Imported %s usage rows from %s by %s", count, source_name or "CSV", acting_user)
    return count
