"""Iceberg table state: its metadata file, put back by registering it again.

A table is put back to a captured state by dropping it from the catalog (its
files stay) and registering its metadata file of that moment again
(``CALL spark_catalog.system.register_table``); a table that a full refresh
recreated is dropped with PURGE first, which deletes only the recreated files.
Files, snapshots and their summaries come from the metadata tables
(``.files``, ``.snapshots``, ``.metadata_log_entries``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tooling.bench.state import FileMap, TableFormat, TableState

# What a snapshot's summary says about the files and rows it wrote.
SUMMARY_KEYS = (
    "changed-partition-count",
    "added-files-size",
    "removed-files-size",
    "added-records",
    "deleted-records",
    "added-data-files",
    "deleted-data-files",
)


class IcebergFormat(TableFormat):
    name = "iceberg"
    scan_node = "BatchScan"
    restore_method = (
        "a table is dropped from the catalog (with purge when a full refresh recreated it) and its metadata "
        "file of that moment is registered again (system.register_table)"
    )

    def is_table(self, table: str) -> bool:
        try:
            self.spark.sql(f"select 1 from {table}.metadata_log_entries limit 1").collect()
        except Exception:  # a view or not an Iceberg table
            return False
        return True

    def current_metadata_file(self, table: str) -> str:
        return self.spark.sql(
            f"select file from {table}.metadata_log_entries order by timestamp desc limit 1"
        ).collect()[0][0]

    def lineage(self, table: str) -> frozenset[str]:
        rows = self.spark.sql(f"select snapshot_id from {table}.snapshots").collect()
        return frozenset(str(r.snapshot_id) for r in rows)

    def table_files(self, table: str) -> FileMap:
        frame = self.spark.table(f"{table}.files")
        partition = "to_json(partition)" if "partition" in frame.columns else "'{}'"
        rows = self.spark.sql(
            f"select file_path, {partition} as part, file_size_in_bytes, record_count from {table}.files "
            "where content = 0"
        ).collect()
        return {r.file_path: (r.part, int(r.file_size_in_bytes), int(r.record_count)) for r in rows}

    def capture(self, tables: Sequence[str], with_files: bool = True) -> dict[str, TableState]:
        states = {}
        for table in tables:
            snap = self.spark.sql(
                f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1"
            ).collect()
            snapshot_id = snap[0][0] if snap else None
            states[table] = TableState(
                table=table,
                pointer=self.current_metadata_file(table),
                version=snapshot_id,
                files=self.table_files(table) if with_files else {},
                lineage=self.lineage(table),
                head=None if snapshot_id is None else str(snapshot_id),
            )
        return states

    def put_back(self, state: TableState) -> None:
        table = state.table
        if self.spark.catalog.tableExists(table):
            if self.current_metadata_file(table) == state.pointer:
                return
            # A table recreated since (full refresh) shares no snapshot, and so
            # no file, with the captured one: purge deletes its own files only.
            # Any other table, older or newer than the capture, is dropped
            # from the catalog only.
            recreated = bool(state.lineage) and not (self.lineage(table) & state.lineage)
            self.spark.sql(f"drop table {table}{' purge' if recreated else ''}")
        self.spark.sql(
            f"call spark_catalog.system.register_table(table => '{table}', metadata_file => '{state.pointer}')"
        ).collect()
        self.spark.sql(f"refresh table {table}")

    def drop(self, table: str) -> None:
        self.spark.sql(f"drop table {table} purge")

    def version_summaries(self, table: str, before: TableState | None) -> list[dict[str, Any]]:
        rows = self.spark.sql(
            f"select snapshot_id, parent_id, operation, summary from {table}.snapshots order by committed_at"
        ).collect()
        ids = [r.snapshot_id for r in rows]
        after = before.version if before else None
        start = ids.index(after) + 1 if after in ids else 0
        return [
            {"operation": r.operation, **{k: r.summary.get(k) for k in SUMMARY_KEYS if k in r.summary}}
            for r in rows[start:]
        ]

    def state_of_pointer(self, table: str, pointer: str) -> TableState:
        # Bronze, put back from the landing's record: never purged (no lineage).
        return TableState(table, pointer, None, {})
