"""Landing the synthetic data through python_jobs.landing.ingest, once per scale.

Files land in as few ingest calls as ingest allows: one per arrival time,
feed and source, with every file of that landing (the generator writes one). Once a scale's history and late
batch have landed in a schema, the pointers of its bronze tables at both
moments (Iceberg's metadata files, Delta's copies of their folders: see
tooling.bench.state) are recorded (``<results>/landed/<format>/<schema>.json``);
a later run of the same scale, data and ingest code in the same state dir puts
bronze back to them instead of landing again.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from tooling.bench.config import REPO_ROOT, BenchConfig
from tooling.bench.state import TableFormat, TableState, drop_schemas, schemas_of
from tooling.synthetic import Batch, History

# The files whose code decides what ingest lands (part of the landing key).
INGEST_CODE = (
    "python_jobs/landing/ingest.py",
    "python_jobs/landing/feeds.py",
    "python_jobs/landing/ingest_lines.py",
    "python_jobs/landing/shapers.py",
    "python_jobs/landing/bronze.py",
    "python_jobs/core/constants.py",
)


def land(spark: SparkSession, cfg: BenchConfig, batches: Sequence[Batch]) -> dict[str, Any]:
    """Land ``batches`` through python_jobs.landing.ingest, one call per (arrival, feed, source)."""
    from python_jobs.landing import ingest
    from python_jobs.landing.feeds import FEEDS, IngestSettings

    settings = IngestSettings(schema=cfg.schema, table_format=cfg.table_format)
    groups: dict[tuple[datetime, bool, str, str], list[Path]] = {}
    for batch in batches:
        groups.setdefault((batch.arrival_ts, batch.feed != "events", batch.feed, batch.source), []).append(batch.path)
    totals: dict[str, dict[str, Any]] = {
        feed: {"calls": 0, "files": 0, "rows": 0, "flagged": 0, "seconds": 0.0} for feed in FEEDS
    }
    ingestion_ids: list[str] = []
    for (arrival_ts, _, feed, source), paths in sorted(groups.items()):
        started = time.perf_counter()
        results = ingest.ingest(spark, FEEDS[feed], source, paths, arrival_ts, settings, out=io.StringIO())
        total = totals[feed]
        total["seconds"] += time.perf_counter() - started
        total["calls"] += 1
        total["files"] += len(paths)
        for r in results:
            if r.skipped:
                raise RuntimeError(f"{r.path} was already landed: the schema is not fresh")
            total["rows"] += r.accepted + r.flagged
            total["flagged"] += r.flagged
            if feed == "events":
                ingestion_ids.append(r.ingestion_id)
    events = totals["events"]
    return {
        "calls": events["calls"],
        "files": events["files"],
        "rows": events["rows"],
        "flagged": events["flagged"],
        "seconds": round(events["seconds"], 3),
        "rows_per_second": round(events["rows"] / events["seconds"], 1) if events["seconds"] else None,
        "ingestion_ids": sorted(set(ingestion_ids)),
        "arrival_dates": sorted({str(b.arrival_ts.date()) for b in batches if b.feed == "events"}),
        "other_feeds": {
            feed: {**t, "seconds": round(t["seconds"], 3)}
            for feed, t in totals.items()
            if feed != "events" and t["calls"]
        },
    }


@dataclass
class Landed:
    """A scale landed in a schema: bronze's pointers after the history and
    after the late batch, and what ingest reported for each."""

    key: str
    history: dict[str, str]
    late: dict[str, str]
    history_ingest: dict[str, Any]
    late_ingest: dict[str, Any]


def landing_key(cfg: BenchConfig, history: History) -> str:
    """What landed bronze depends on: the data, the ingest code (and the
    contract constants it reads), the format."""
    digest = hashlib.sha1()
    for path in INGEST_CODE:
        digest.update((REPO_ROOT / path).read_bytes())
    ingest_code = digest.hexdigest()[:12]
    return f"{history.scale.key()}|ingest {ingest_code}|{cfg.table_format}"


def _record_path(cfg: BenchConfig) -> Path:
    return cfg.results_dir / "landed" / cfg.table_format / f"{cfg.schema}.json"


def save_landed(cfg: BenchConfig, landed: Landed) -> None:
    path = _record_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(landed), indent=1))


def forget_landed(cfg: BenchConfig) -> None:
    _record_path(cfg).unlink(missing_ok=True)


def pointers(states: dict[str, TableState]) -> dict[str, str]:
    return {table: state.pointer for table, state in states.items()}


def reusable_landing(cfg: BenchConfig, history: History) -> Landed | None:
    """The record of this scale's landing in ``cfg.schema``, if the files its
    pointers name are all still there."""
    path = _record_path(cfg)
    if not path.exists():
        return None
    landed = Landed(**json.loads(path.read_text()))
    if landed.key != landing_key(cfg, history):
        return None
    files = [*landed.history.values(), *landed.late.values()]
    if not all(Path(f.removeprefix("file:")).exists() for f in files):
        return None
    return landed


def land_once(spark: SparkSession, cfg: BenchConfig, tables: TableFormat, history: History) -> tuple[Landed, bool]:
    """Bronze holding the history only, as landed by this run or, when this
    scale was landed before in the schema, as recorded then; every other
    table is dropped. Returns the landing's record
    and whether it was reused; a new record is complete once the late batch
    has landed too (:func:`land_late`)."""
    landed = None if cfg.fresh else reusable_landing(cfg, history)
    if landed is not None:
        spark.sql(f"create database if not exists {cfg.schema}_bronze")
        tables.restore(_states(tables, landed.history), cfg.schema)
        for db in schemas_of(spark, cfg.schema):
            if db != f"{cfg.schema}_bronze":
                spark.sql(f"drop database if exists {db} cascade")
        return landed, True
    forget_landed(cfg)
    for table in tables.tables(cfg.schema, exclude_layers=()):
        tables.drop(table)
    drop_schemas(spark, cfg.schema)
    cfg.log(f"bench: landing {len(history.history)} history files in {cfg.schema}_bronze")
    ingest = land(spark, cfg, history.history)
    bronze = tables.capture(tables.tables(cfg.schema, exclude_layers=()), with_files=False)
    return Landed(landing_key(cfg, history), pointers(bronze), {}, ingest, {}), False


def land_late(
    spark: SparkSession, cfg: BenchConfig, tables: TableFormat, history: History, landed: Landed, reused: bool
) -> None:
    """Land the late batch (or put bronze back to it, when reused) and record
    the landing."""
    if reused:
        tables.restore(_states(tables, landed.late), cfg.schema, drop_others=False)
        return
    landed.late_ingest = land(spark, cfg, history.late)
    bronze = tables.capture(tables.bronze_tables(cfg.schema), with_files=False)
    landed.late = {t: f for t, f in pointers(bronze).items() if t in landed.history}
    save_landed(cfg, landed)


def _states(tables: TableFormat, recorded: dict[str, str]) -> dict[str, TableState]:
    """Recorded pointers as states to restore."""
    return {table: tables.state_of_pointer(table, pointer) for table, pointer in recorded.items()}
