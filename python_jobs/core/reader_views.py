"""Readers' views: every query reads one published run, in all the gold tables it touches.

Staged publication (:mod:`python_jobs.core.publication`) publishes a run's
gold tables one after the other: on Iceberg one fast-forward of ``main`` per
table, on Delta every write as it commits. A query that reads the daily,
weekly and monthly tables while that happens can read one table from the
new run and another from the last one. And a query loads its tables one
after the other too, so even tables that changed at once would be read at
different moments. On a shared catalog, where BI readers query while builds
publish, readers therefore read gold through views in ``<schema>_published``
(:func:`published_schema`), one per published table, named as the table:

* every successful build numbers its publication (``seq``) and appends it to
  a log, ``<schema>_published.publication`` (:data:`POINTER`): its number,
  run, time, each table's version, and ``effective_at``, a moment
  :func:`lag_seconds` after the append;
* the publication a query reads is the log's newest one effective at the
  query's ``current_timestamp()`` (:func:`current_sql`). Spark fixes that
  timestamp once per query, for every view and subquery in it, and an entry
  is committed before it becomes effective, so every read of the log in one
  query, each at its own moment, names the same publication;
* each view has two slots, the table as of the publication before and as of
  the new one, each read only when the query's publication is its own
  (:func:`iceberg_view_sql`, :func:`delta_view_sql`). On Iceberg a slot is a
  tag of the table, ``latecomer_published_0`` or ``_1`` (publication ``seq``
  uses tag ``seq % 2``), and the views never change: a publication moves the
  tags of its slot. On Delta, which has no tags, a slot is a version number,
  and a publication replaces each view (one metastore call each);
* a publication first waits until the last one is effective (queries that
  may still read the slot it reuses were planned before that), moves its
  slots, then appends its entry, effective ``lag`` later.

What this assumes: a query's tables and views are loaded (its analysis) less
than the lag before its timestamp is fixed (the optimizer's first step), so
that a slot the query reads was moved before the entry naming it became
effective. The lag is ``LATECOMER_READER_LAG_SECONDS`` (default
:data:`DEFAULT_LAG_S`); the builders' and readers' clocks must agree within
it (one host, or NTP). A query that breaks it reads no row from a view
(Iceberg) or fails with an error that says to run it again (Delta, the
view's guard); it never reads a mix. A table whose columns changed between
two publications gets a Delta view with the new slot only
(:func:`fallback_slots`). Sessions on a shared catalog read Iceberg tables
without Iceberg's table cache (``cache-enabled`` false,
:mod:`python_jobs.core.spark_config`), which keeps a table's metadata, tags
included, for as long as it is read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

SUFFIX = "published"
POINTER = "publication"
TAG_PREFIX = "latecomer_published_"
LAG_ENV = "LATECOMER_READER_LAG_SECONDS"
DEFAULT_LAG_S = 15.0
MOVED_MESSAGE = "latecomer: the published views moved while this query was planned; run it again"
IDENTIFIER = re.compile(r"^[A-Za-z0-9_]{1,128}$")
VERSION = re.compile(r"^[0-9]{1,20}$")
POINTER_COLUMNS = (
    "publication_seq bigint, run_id string, published_at timestamp, effective_at timestamp, versions string"
)


class ReaderViewError(ValueError):
    """A name or a version that cannot go into a view's SQL."""


@dataclass(frozen=True)
class Publication:
    """One published run: its number, run name, when it was logged and when it
    takes effect (seconds since the epoch), each table's version."""

    seq: int
    run: str
    published_at: float
    versions: Mapping[str, str] = field(default_factory=dict)
    effective_at: float = 0.0


@dataclass(frozen=True)
class Slot:
    """A view's reading of its table: at ``version`` (a version number, or a
    tag's name) when the pointer's ``publication_seq`` (modulo ``modulo``) is ``seq``."""

    seq: int
    version: str


def published_schema(schema: str) -> str:
    """The readers' schema of a deployment: ``<schema>_published``."""
    return f"{checked_identifier(schema)}_{SUFFIX}"


def pointer_relation(schema: str) -> str:
    return f"{published_schema(schema)}.{POINTER}"


def lag_seconds(value: str | None = None) -> float:
    """``LATECOMER_READER_LAG_SECONDS`` (or ``value``): how long after its entry a
    publication takes effect, longer than any query's analysis."""
    text = os.environ.get(LAG_ENV, "") if value is None else value
    try:
        seconds = float(text) if text.strip() else DEFAULT_LAG_S
    except ValueError:
        raise ReaderViewError(f"{LAG_ENV}={text!r} is not a number of seconds") from None
    if not seconds >= 0:
        raise ReaderViewError(f"{LAG_ENV}={text!r} must be 0 or more seconds")
    return seconds


def checked_identifier(name: str) -> str:
    if not IDENTIFIER.match(name or ""):
        raise ReaderViewError(f"reader views: {name!r} is not a plain identifier (letters, digits, _)")
    return name.lower()


def checked_version(version: object) -> str:
    text = str(version)
    if not VERSION.match(text):
        raise ReaderViewError(f"reader views: version {text!r} is not a snapshot id or version number")
    return text


def tag(seq: int) -> str:
    """The Iceberg tag that holds publication ``seq``'s version of each table."""
    return f"{TAG_PREFIX}{seq % 2}"


def epoch_seconds(value: object) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(str(value))


def parse_pointer(rows: list[Mapping[str, object]]) -> Publication | None:
    """The last publication logged (the log's rows, newest first; None: nothing published yet)."""
    if not rows:
        return None
    row = rows[0]
    return Publication(
        seq=int(str(row["publication_seq"])),
        run=str(row["run_id"]),
        published_at=epoch_seconds(row["published_at"]),
        versions={str(table): checked_version(version) for table, version in json.loads(str(row["versions"])).items()},
        effective_at=epoch_seconds(row["effective_at"]),
    )


def last_publication_sql(schema: str) -> str:
    return f"select * from {pointer_relation(schema)} order by publication_seq desc limit 1"


def current_sql(schema: str) -> str:
    """The number of the publication a query reads: the newest effective at its timestamp."""
    return f"(select max(publication_seq) from {pointer_relation(schema)} where effective_at <= current_timestamp())"


def next_publication(current: Publication | None, run: str, versions: Mapping[str, object]) -> Publication:
    """The publication after ``current``: the next number, ``versions`` (table -> version)
    of the tables published now; its time is set when the pointer moves."""
    return Publication(
        seq=1 if current is None else current.seq + 1,
        run=checked_identifier(run),
        published_at=0.0,
        versions={checked_identifier(table): checked_version(version) for table, version in versions.items()},
    )


def slots(current: Publication | None, new: Publication, table: str) -> list[Slot]:
    """A Delta table's view's slots: the current publication's version (when it had the table) and the new one's."""
    chosen = [] if current is None or table not in current.versions else [Slot(current.seq, current.versions[table])]
    return [*chosen, Slot(new.seq, new.versions[table])]


def fallback_slots(table_slots: list[Slot]) -> list[Slot]:
    """The slots of a Delta view whose table's columns changed: the new publication's only."""
    return table_slots[-1:]


def seconds_to_wait_before_slots(current: Publication | None, now: float) -> float:
    """How long to wait before moving the slots: until the last publication is effective."""
    return 0.0 if current is None else max(0.0, current.effective_at - now)


def pointer_table_sql(schema: str, table_format: str) -> str:
    """The pointer table, created when missing."""
    return (
        f"create table if not exists {pointer_relation(schema)} ({POINTER_COLUMNS}) "
        f"using {'delta' if table_format == 'delta' else 'iceberg'}"
    )


def pointer_sql(schema: str, publication: Publication) -> str:
    """The log's entry of ``publication``, in one commit."""
    versions = json.dumps(dict(publication.versions), sort_keys=True, separators=(",", ":"))
    return (
        f"insert into {pointer_relation(schema)}\n"
        f"select {publication.seq}, '{checked_identifier(publication.run)}', "
        f"timestamp_millis({round(publication.published_at * 1000)}), "
        f"timestamp_millis({round(publication.effective_at * 1000)}), '{versions}'"
    )


def tag_sql(source: str, seq: int, version: str) -> str:
    """Iceberg: point ``source``'s tag of publication ``seq`` at snapshot ``version``."""
    return f"alter table {source} create or replace tag {tag(seq)} as of version {checked_version(version)}"


def iceberg_view_sql(schema: str, table: str, source: str) -> str:
    """An Iceberg table's view: its two tags, each read when the query's publication has its parity.
    Created once; publications move the tags."""
    pointer = f"{current_sql(schema)} % 2"
    view = f"{published_schema(schema)}.{checked_identifier(table)}"
    branches = [
        f"select * from {source} version as of '{tag(parity)}'\nwhere {pointer} = {parity}" for parity in (0, 1)
    ]
    return f"create view if not exists {view} as\n" + "\nunion all\n".join(branches)


def delta_view_sql(schema: str, table: str, source: str, table_slots: list[Slot]) -> str:
    """``create or replace view`` of a Delta table's view, one branch per slot.

    Each branch reads the table at its slot's version when the query reads
    its publication. The first branch also checks that the query's
    publication is one of the slots, and fails the query otherwise
    (:data:`MOVED_MESSAGE`).
    """
    if not table_slots:
        raise ReaderViewError(f"reader views: {table} has no slot")
    pointer = current_sql(schema)
    view = f"{published_schema(schema)}.{checked_identifier(table)}"
    branches = []
    for index, slot in enumerate(table_slots):
        if index == 0:
            cases = " ".join(
                f"when {other.seq} then {'true' if other.seq == slot.seq else 'false'}" for other in table_slots
            )
            where = f"case {pointer} {cases} else raise_error('{MOVED_MESSAGE}') end"
        else:
            where = f"{pointer} = {slot.seq}"
        branches.append(f"select * from {source} version as of {checked_version(slot.version)}\nwhere {where}")
    return f"create or replace view {view} as\n" + "\nunion all\n".join(branches)
