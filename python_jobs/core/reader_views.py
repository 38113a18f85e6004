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

* every successful build numbers its publication (``seq``) and records it in
  a one-row pointer table, ``<schema>_published.publication``
  (:data:`POINTER`): its number, run, time and each table's version,
  written in one commit (``insert overwrite``);
* each view has two slots, the table as of the current publication and as
  of the one before, each read only when the pointer names its publication
  (:func:`view_sql`): a query sees one slot per view, the one of the
  publication the pointer names;
* on Iceberg the slots are two tags of each table, ``latecomer_published_0``
  and ``_1`` (publication ``seq`` uses tag ``seq % 2``), and the views never
  change: a publication moves the tags of its slot. On Delta, which has no
  tags, a slot is a version number, and a publication replaces each view
  (one metastore call each; Delta's catalog keeps views in the metastore);
* a publication moves every table's slot, then the pointer. Spark loads a
  relation once per query (its analyzer's relation cache, kept across nested
  views and subqueries), so every view of one query reads the same pointer.

What remains is timing, and the publication waits for it
(:data:`GRACE_ENV`, default :data:`DEFAULT_GRACE_S`): between moving the
slots and moving the pointer (a query that loaded a table's slot before the
move and the pointer after it would read the slot's previous publication),
and between moving the pointer and the next move of slots (a query that
loaded the pointer before the move and a slot after the next one would read
a later publication). A query whose planning takes longer than that could
read a mix; on Delta the view's guard fails it instead (:func:`view_sql`).
Sessions on a shared catalog read Iceberg tables without Iceberg's table
cache (``cache-enabled`` false, :mod:`python_jobs.core.spark_config`), which
would otherwise keep a table's metadata, tags included, for 30 seconds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

SUFFIX = "published"
POINTER = "publication"
TAG_PREFIX = "latecomer_published_"
GRACE_ENV = "LATECOMER_READER_GRACE_SECONDS"
DEFAULT_GRACE_S = 5.0
MOVED_MESSAGE = "latecomer: the published views moved while this query was planned; run it again"
IDENTIFIER = re.compile(r"^[A-Za-z0-9_]{1,128}$")
VERSION = re.compile(r"^[0-9]{1,20}$")
POINTER_COLUMNS = "publication_seq bigint, run_id string, published_at timestamp, versions string"


class ReaderViewError(ValueError):
    """A name or a version that cannot go into a view's SQL."""


@dataclass(frozen=True)
class Publication:
    """One published run: its number, run name, when the pointer named it, each table's version."""

    seq: int
    run: str
    published_at: float
    versions: Mapping[str, str] = field(default_factory=dict)


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


def grace_seconds(value: str | None = None) -> float:
    """``LATECOMER_READER_GRACE_SECONDS`` (or ``value``): the longest a query's planning may take."""
    text = os.environ.get(GRACE_ENV, "") if value is None else value
    try:
        seconds = float(text) if text.strip() else DEFAULT_GRACE_S
    except ValueError:
        raise ReaderViewError(f"{GRACE_ENV}={text!r} is not a number of seconds") from None
    if not seconds >= 0:
        raise ReaderViewError(f"{GRACE_ENV}={text!r} must be 0 or more seconds")
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


def parse_pointer(rows: list[Mapping[str, object]]) -> Publication | None:
    """The current publication, from the pointer table's rows (None: nothing published yet)."""
    if not rows:
        return None
    row = rows[0]
    published_at = row["published_at"]
    return Publication(
        seq=int(str(row["publication_seq"])),
        run=str(row["run_id"]),
        published_at=published_at.timestamp() if hasattr(published_at, "timestamp") else float(str(published_at)),
        versions={str(table): checked_version(version) for table, version in json.loads(str(row["versions"])).items()},
    )


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


def seconds_to_wait_before_slots(current: Publication | None, now: float, grace: float) -> float:
    """How long to wait before moving the slots: until ``grace`` has passed since the pointer last moved."""
    return 0.0 if current is None else max(0.0, current.published_at + grace - now)


def pointer_table_sql(schema: str, table_format: str) -> str:
    """The pointer table, created when missing."""
    return (
        f"create table if not exists {pointer_relation(schema)} ({POINTER_COLUMNS}) "
        f"using {'delta' if table_format == 'delta' else 'iceberg'}"
    )


def pointer_sql(schema: str, publication: Publication) -> str:
    """The pointer's one row, naming ``publication``, in one commit."""
    versions = json.dumps(dict(publication.versions), sort_keys=True, separators=(",", ":"))
    return (
        f"insert overwrite {pointer_relation(schema)}\n"
        f"select {publication.seq}, '{checked_identifier(publication.run)}', "
        f"timestamp_millis({round(publication.published_at * 1000)}), '{versions}'"
    )


def tag_sql(source: str, seq: int, version: str) -> str:
    """Iceberg: point ``source``'s tag of publication ``seq`` at snapshot ``version``."""
    return f"alter table {source} create or replace tag {tag(seq)} as of version {checked_version(version)}"


def iceberg_view_sql(schema: str, table: str, source: str) -> str:
    """An Iceberg table's view: its two tags, each read when the pointer names a publication of its parity.
    Created once; publications move the tags."""
    pointer = f"(select publication_seq % 2 from {pointer_relation(schema)})"
    view = f"{published_schema(schema)}.{checked_identifier(table)}"
    branches = [
        f"select * from {source} version as of '{tag(parity)}'\nwhere {pointer} = {parity}" for parity in (0, 1)
    ]
    return f"create view if not exists {view} as\n" + "\nunion all\n".join(branches)


def delta_view_sql(schema: str, table: str, source: str, table_slots: list[Slot]) -> str:
    """``create or replace view`` of a Delta table's view, one branch per slot.

    Each branch reads the table at its slot's version when the pointer names
    its publication. The first branch also checks that the pointer names one
    of the slots, and fails the query otherwise (:data:`MOVED_MESSAGE`).
    """
    if not table_slots:
        raise ReaderViewError(f"reader views: {table} has no slot")
    pointer = f"(select publication_seq from {pointer_relation(schema)})"
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
