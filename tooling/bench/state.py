"""Table state: capture it, put it back, and say what a run wrote.

What a state is and how it is put back belongs to the table format
(:class:`TableFormat`, implemented by tooling.bench.iceberg_state and
tooling.bench.delta_state; tooling.bench.formats picks one); what a run wrote
is the same comparison on both: the table's live data files before and after
(:func:`rewrite_stats`) and the versions it did not have before
(:meth:`TableFormat.versions_written`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
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


def layer_of(table: str, schema: str) -> str:
    """``<schema>_silver.x`` -> ``silver``."""
    return table.split(".")[0].removeprefix(f"{schema}_")


@dataclass
class TableState:
    """A table at one moment, as its format identifies it.

    ``pointer``: what names that moment for good, a file or folder that
    exists as long as the state can be put back (Iceberg: its metadata file;
    Delta: a hard-linked copy of its folder). ``version``: what `version as
    of` reads (Iceberg: snapshot id; Delta: table version). ``lineage``: ids
    of every version the table had (Iceberg: snapshot ids; Delta: version and
    commit time), and ``head`` the one of ``version``: a later table that
    still lists ``head`` descends from this state.
    """

    table: str
    pointer: str
    version: int | None
    files: FileMap
    lineage: frozenset[str] = frozenset()
    head: str | None = None


class TableFormat(ABC):
    """The table format's side of the benchmark, on one session."""

    name: str
    # The start of the name of a plan node that reads the format's data files (tooling.bench.metrics).
    scan_node: str
    # What the report says about how tables are put back between runs.
    restore_method: str

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    @abstractmethod
    def is_table(self, table: str) -> bool:
        """Whether ``table`` is a table of this format (not a view, nor a staging table of another)."""

    @abstractmethod
    def capture(self, tables: Sequence[str], with_files: bool = True) -> dict[str, TableState]:
        """The current state of each table (with its live data files unless not ``with_files``)."""

    @abstractmethod
    def put_back(self, state: TableState) -> None:
        """Make ``state`` the table's current state again (creating the table if it is gone)."""

    @abstractmethod
    def drop(self, table: str) -> None:
        """Drop a table created after a capture, with its files."""

    @abstractmethod
    def lineage(self, table: str) -> frozenset[str]:
        """Ids of the versions the table has (see :class:`TableState`)."""

    @abstractmethod
    def table_files(self, table: str) -> FileMap:
        """The table's live data files."""

    @abstractmethod
    def version_summaries(self, table: str, before: TableState | None) -> list[dict[str, Any]]:
        """What each version committed after ``before`` says it did (all when the table was recreated)."""

    @abstractmethod
    def state_of_pointer(self, table: str, pointer: str) -> TableState:
        """A recorded pointer (tooling.bench.landing) as a state to put back."""

    def tables(self, schema: str, exclude_layers: Iterable[str] = ("bronze",)) -> list[str]:
        """Tables of the deployment in this format (views and excluded layers left out)."""
        skip = {f"{schema}_{layer}" for layer in exclude_layers}
        found = []
        for db in schemas_of(self.spark, schema):
            if db in skip:
                continue
            for row in self.spark.sql(f"show tables in {db}").collect():
                name = f"{db}.{row.tableName}"
                if not row.isTemporary and self.is_table(name):
                    found.append(name)
        return sorted(found)

    def bronze_tables(self, schema: str) -> list[str]:
        """The tables of the deployment's bronze layer."""
        return [t for t in self.tables(schema, exclude_layers=()) if layer_of(t, schema) == "bronze"]

    def restore(self, states: Mapping[str, TableState], schema: str, drop_others: bool = True) -> None:
        """Put the tables of ``states`` back to their state. With ``drop_others``,
        the deployment's other tables (created since) are dropped with their
        files, except bronze (append-only) when ``states`` holds no bronze table."""
        with_bronze = any(layer_of(table, schema) == "bronze" for table in states)
        others = self.tables(schema, exclude_layers=() if with_bronze else ("bronze",)) if drop_others else []
        for table in others:
            if table not in states:  # created after the capture: not ours to keep
                self.drop(table)
        for state in states.values():
            self.put_back(state)
        self.spark.catalog.clearCache()

    def versions_written(self, states: Mapping[str, TableState], schema: str) -> dict[str, int]:
        """Table versions (Iceberg snapshots, Delta commits) committed since
        ``states`` was captured, per table that got any: new versions of known
        tables, and every version of a table created (or recreated) since."""
        out = {}
        for table in self.tables(schema, exclude_layers=()):
            before = states.get(table)
            known = before.lineage if before else frozenset()
            new = len(self.lineage(table) - known)
            if new or before is None:
                out[table.split(".")[1]] = new
        return out

    def readable_version(self, table: str, state: TableState | None) -> int | None:
        """``state``'s version when the table still holds it (`version as of`
        reads it), else None (the table was recreated since, or is new)."""
        if state is None or state.head is None or state.head not in self.lineage(table):
            return None
        return state.version


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
