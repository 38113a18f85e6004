"""Delta Lake table state: its version, kept as a hard-linked copy of its folder.

A table's state is its latest version (the head of `DESCRIBE HISTORY`). A
capture keeps a copy of the table's folder at that version, made of hard
links (``<state dir>/bench_backups/<db>/<table>/<first commit>/<version>-<commit
time>``: no bytes copied; Delta never changes a data or log file in place,
and ``_last_checkpoint``, which it rewrites, is copied). The copy's folder is
the state's pointer, as a metadata file is Iceberg's. A table is put back by
making its folder hold exactly the copy's files again (files of later commits
removed, the copy's linked back) and dropping Delta's cached snapshots: the
table is then at the captured version again, with the same version number
and commit time, as an Iceberg table is after register_table.

Why not ``RESTORE TABLE t TO VERSION AS OF v``: it commits a new version, so
every restored table's version number moves, and the project keys its "inputs
unchanged" skips on its inputs' versions (restated and recomputed models, the
customer snapshot): after a RESTORE, `nothing_new` rebuilt
silver_correction_chains and customer_history (3 versions) that a build with
nothing new leaves alone. Besides, RESTORE cannot bring back a table that was
dropped: a seed under ``--full-refresh`` is dropped and created again
(dbt-spark's reset_csv_table), dropping a managed Delta table deletes its
folder, log included, a shallow clone taken before would point at the deleted
files, and OSS Delta 3.3 has no DEEP CLONE. The copy covers that too: the
recreated table's folder gets the copy's files back (and a table that is gone
is created again as a placeholder, managed, whose folder then gets them: Delta
refuses to create a managed table over a folder that is not empty). A table
that CREATE OR REPLACE rewrote (the incremental, restated and recomputed
materializations under --full-refresh, dbt Python models) is the same case as
any other write: its later commits go.

This needs the tables' folders on a local file system (the default
warehouse); on object storage the copy cannot be made and capture says so.
Files come from the version's add actions (Delta's snapshot state, through the
JVM: SQL has no `.files` of a Delta table); what a version did comes from the
rows of `DESCRIBE HISTORY` and their ``operationMetrics``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from python_jobs.core.catalog_reads import java_class
from python_jobs.core.spark_config import local_folder, state_dir
from tooling.bench.state import FileMap, TableFormat, TableState

# Files of a Delta log that are rewritten in place: copied into a backup, not linked.
REWRITTEN = ("_last_checkpoint",)
DELTA_LOG = "org.apache.spark.sql.delta.DeltaLog"


@dataclass(frozen=True)
class Commit:
    version: int
    committed_ms: int
    operation: str
    metrics: dict[str, str]

    @property
    def id(self) -> str:
        """The commit's lineage id: a table dropped and created again reuses version numbers, not times."""
        return f"{self.version}@{self.committed_ms}"


def backup_root() -> Path:
    return state_dir() / "bench_backups"


class DeltaFormat(TableFormat):
    name = "delta"
    scan_node = "Scan parquet "  # Delta reads its data files as Parquet
    restore_method = (
        "a table's folder is made to hold the files of that moment again, from a copy of hard links taken "
        "then, so it is at that version again (same number, no new commit)"
    )

    def is_table(self, table: str) -> bool:
        try:
            return self._detail(table).format == "delta"
        except Exception:  # a view
            return False

    def _detail(self, table: str) -> Any:
        return self.spark.sql(f"describe detail {table}").collect()[0]

    def _folder(self, table: str) -> Path:
        location = self._detail(table).location
        folder = local_folder(location)
        if folder is None:
            raise RuntimeError(
                f"bench: {table} is at {location}: the Delta benchmark keeps table states as hard-linked "
                "copies of their folders, which needs the warehouse on a local file system"
            )
        return folder

    def history(self, table: str) -> list[Commit]:
        """The table's commits, oldest first."""
        rows = (
            self.spark.sql(f"describe history {table}")
            .selectExpr("version", "unix_millis(timestamp) as committed_ms", "operation", "operationMetrics")
            .collect()
        )
        commits = [Commit(r.version, r.committed_ms, r.operation, dict(r.operationMetrics or {})) for r in rows]
        return sorted(commits, key=lambda c: c.version)

    def lineage(self, table: str) -> frozenset[str]:
        return frozenset(c.id for c in self.history(table))

    def table_files(self, table: str) -> FileMap:
        location = self._detail(table).location
        delta_log = java_class(self.spark, DELTA_LOG)
        snapshot = delta_log.forTableWithSnapshot(self.spark._jsparkSession, location)._2()
        rows = (
            DataFrame(snapshot.allFiles().toDF(), self.spark)
            .selectExpr(
                "path",
                "to_json(partitionValues) as part",
                "size",
                "coalesce(cast(get_json_object(stats, '$.numRecords') as bigint), 0) as records",
            )
            .collect()
        )
        return {r.path: (r.part, int(r.size), int(r.records)) for r in rows}

    def capture(self, tables: Sequence[str], with_files: bool = True) -> dict[str, TableState]:
        states = {}
        for table in tables:
            commits = self.history(table)
            head = commits[-1]
            states[table] = TableState(
                table=table,
                pointer=str(self._keep(table, commits)),
                version=head.version,
                files=self.table_files(table) if with_files else {},
                lineage=frozenset(c.id for c in commits),
                head=head.id,
            )
        return states

    def _keep(self, table: str, commits: Sequence[Commit]) -> Path:
        """The copy of the table's folder at its head version, made unless it
        exists; copies of an earlier table of the same name (one dropped and
        created again since) are deleted."""
        db, name = table.split(".")
        incarnation = backup_root() / db / name / str(commits[0].committed_ms)
        for other in incarnation.parent.glob("*"):
            if other != incarnation:
                shutil.rmtree(other)
        head = commits[-1]
        dest = incarnation / f"{head.version}-{head.committed_ms}"
        if not dest.exists():
            partial = dest.with_name(f"{dest.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(self._folder(table), partial, copy_function=_link_or_copy)
            partial.rename(dest)
        return dest

    def put_back(self, state: TableState) -> None:
        table = state.table
        if self.spark.catalog.tableExists(table):
            if self.history(table)[-1].id == state.head:
                return
        else:
            # Dropped since: a managed table again, whose folder gets the copy's files below.
            self.spark.sql(f"create table {table} (placeholder int) using delta")
        _mirror(Path(state.pointer), self._folder(table))
        java_class(self.spark, DELTA_LOG).clearCache()
        self.spark.sql(f"refresh table {table}")

    def drop(self, table: str) -> None:
        self.spark.sql(f"drop table {table}")  # a managed table's folder goes with it

    def version_summaries(self, table: str, before: TableState | None) -> list[dict[str, Any]]:
        commits = self.history(table)
        if before is not None and before.head in {c.id for c in commits}:
            commits = [c for c in commits if c.version > (before.version or 0)]
        return [{"operation": c.operation, **c.metrics} for c in commits]

    def state_of_pointer(self, table: str, pointer: str) -> TableState:
        # A recorded copy (tooling.bench.landing), named <version>-<commit time>.
        version, committed_ms = Path(pointer).name.split("-")
        return TableState(table, pointer, int(version), {}, head=f"{version}@{committed_ms}")


def _mirror(source: Path, folder: Path) -> None:
    """Make ``folder`` hold exactly the files of ``source``, linked (or copied) from it."""
    wanted = {path.relative_to(source) for path in source.rglob("*") if path.is_file()}
    for path in sorted(folder.rglob("*"), reverse=True):  # files before their folders
        relative = path.relative_to(folder)
        if path.is_file() and relative not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for relative in wanted:
        kept, live = source / relative, folder / relative
        if live.exists() and relative.name not in REWRITTEN and os.path.samefile(kept, live):
            continue
        live.parent.mkdir(parents=True, exist_ok=True)
        live.unlink(missing_ok=True)
        _link_or_copy(str(kept), str(live))


def _link_or_copy(source: str, dest: str) -> None:
    if Path(source).name in REWRITTEN:
        shutil.copy2(source, dest)
        return
    try:
        os.link(source, dest)
    except OSError:  # another file system
        shutil.copy2(source, dest)
