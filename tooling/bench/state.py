"""Iceberg table state: capture it, put it back, and say what a run wrote.

A table is put back to a captured state by dropping it from the catalog (its
files stay) and registering its metadata file of that moment again
(``CALL spark_catalog.system.register_table``); a table that a full refresh
recreated is dropped with PURGE first, which deletes only the recreated files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

# path -> (partition as JSON, bytes, records) of a table's live data files
FileMap = dict[str, tuple[str, int, int]]


def schemas_of(spark: SparkSession, schema: str) -> list[str]:
    return [db for (db,) in spark.sql("show databases").collect() if db == schema or db.startswith(f"{schema}_")]


def drop_schemas(spark: SparkSession, schema: str) -> None:
    """Drop the deployment's databases, and tell Iceberg's catalog.

    The catalog keeps the tables it has loaded, and `drop database ... cascade`
    does not tell it: a later deployment in the same schema would still find
    the dropped tables. Each table is forgotten first (through Py4J, no Spark
    statement); the session's temporary views, listed too, are skipped.
    """
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog("spark_catalog")
    for db in schemas_of(spark, schema):
        namespace = spark.sparkContext._gateway.new_array(spark._jvm.String, 1)
        namespace[0] = db
        for table in catalog.listTables(namespace):
            if len(table.namespace()) == 1:
                catalog.invalidateTable(table)
        spark.sql(f"drop database if exists {db} cascade")


def iceberg_tables(spark: SparkSession, schema: str, exclude_layers: Iterable[str] = ("bronze",)) -> list[str]:
    """Iceberg tables of the deployment (views and excluded layers left out)."""
    skip = {f"{schema}_{layer}" for layer in exclude_layers}
    tables = []
    for db in schemas_of(spark, schema):
        if db in skip:
            continue
        for row in spark.sql(f"show tables in {db}").collect():
            if row.isTemporary:
                continue
            name = f"{db}.{row.tableName}"
            try:
                spark.sql(f"select 1 from {name}.metadata_log_entries limit 1").collect()
            except Exception:  # a view or not an Iceberg table
                continue
            tables.append(name)
    return sorted(tables)


def bronze_tables(spark: SparkSession, schema: str) -> list[str]:
    """The Iceberg tables of the deployment's bronze layer."""
    return [t for t in iceberg_tables(spark, schema, exclude_layers=()) if layer_of(t, schema) == "bronze"]


def layer_of(table: str, schema: str) -> str:
    """``<schema>_silver.x`` -> ``silver``."""
    return table.split(".")[0].removeprefix(f"{schema}_")


def current_metadata_file(spark: SparkSession, table: str) -> str:
    return spark.sql(f"select file from {table}.metadata_log_entries order by timestamp desc limit 1").collect()[0][0]


@dataclass
class TableState:
    table: str
    metadata_file: str
    snapshot_id: int | None
    files: FileMap
    snapshot_ids: frozenset[int] = frozenset()


def table_files(spark: SparkSession, table: str) -> FileMap:
    frame = spark.table(f"{table}.files")
    partition = "to_json(partition)" if "partition" in frame.columns else "'{}'"
    rows = spark.sql(
        f"select file_path, {partition} as part, file_size_in_bytes, record_count from {table}.files where content = 0"
    ).collect()
    return {r.file_path: (r.part, int(r.file_size_in_bytes), int(r.record_count)) for r in rows}


def snapshot_ids(spark: SparkSession, table: str) -> frozenset[int]:
    return frozenset(r.snapshot_id for r in spark.sql(f"select snapshot_id from {table}.snapshots").collect())


def capture(spark: SparkSession, tables: Sequence[str], with_files: bool = True) -> dict[str, TableState]:
    states = {}
    for table in tables:
        snap = spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1").collect()
        states[table] = TableState(
            table=table,
            metadata_file=current_metadata_file(spark, table),
            snapshot_id=snap[0][0] if snap else None,
            files=table_files(spark, table) if with_files else {},
            snapshot_ids=snapshot_ids(spark, table),
        )
    return states


def restore(spark: SparkSession, states: Mapping[str, TableState], schema: str, drop_others: bool = True) -> None:
    """Put the tables of ``states`` back to their state. With ``drop_others``,
    the deployment's other tables (created since) are dropped with their
    files, except bronze (append-only) when ``states`` holds no bronze table."""
    with_bronze = any(layer_of(table, schema) == "bronze" for table in states)
    others = iceberg_tables(spark, schema, exclude_layers=() if with_bronze else ("bronze",)) if drop_others else []
    for table in others:
        if table not in states:  # created after the capture: not ours to keep
            spark.sql(f"drop table {table} purge")
    for table, state in states.items():
        if spark.catalog.tableExists(table):
            if current_metadata_file(spark, table) == state.metadata_file:
                continue
            # A table recreated since (full refresh) shares no snapshot, and so
            # no file, with the captured one: purge deletes its own files only.
            # Any other table, older or newer than the capture, is dropped
            # from the catalog only.
            recreated = bool(state.snapshot_ids) and not (snapshot_ids(spark, table) & state.snapshot_ids)
            spark.sql(f"drop table {table}{' purge' if recreated else ''}")
        spark.sql(
            f"call spark_catalog.system.register_table(table => '{table}', metadata_file => '{state.metadata_file}')"
        ).collect()
        spark.sql(f"refresh table {table}")
    spark.catalog.clearCache()


def versions_written(spark: SparkSession, states: Mapping[str, TableState], schema: str) -> dict[str, int]:
    """Table versions (Iceberg snapshots) committed since ``states`` was
    captured, per table that got any: new snapshots of known tables, and every
    snapshot of a table created (or recreated) since."""
    out = {}
    for table in iceberg_tables(spark, schema, exclude_layers=()):
        before = states.get(table)
        known = before.snapshot_ids if before else frozenset()
        new = len(snapshot_ids(spark, table) - known)
        if new or before is None:
            out[table.split(".")[1]] = new
    return out


def rewrite_stats(before: TableState | None, after: FileMap) -> dict[str, Any]:
    old = before.files if before else {}
    added = {p: v for p, v in after.items() if p not in old}
    removed = {p: v for p, v in old.items() if p not in after}
    added_parts = {v[0] for v in added.values()}
    removed_parts = {v[0] for v in removed.values()}
    return {
        "files_added": len(added),
        "files_removed": len(removed),
        "bytes_written": sum(v[1] for v in added.values()),
        "bytes_replaced": sum(v[1] for v in removed.values()),
        "records_written": sum(v[2] for v in added.values()),
        "partitions_written": len(added_parts | removed_parts),
        "partitions_rewritten": len(removed_parts),
        "partitions_total": len({v[0] for v in after.values()}),
        "partition_values": sorted(_partition_label(p) for p in added_parts | removed_parts),
    }


def _partition_label(part_json: str) -> str:
    values = json.loads(part_json) if part_json else {}
    return ",".join(_partition_value(k, v) for k, v in values.items()) or "(unpartitioned)"


def _partition_value(field: str, value: Any) -> str:
    """A partition value as people write it: a months() transform's month
    count since 1970 as YYYY-MM."""
    if field.endswith("_month") and isinstance(value, int):
        return f"{1970 + value // 12:04d}-{value % 12 + 1:02d}"
    return str(value)


def snapshot_summaries(spark: SparkSession, table: str, after_snapshot: int | None) -> list[dict[str, Any]]:
    """Summaries of the snapshots committed after ``after_snapshot`` (all when
    the table was recreated)."""
    rows = spark.sql(
        f"select snapshot_id, parent_id, operation, summary from {table}.snapshots order by committed_at"
    ).collect()
    ids = [r.snapshot_id for r in rows]
    start = ids.index(after_snapshot) + 1 if after_snapshot in ids else 0
    keep = (
        "changed-partition-count",
        "added-files-size",
        "removed-files-size",
        "added-records",
        "deleted-records",
        "added-data-files",
        "deleted-data-files",
    )
    return [{"operation": r.operation, **{k: r.summary.get(k) for k in keep if k in r.summary}} for r in rows[start:]]
