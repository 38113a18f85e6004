"""The latecomer adapter: dbt-spark with Python models on a Spark session."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.latecomer import commit_notes
from dbt.adapters.latecomer.connections import LatecomerConnectionManager
from dbt.adapters.latecomer.locks import SCHEMA_CHANGING_SQL, holding, statement_head, table_write_lock
from dbt.adapters.latecomer.python_submissions import (
    SessionPythonJobHelper,
    ThriftPythonJobHelper,
    python_model_unsupported_message,
)
from dbt.adapters.latecomer.scheduling import use_thread_pool
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.clients.agate_helper import table_from_data_flat
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from python_jobs.core import (
    commit_metadata,
    digest,
    explain,
    gate,
    holds,
    publication,
    reader_views,
    run_clock,
    run_lock,
    run_vars,
    status_clock,
    versions,
)

ICEBERG_TABLE_PROPERTY = "table_type=iceberg"
# Materializations that write no table: they get no default file_format.
NO_TABLE_MATERIALIZATIONS = ("view", "ephemeral")
# The nodes that get the target's table format when they set none: models,
# seeds and snapshots (not tests, unit tests or hooks, whose configs are other
# classes).
FORMATTED_RESOURCES = ("model", "seed", "snapshot")
# The staging columns of a snapshot with a unique key of several columns.
SNAPSHOT_KEY_COLUMN = re.compile(r"dbt_unique_key_\d+")
# Spark 3.5's error class for a schema that does not exist.
SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"
# The deployment run locks this process holds: schema -> (invocation id, lock).
_run_locks: dict[str, tuple[str, run_lock.RunLock]] = {}
_run_locks_guard = threading.Lock()


# Memo key of the invocation's run stamp.
RUN_STAMP_KEY = "run_clock:stamp"
# Memo key prefix of the schemas a database holds (list_schemas).
SCHEMAS_MEMO = "adapter:list_schemas"


def _records(rows: Any) -> list[dict[str, Any]]:
    """Plain dicts from an agate table (a run_query result), its rows, or a list of dicts."""
    if rows is None:
        return []
    return [dict(row.items()) for row in getattr(rows, "rows", rows)]


def _tuples(rows: Any) -> list[tuple[Any, ...]]:
    """Plain tuples from an agate table or its rows, for results read by position."""
    if rows is None:
        return []
    return [tuple(row) for row in getattr(rows, "rows", rows)]


def _versions(entries: Any) -> list[versions.TableVersion]:
    """A version list from Jinja (dicts from table_versions()) as records."""
    return versions.table_versions(_records(entries))


def _version_dict(entry: versions.TableVersion | None) -> dict[str, str] | None:
    return None if entry is None else entry.as_dict()


def _wap_branch_sql(branch: str | None) -> str:
    """The statement that points a Spark session's writes of WAP tables at ``branch`` (None: at main)."""
    return f"set spark.wap.branch = {branch}" if branch else "reset spark.wap.branch"


def _failed(error: Exception) -> DbtRuntimeError:
    return DbtRuntimeError(str(error))


def default_file_format(node_config: Any, table_format: str) -> None:
    """Give a node that writes a table and sets no ``file_format`` the target's table format.

    dbt-spark's materializations read ``config.get('file_format')`` and fall
    back to Parquet (plain Hive tables: no merge, no snapshots, no atomic
    replace). The target's ``table_format`` is the adapter's default instead,
    the way dbt-databricks defaults to Delta. Set on the node's config, which
    every ``config.get`` of the invocation reads; views and ephemeral models
    write no table and keep no file format (dbt-spark would treat a view with
    one as a table when persisting column docs).
    """
    if node_config is None or node_config.get("file_format"):
        return
    if node_config.get("materialized") in NO_TABLE_MATERIALIZATIONS:
        return
    node_config["file_format"] = table_format


class LatecomerAdapter(SparkAdapter):
    ConnectionManager = LatecomerConnectionManager

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Both are kept for one dbt invocation only (keyed by its id): another
        # invocation, or anything outside dbt, may have changed the tables since.
        self._columns: dict[tuple[str, str], list[Any]] = {}
        self._memo: dict[tuple[str, str], Any] = {}
        # One lock per memo_query key: threads asking at once run it once.
        self._memo_locks: dict[tuple[str, str], threading.Lock] = {}
        self._memo_locks_guard = threading.Lock()
        # Staged publication (python_jobs/core/publication.py): the run branch
        # of an invocation, the tables it staged, and on a Thrift target the
        # branch each connection's session was last told.
        self._run_branches: dict[str, str] = {}
        self._staged: dict[str, set[str]] = {}
        # On Delta: the run name each invocation tags its commits with.
        self._delta_runs: dict[str, str] = {}
        self._branch_told: dict[int, str | None] = {}

    @classmethod
    def type(cls) -> str:
        return "latecomer"

    @property
    def runs_python(self) -> bool:
        return self.config.credentials.method == SparkConnectionMethod.SESSION

    @property
    def default_python_submission_method(self) -> str:
        return "session" if self.runs_python else "unsupported"

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        return {
            **super().python_submission_helpers,
            "session": SessionPythonJobHelper,
            "unsupported": ThriftPythonJobHelper,
        }

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Callable[[Any], Any]) -> list[Any]:
        """dbt-spark's relation list, with Iceberg tables of a Hive catalog recognised.

        Through Iceberg's SparkSessionCatalog, ``show table extended`` reports an
        Iceberg table as ``Provider: hive`` with the table property
        ``table_type=ICEBERG``; dbt-spark only looks for ``Provider: iceberg``.
        Unrecognised, every table-materialized model was dropped (without
        purge, so its files stayed behind) and recreated on each run instead
        of being replaced atomically with its history kept.

        ``show table extended in <schema>`` also lists the session's temporary
        views (namespace ``''``): the ``<model>__dbt_tmp`` views incremental
        runs leave in a long-lived session (the Thrift server, a process that
        runs dbt many times). They belong to no schema, so they are left out;
        cached, they appeared as relations of every schema listed.
        """
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        return [
            relation.incorporate(is_iceberg=True)
            if ICEBERG_TABLE_PROPERTY in (relation.information or "").lower()
            else relation
            for relation in relations
            if relation.schema
        ]

    def get_columns_in_relation(self, relation: Any) -> list[Any]:
        """dbt-spark's columns (a ``describe table extended``), kept for the invocation.

        dbt asks for a relation's columns several times per model (schema-change
        checks, merge column lists); each ask is a round trip to the metastore.
        The entry is dropped when a statement that can change the relation runs
        (see ``execute``).
        """
        key = (get_invocation_id(), relation.render().lower())
        # One get, never a check then a read: another thread may forget the
        # entry in between.
        columns = self._columns.get(key)
        if columns is None:
            columns = super().get_columns_in_relation(relation)
            if not columns:
                return columns
            self._columns[key] = columns
        return list(columns)

    def get_missing_columns(self, from_relation: Any, to_relation: Any) -> list[Any]:
        """The columns of ``from_relation`` that ``to_relation`` lacks, names compared as Spark does.

        dbt compares the names exactly; Spark's are case-insensitive
        (``spark.sql.caseSensitive`` is off), so a snapshot whose
        ``dbt_valid_to`` is configured as ``TEST_VALID_TO`` found its own
        column missing and failed adding it again (FIELDS_ALREADY_EXISTS). The
        ``dbt_unique_key_<n>`` columns of a snapshot's staging table (a unique
        key of several columns) are never missing: dbt-spark's snapshot
        materialization leaves out only ``dbt_unique_key``, where dbt's own
        leaves out both.
        """
        present = {column.name.lower() for column in self.get_columns_in_relation(to_relation)}
        return [
            column
            for column in self.get_columns_in_relation(from_relation)
            if column.name.lower() not in present and not SNAPSHOT_KEY_COLUMN.fullmatch(column.name.lower())
        ]

    def _get_columns_for_catalog(self, relation: Any) -> Iterator[dict[str, Any]]:
        """A relation's columns for ``dbt docs generate``: Spark SQL's type names, numbered from 1.

        dbt-spark reads them from ``show table extended``'s schema tree, whose
        types are Spark's internal names (``long``, ``integer``) rather than
        the SQL ones a reader writes and ``describe`` shows (``bigint``,
        ``int``), and numbers them from 0 where every other adapter's catalog
        gives the ordinal position (from 1).
        """
        for position, column in enumerate(self.get_columns_in_relation(relation), start=1):
            entry = column.to_column_dict()
            entry["column_name"] = entry.pop("column", None)
            entry["column_type"] = entry.pop("dtype")
            entry["column_index"] = position
            entry["table_database"] = None
            yield entry

    def list_schemas(self, database: str | None) -> list[str]:
        """dbt-spark's schemas (``show databases``), asked once per invocation.

        Before any model runs, dbt asks once for each schema the build writes
        to (seven in this project), each a round trip to the metastore; the
        answers are all the same. Creating or dropping a schema through the
        adapter forgets it.
        """
        ask = super().list_schemas
        return list(self._memo_once(f"{SCHEMAS_MEMO}:{database}", lambda: list(ask(database))))

    def create_schema(self, relation: Any) -> None:
        self._forget_schemas()
        super().create_schema(relation)

    def drop_schema(self, relation: Any) -> None:
        """dbt-spark's ``drop schema ... cascade``, after dropping each of its relations on Iceberg.

        The cascade removes the schema's tables from the metastore only:
        Iceberg's catalog in the session goes on finding every table it has
        loaded (a new table of the same name then already exists). Dropped one
        by one (``drop_relation``), they are forgotten by Iceberg's catalog.
        """
        self._forget_schemas()
        if self.config.credentials.table_format == "iceberg":
            for member in self._relations_if_schema_exists(relation):
                self.drop_relation(member)
        super().drop_schema(relation)

    def _relations_if_schema_exists(self, schema_relation: Any) -> list[Any]:
        """The schema's relations; none when the schema does not exist (dbt-spark
        recognises Spark's SCHEMA_NOT_FOUND only in the error's ``msg``, which the
        macro call's error wraps)."""
        try:
            return self.list_relations_without_caching(schema_relation)
        except DbtRuntimeError as error:
            if SCHEMA_NOT_FOUND in str(error):
                return []
            raise

    def _forget_schemas(self) -> None:
        for key in [key for key in self._memo if key[1].startswith(SCHEMAS_MEMO + ":")]:
            self._memo.pop(key, None)

    def execute(self, sql: str, auto_begin: bool = False, fetch: bool = False, limit: int | None = None) -> Any:
        if SCHEMA_CHANGING_SQL.match(statement_head(sql)):
            self._forget_columns(sql)
        use_thread_pool()
        self._tell_run_branch()
        with holding(table_write_lock(sql), sql):
            return super().execute(sql, auto_begin=auto_begin, fetch=fetch, limit=limit)

    def _tell_run_branch(self) -> None:
        """On a Thrift target, give this thread's session the run branch (each
        connection is a session of its own there; on a session target the one
        Spark session was told by ``begin_staged_publication``)."""
        if self.runs_python:
            return
        connection = self.connections.get_if_exists()
        if connection is None or connection.handle is None:
            return
        wanted = self._run_branches.get(get_invocation_id())
        key = id(connection.handle)
        if self._branch_told.get(key) != wanted:
            super().execute(_wap_branch_sql(wanted))
            self._branch_told[key] = wanted

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        self._columns.clear()
        use_thread_pool()
        return super().submit_python_job(parsed_model, compiled_code)

    def drop_relation(self, relation: Any) -> None:
        """dbt's drop, given the cached relation when ``relation`` says nothing of its provider.

        dbt forgets the relation in its cache before the ``drop_relation``
        macro runs, so the macro cannot look it up there; whether a table is
        purged (``latecomer__drop_relation``) depends on its provider, which
        only the cached relation (from ``show table extended``) knows.
        """
        self._columns.clear()
        if relation.information is None:
            relation = next(
                (
                    cached
                    for cached in self.cache.get_relations(relation.database, relation.schema)
                    if cached.identifier == relation.identifier and cached.type == relation.type
                ),
                relation,
            )
        super().drop_relation(relation)

    def rename_relation(self, from_relation: Any, to_relation: Any) -> None:
        self._columns.clear()
        super().rename_relation(from_relation, to_relation)

    def _forget_columns(self, sql: str) -> None:
        text = sql.lower()
        for key in list(self._columns):
            if re.search(r"(?<![\w.])" + re.escape(key[1]) + r"(?![\w])", text):
                self._columns.pop(key, None)

    @available
    def memo_has(self, key: str) -> bool:
        """Whether ``memo_set`` kept a value under ``key`` in this invocation."""
        return (get_invocation_id(), key) in self._memo

    @available
    def memo_get(self, key: str) -> Any:
        return self._memo.get((get_invocation_id(), key))

    @available
    def memo_set(self, key: str, value: Any) -> str:
        """Keep ``value`` for the rest of this invocation (a figure every model needs once)."""
        self._memo[(get_invocation_id(), key)] = value
        return ""

    @available
    def passing_test_result(self) -> dict[str, Any]:
        """A data test's result, passed, for a test answered without a query.

        The shape dbt's test runner reads from ``load_result('main')``: one row
        of failures, should_warn and should_error, and the adapter's response.
        """
        table = table_from_data_flat(
            [{"failures": 0, "should_warn": False, "should_error": False}],
            ["failures", "should_warn", "should_error"],
        )
        return {"response": AdapterResponse(_message="OK"), "table": table}

    @available
    def memo_query(self, key: str, sql: str) -> list[dict[str, Any]]:
        """The rows of ``sql`` (as dicts), queried once per invocation under ``key``.

        A thread that asks while another one runs the query waits for its
        answer instead of running it again (tests that run side by side and
        share one figure).
        """

        def rows() -> list[dict[str, Any]]:
            _, table = self.execute(sql, fetch=True)
            return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]

        return self._memo_once(key, rows)

    def _memo_once(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value kept under ``key`` in this invocation, computed by the
        first thread to ask; the others wait for it."""
        memo_key = (get_invocation_id(), key)
        with self._memo_locks_guard:
            lock = self._memo_locks.setdefault(memo_key, threading.Lock())
        with lock:
            if memo_key not in self._memo:
                self._memo[memo_key] = compute()
        return self._memo[memo_key]

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        """Before a node's materialization starts (models, seeds, snapshots, tests).

        A Python model on a Thrift/HTTP target fails here: the materialization
        would otherwise run pre-hooks and, for a table whose format is neither
        Delta nor Iceberg, drop the old table before it reaches the Python
        submission. A node that writes a table and sets no ``file_format``
        gets the target's table format (``default_file_format``).
        """
        model = getattr(config, "model", None)
        if getattr(model, "language", None) == "python" and not self.runs_python:
            raise DbtRuntimeError(python_model_unsupported_message(model.name, self.config.credentials))
        if getattr(model, "resource_type", None) in FORMATTED_RESOURCES:
            default_file_format(model.config, self.config.credentials.table_format)
        return super().pre_model_hook(config)

    @available
    def acquire_run_lock(self, what: str, operation: str = "build") -> str:
        """Take the deployment's run locks (python_jobs.core.run_lock) for this invocation.

        Called by the first on-run-start hook (``operation`` build) and by the
        run-operations that write (``restore``, ``maintain``: on a shared
        catalog they hold the bronze append lock too, which landings take);
        ``release_run_lock`` (the last on-run-end hook) frees them, and so
        does the end of the process. Locks this process still holds for an
        earlier invocation (one that failed before its on-run-end) are
        released first; the ones this invocation holds already are kept.
        """
        schema = self.config.credentials.schema
        invocation = get_invocation_id()
        with _run_locks_guard:
            held = _run_locks.pop(schema.lower(), None)
            if held is not None and held[0] == invocation:
                _run_locks[schema.lower()] = held
                return ""
            if held is not None:
                held[1].release()
            try:
                lock = run_lock.acquire_for(run_lock.Operation[operation.upper()], schema, what)
            except run_lock.RunLockError as error:
                raise _failed(error) from None
            _run_locks[schema.lower()] = (invocation, lock)
        return ""

    @available
    def release_run_lock(self) -> str:
        """Release the run lock this invocation took (a no-op when it holds none)."""
        schema = self.config.credentials.schema.lower()
        with _run_locks_guard:
            held = _run_locks.get(schema)
            if held is not None and held[0] == get_invocation_id():
                del _run_locks[schema]
                held[1].release()
        return ""

    def cleanup_connections(self) -> None:
        """dbt's last call of an invocation (after on-run-end, and after a
        run-operation, even one that raised): the run lock is released here
        too, so a failing hook or macro never leaves it held in a process that
        goes on to run other invocations."""
        try:
            self.release_run_lock()
        finally:
            super().cleanup_connections()

    @available
    def begin_staged_publication(self) -> str:
        """Send this invocation's writes to tables with ``write.wap.enabled`` to its
        run branch (``spark.wap.branch``); returns the branch's name."""
        branch = publication.run_branch(get_invocation_id())
        self._run_branches[get_invocation_id()] = branch
        self._staged[get_invocation_id()] = set()
        self._branch_told.clear()
        super().execute(_wap_branch_sql(branch))
        return branch

    @available
    def begin_delta_publication(self) -> str:
        """Tag every Delta commit of this invocation with its run name
        (publication.DELTA_RUN_TAG); returns the name."""
        run = publication.run_branch(get_invocation_id())
        self._delta_runs[get_invocation_id()] = run
        spark = self._session()
        if spark is not None:
            # with the restated models' notes (commit_notes); a failed write's is gone
            commit_notes.clear(spark)
            commit_notes.set_run(spark, run)
        else:
            super().execute(f"set {publication.DELTA_RUN_TAG} = {run}")
        return run

    @available
    def end_delta_publication(self) -> str | None:
        """Stop tagging commits; returns the run's name (None when it tagged none)."""
        run = self._delta_runs.pop(get_invocation_id(), None)
        spark = self._session()
        if spark is not None:
            commit_notes.clear(spark)
            commit_notes.set_run(spark, None)
        elif run is not None:
            super().execute(f"reset {publication.DELTA_RUN_TAG}")
        return run

    @available
    def version_before_run(self, history: Any, run: str) -> int | None:
        """publication.version_before_run over a DESCRIBE HISTORY result (an agate table)."""
        columns = list(history.column_names)
        version, tag = columns.index("version"), columns.index("userMetadata")
        return publication.version_before_run(((row[version], row[tag]) for row in history.rows), run)

    @available
    def run_branch(self) -> str | None:
        """The branch this invocation stages on, or None when it publishes directly."""
        return self._run_branches.get(get_invocation_id())

    @available
    def record_staged_write(self, relation: Any) -> str:
        """Note that ``relation`` is about to be written on the run branch."""
        self._staged.setdefault(get_invocation_id(), set()).add(str(relation).replace("`", "").lower())
        return ""

    @available
    def staged_relations(self) -> list[str]:
        """The tables this invocation wrote on its run branch, in name order."""
        return sorted(self._staged.get(get_invocation_id(), ()))

    @available
    def is_staged(self, relation: Any) -> bool:
        return str(relation).replace("`", "").lower() in self._staged.get(get_invocation_id(), ())

    @available
    def publication_decision(self, results: Any) -> dict[str, Any]:
        """Whether the run's staged tables are published (python_jobs.core.publication.decide),
        from on-run-end's ``results``."""
        decision = publication.decide(
            (getattr(result.node, "name", "?"), getattr(result.status, "value", result.status)) for result in results
        )
        return {"publish": decision.publish, "summary": decision.summary}

    @available
    def stale_run_branches(self, ref_names: Any) -> list[str]:
        """The run branches among ``ref_names`` that no run will publish (python_jobs.core.publication)."""
        return publication.stale_branches((str(name) for name in ref_names), self.run_branch())

    @available
    def end_staged_publication(self) -> str:
        """Writes go to ``main`` again, in this session and every connection's."""
        self._run_branches.pop(get_invocation_id(), None)
        self._staged.pop(get_invocation_id(), None)
        super().execute(_wap_branch_sql(None))
        return ""

    @available
    def reader_views_enabled(self) -> bool:
        """Whether builds publish readers' views (python_jobs.core.reader_views):
        on a shared catalog, where readers query while builds publish."""
        return run_lock.shared_catalog()

    @available
    def publish_reader_views(self, relations: Any, invocation_id: str) -> str:
        """Move the readers' slots of ``relations`` (the published tables) to their
        current versions, then the pointer (python_jobs.core.reader_views), for the
        run of ``invocation_id``; returns what was done, for the log."""
        table_format = self.config.credentials.table_format
        schema = self.config.credentials.schema
        sources = {str(relation.identifier).lower(): str(relation) for relation in relations}
        versions = {}
        for table, source in sources.items():
            version = self._current_version(source, table_format)
            if version is not None:
                versions[table] = version
        if not versions:
            return "Reader views: no published table"
        published = reader_views.published_schema(schema)
        self.execute(f"create schema if not exists {published}")
        self.execute(reader_views.pointer_table_sql(schema, table_format))
        _, rows = self.execute(reader_views.last_publication_sql(schema), fetch=True)
        current = reader_views.parse_pointer([dict(zip(rows.column_names, row, strict=True)) for row in rows.rows])
        # Queries that may still read the slots this publication reuses read a
        # publication before the last one: they were planned before it took effect.
        time.sleep(reader_views.seconds_to_wait_before_slots(current, time.time()))
        new = reader_views.next_publication(current, publication.run_branch(invocation_id), versions)
        narrowed = []
        for table in sorted(new.versions):
            source, version = sources[table], new.versions[table]
            is_new = current is None or table not in current.versions
            if table_format != "delta":
                if is_new:
                    # Both slots hold the table as it is now, so a query naming the
                    # current publication reads it too.
                    self.execute(reader_views.tag_sql(source, new.seq - 1, version))
                self.execute(reader_views.tag_sql(source, new.seq, version))
                self.execute(reader_views.iceberg_view_sql(schema, table, source))
                continue
            table_slots = reader_views.slots(current, new, table)
            try:
                self.execute(reader_views.delta_view_sql(schema, table, source, table_slots))
            except DbtDatabaseError:
                if len(table_slots) == 1:
                    raise
                # The columns changed since the current publication: the new slot only.
                self.execute(
                    reader_views.delta_view_sql(schema, table, source, reader_views.fallback_slots(table_slots))
                )
                narrowed.append(table)
        # It takes effect once every query that loaded a slot before it moved has been planned.
        now = time.time()
        moved = reader_views.Publication(new.seq, new.run, now, new.versions, now + reader_views.lag_seconds())
        self.execute(reader_views.pointer_sql(schema, moved))
        return f"Reader views: publication {moved.seq} ({len(moved.versions)} table(s)) readable in {published}" + (
            f"; columns changed, new slot only: {', '.join(narrowed)}" if narrowed else ""
        )

    def _current_version(self, relation: str, table_format: str) -> str | None:
        """The version readers are pinned to: Iceberg's ``main`` snapshot id, Delta's latest version."""
        if table_format == "delta":
            _, table = self.execute(f"describe history {relation} limit 1", fetch=True)
            column = list(table.column_names).index("version")
        else:
            _, table = self.execute(f"select snapshot_id from {relation}.refs where name = 'main'", fetch=True)
            column = 0
        return str(table.rows[0][column]) if table.rows else None

    @available
    def code_version(self) -> str | None:
        """The project's git commit (with ``-dirty`` for uncommitted changes), or None outside git."""
        root = Path(self.config.project_root)
        try:
            commit = subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        return f"{commit}-dirty" if dirty else commit

    @available
    def project_fingerprint(self) -> str:
        """A hash of what every model's output depends on besides its own file and its
        inputs: the project's and the command line's vars, and the macros' source.

        A model skipped because its inputs did not move (``inputs_fingerprint``)
        is built again once any of these changes. Computed once per invocation.
        """
        key = (get_invocation_id(), "project_fingerprint")
        if key not in self._memo:
            digest = hashlib.sha256()
            project_vars = {"project": self.config.vars.to_dict(), "cli": self.config.cli_vars}
            digest.update(json.dumps(project_vars, sort_keys=True, default=str).encode())
            root = Path(self.config.project_root)
            for folder in self.config.macro_paths:
                for path in sorted((root / folder).rglob("*.sql")):
                    digest.update(str(path.relative_to(root)).encode())
                    digest.update(path.read_bytes())
            self._memo[key] = digest.hexdigest()
        return self._memo[key]

    @available
    def backfill_window(self, start: Any, end: Any, reason: Any, mode: Any) -> dict[str, str] | None:
        """python_jobs.core.run_vars.backfill_window: the backfill vars' window, or None; fails naming the bad var."""
        try:
            window = run_vars.backfill_window(start, end, reason, mode)
        except run_vars.RunVarsError as error:
            raise _failed(error) from error
        return window.as_macro_value() if window else None

    @available
    def backfill_mode(self, mode: Any) -> str:
        """python_jobs.core.run_vars.backfill_mode: backfill or replay; fails naming the value otherwise."""
        try:
            return run_vars.backfill_mode(mode)
        except run_vars.RunVarsError as error:
            raise _failed(error) from error

    @available
    def as_of_problem(self, text: Any, format_only: bool = False) -> str | None:
        """python_jobs.core.run_vars.as_of_problem (or, with ``format_only``, as_of_format_problem)."""
        check = run_vars.as_of_format_problem if format_only else run_vars.as_of_problem
        return check(str(text))

    @available
    def status_epoch(self, as_of: Any, boundary_hours: Any) -> str:
        """python_jobs.core.status_clock.status_epoch, as ISO text."""
        try:
            return status_clock.status_epoch(as_of, list(boundary_hours)).isoformat()
        except ValueError as error:
            raise _failed(error) from error

    @available
    def start_run_clock(self, wall_clock: Any, last: str | None) -> str:
        """This invocation's stamp (python_jobs.core.run_clock.run_stamp), kept for ``run_stamp``."""
        try:
            stamp = run_clock.format_stamp(run_clock.run_stamp(wall_clock, last))
        except ValueError as error:
            raise _failed(error) from error
        self._memo[(get_invocation_id(), RUN_STAMP_KEY)] = stamp
        return stamp

    @available
    def run_stamp(self) -> str | None:
        """The stamp ``start_run_clock`` set for this invocation, or None (a run-operation, a parse)."""
        return self._memo.get((get_invocation_id(), RUN_STAMP_KEY))

    @available
    def write_json_artifact(self, relative_path: str, payload: Any) -> str:
        """Write ``payload`` as JSON under the target path; returns the file written."""
        return self._write_artifact(relative_path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")

    def _write_artifact(self, relative_path: str, text: str) -> str:
        target = Path(self.config.project_root) / self.config.target_path
        path = (target / relative_path).resolve()
        if target.resolve() not in path.parents:
            raise DbtRuntimeError(f"{relative_path} is outside the target path")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    @available
    def restatement_digest(
        self, manifest_rows: Any, invocation_id: str, as_of: str | None, hold_rows: Any = None
    ) -> dict[str, Any]:
        """The run's restatement digest (python_jobs.core.digest) from its change
        manifest rows: written as Markdown and JSON under the target path
        (``restatement_digest.md``/``.json``, and per run under
        ``restatement_digests/``), and POSTed to the URL in
        ``LATECOMER_DIGEST_WEBHOOK`` when it is set; ``hold_rows``: the
        publication holds open after the run or closed by it. Returns
        ``{periods, holds, path, webhook}``; ``webhook`` is ``delivered``,
        ``not configured`` or why it failed: a failed delivery never fails the
        build.
        """
        run = digest.digest_of(
            _records(manifest_rows), invocation_id, as_of, holds=_records(hold_rows) if hold_rows is not None else ()
        )
        payload, markdown = digest.as_json(run), digest.as_markdown(run)
        path = self.write_json_artifact("restatement_digest.json", payload)
        self.write_json_artifact(f"restatement_digests/{invocation_id}.json", payload)
        self._write_artifact("restatement_digest.md", markdown)
        self._write_artifact(f"restatement_digests/{invocation_id}.md", markdown)
        url = os.environ.get(digest.WEBHOOK_ENV, "").strip()
        failure = digest.deliver(url, payload) if url else None
        webhook = "not configured" if not url else "delivered" if failure is None else f"failed ({failure})"
        return {"periods": len(run.periods), "holds": len(run.open_holds), "path": path, "webhook": webhook}

    @available
    def explain_row(self, model: str, row: Any) -> dict[str, Any]:
        """Where the steps of one row of a gold model are (python_jobs.core.explain):
        ``{causes, predicate, label}``, or ``{error}``."""
        try:
            request = explain.row_request(str(model), dict(row))
        except ValueError as error:
            return {"error": str(error)}
        return {"causes": request.causes, "predicate": request.predicate, "label": request.label}

    @available
    def explain_change(
        self, rows: Any, from_version: Any, to_version: Any, measure: str, label: str | None = None
    ) -> dict[str, Any]:
        """A gold row's change between two versions by cause (python_jobs.core.explain),
        from its rows of its causes model: ``{text, explained}`` (explained: the
        causes add up to the change), or ``{error}``."""
        try:
            found = explain.explain(
                _records(rows),
                None if from_version is None else int(from_version),
                None if to_version is None else int(to_version),
                label,
            )
            return {"text": explain.describe(found, measure), "explained": not any(found.remainder.values())}
        except ValueError as error:
            return {"error": str(error)}

    # ----------------------------------------------------------------------
    # Procedures behind the macros (python_jobs.core.versions and .gate).
    # The macros run the SQL and pass its rows (agate tables, or lists of the
    # dicts table_versions() returns); these methods convert them, call the
    # core and return plain dicts, lists and strings. A request that cannot be
    # answered comes back as {"error": message}: the macro raises it with
    # exceptions.raise_compiler_error, so dbt shows the message as written.

    @available
    def version_with_id(self, table_versions: Any, version_id: str) -> dict[str, str] | None:
        """The latest entry of ``table_versions`` with that version id, or None."""
        return _version_dict(versions.version_with_id(_versions(table_versions), version_id))

    @available
    def version_current_at(self, table_versions: Any, at: str) -> dict[str, str] | None:
        """The entry current at ``at`` (UTC; a commit exactly at ``at`` counts), or None."""
        try:
            return _version_dict(versions.version_current_at(_versions(table_versions), at))
        except versions.VersionsError as error:
            raise _failed(error) from None

    @available
    def invocation_lookup(self, relation: str, invocation_id: Any, column_names: Iterable[str]) -> dict[str, Any]:
        """``{invocation_id}`` (trimmed) when ``relation``'s versions can be mapped to that run, else ``{error}``."""
        try:
            checked = versions.checked_invocation_id(invocation_id, str(relation), column_names)
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {"invocation_id": checked, "error": None}

    @available
    def version_left_by_invocation(self, table_versions: Any, runs: Any) -> dict[str, str] | None:
        """The entry a run left the table in, from rows ``{version, newest_run_at, run_at}``, or None."""
        return _version_dict(versions.version_left_by_invocation(_versions(table_versions), _records(runs)))

    @available
    def partition_layout(self, relation: str, columns: Any, partition_column: str, keys: Any) -> dict[str, Any]:
        """``{keys, measures, extras}`` of a table's columns (dbt Column objects), or ``{error}``."""
        try:
            layout = versions.partition_layout(
                str(relation), [(column.name, column.dtype) for column in columns], partition_column, list(keys)
            )
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {
            "keys": list(layout.keys),
            "measures": list(layout.measures),
            "extras": list(layout.extras),
            "error": None,
        }

    @available
    def changed_versions(self, table_versions: Any, fingerprints: Any) -> list[dict[str, str]]:
        """The entries at which a partition's rows changed, from rows ``{version, fingerprint}``."""
        kept = versions.changed_versions(_versions(table_versions), _records(fingerprints))
        return [entry.as_dict() for entry in kept]

    @available
    def partition_history(self, layout: Mapping[str, Any], kept: Any, rows: Any, table_versions: int) -> dict[str, Any]:
        """What partition_versions returns, from the kept states' rows (``state_rank``, columns as text)."""
        record = versions.PartitionLayout(
            keys=tuple(layout["keys"]), measures=tuple(layout["measures"]), extras=tuple(layout["extras"])
        )
        states = versions.partition_states(_versions(kept), _records(rows), record)
        return versions.partition_history(record, states, int(table_versions))

    @available
    def partition_history_report(
        self, relation: str, partition_column: str, partition_value: Any, history: Mapping[str, Any]
    ) -> list[str]:
        """The lines gold_versions prints for a partition_versions result."""
        return versions.partition_history_report(str(relation), partition_column, partition_value, history)

    @available
    def restore_request(
        self, model: Any, version: Any, as_of_time: Any, invocation_id: Any, reason: Any, allowed_models: Any
    ) -> dict[str, Any]:
        """restore_table's arguments checked (``model`` among ``allowed_models``):
        ``{model, reason, selector, value, raw_value, text}`` or ``{error}``."""
        try:
            request = versions.restore_request(
                model, version, as_of_time, invocation_id, reason, allowed_models=[str(m) for m in allowed_models]
            )
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {
            "model": request.model,
            "reason": request.reason,
            "selector": request.selector,
            "value": request.value,
            "raw_value": request.raw_value,
            "text": request.text,
            "error": None,
        }

    @available
    def restore_target_missing(self, request: Mapping[str, Any], relation: str, table_versions: Any) -> str:
        """The error for a restore whose version is unknown, not yet existing or expired."""
        checked = versions.RestoreRequest(
            model=request["model"],
            reason=request["reason"],
            selector=request["selector"],
            value=request["value"],
            raw_value=request["raw_value"],
        )
        return versions.restore_target_missing(checked, str(relation), _versions(table_versions))

    @available
    def retention_boundary(self, table_versions: Any, cutoff: str) -> dict[str, Any]:
        """``{expire_before, protected}`` for a horizon beginning at ``cutoff`` (UTC)."""
        try:
            boundary = versions.retention_boundary(_versions(table_versions), cutoff)
        except versions.VersionsError as error:
            raise _failed(error) from None
        return {"expire_before": boundary.expire_before, "protected": [entry.as_dict() for entry in boundary.protected]}

    @available
    def retention_properties_to_set(self, wanted: Mapping[str, str], current: Any) -> dict[str, str]:
        """The wanted properties whose value in ``current`` (``show tblproperties`` rows) differs."""
        return versions.properties_to_set(wanted, _tuples(current))

    @available
    def maintenance_header(
        self, dry_run: bool, table_count: int, table_format: str, hours: int, cutoff: str, now: Any = None
    ) -> str:
        """maintain_tables' first line."""
        return versions.maintenance_header(dry_run, table_count, table_format, hours, cutoff, now)

    @available
    def table_maintenance(
        self,
        totals: Mapping[str, Any],
        relation: str,
        dry_run: bool,
        changed_properties: Any,
        compaction: Mapping[str, Any] | None = None,
        table_versions: Any = None,
        boundary: Mapping[str, Any] | None = None,
        expiry: Mapping[str, Any] | None = None,
        orphans: Mapping[str, Any] | None = None,
        versions_after: Any = None,
    ) -> dict[str, Any]:
        """One table's maintenance line and the totals after it, ``{line, totals}``, or ``{error}``.

        Without ``table_versions`` the table has no version yet (only its
        properties were set). Outside a dry run, ``versions_after`` is the
        version log after expiry; a protected version missing from it is the error.
        """
        totals_before = versions.MaintenanceTotals.from_mapping(totals)
        properties = list(changed_properties or [])
        if table_versions is None:
            done = versions.unversioned_table_maintenance(totals_before, properties)
        else:
            boundary = boundary or {"expire_before": None, "protected": []}
            checked = versions.RetentionBoundary(
                expire_before=boundary["expire_before"], protected=tuple(_versions(boundary["protected"]))
            )
            try:
                done = versions.table_maintenance(
                    totals_before,
                    str(relation),
                    bool(dry_run),
                    properties,
                    compaction or {},
                    _versions(table_versions),
                    checked,
                    expiry or {},
                    orphans or {},
                    None if versions_after is None else _versions(versions_after),
                )
            except versions.VersionsError as error:
                return {"error": str(error)}
        return {"line": done.line, "totals": done.totals.as_dict(), "error": None}

    @available
    def maintenance_summary(self, totals: Mapping[str, Any], dry_run: bool, table_count: int, cutoff: str) -> str:
        """maintain_tables' last line."""
        running = versions.MaintenanceTotals.from_mapping(totals)
        return versions.maintenance_summary(running, dry_run, table_count, cutoff)

    def _session(self) -> Any:
        """This process's Spark session on a session target, else None (a Thrift server's sessions are its own)."""
        if not self.runs_python:
            return None
        wrapper = getattr(self.connections.get_if_exists(), "handle", None)  # connections.SessionConnectionWrapper
        return getattr(getattr(wrapper, "handle", None), "spark", None)

    @available
    def note_delta_commits(self, relation: Any, fingerprint: str) -> bool:
        """Carry ``fingerprint`` on the Delta commits made until ``end_delta_commit_note``
        (dbt.adapters.latecomer.commit_notes); False where it cannot (a Thrift target)."""
        spark = self._session()
        if spark is None:
            return False
        commit_notes.add(spark, relation, fingerprint)
        return True

    @available
    def end_delta_commit_note(self, relation: Any = None) -> str:
        """Stop carrying ``relation``'s note on Delta commits; every note when ``relation`` is none."""
        spark = self._session()
        if spark is not None:
            if relation is None:
                commit_notes.clear(spark)
            else:
                commit_notes.drop(spark, relation)
        return ""

    @available
    def delta_commit_note(self, history_rows: Any, relation: Any) -> str | None:
        """The note ``relation``'s last commit carries (DESCRIBE HISTORY ... LIMIT 1 rows), if that commit wrote it."""
        return commit_metadata.note_of_last_commit(_records(history_rows), relation)

    @available
    def iceberg_versions(self, log_rows: Any) -> list[dict[str, str]]:
        """table_versions() of an Iceberg table, from its snapshot log rows (restores marked)."""
        return [entry.as_dict() for entry in versions.iceberg_versions(_records(log_rows))]

    @available
    def delta_versions(self, history_rows: Any) -> list[dict[str, str]]:
        """table_versions() of a Delta table, from DESCRIBE HISTORY rows (newest first)."""
        return [entry.as_dict() for entry in versions.delta_versions(_records(history_rows))]

    @available
    def publication_gate_holds(
        self,
        group_figures: Any,
        open_holds: Any,
        measure: str,
        limits: Mapping[str, Any],
        model: str,
        count: str | None = None,
        override: str | None = None,
        actor: str | None = None,
    ) -> dict[str, Any]:
        """The publication gate on per-partition, per-group figures (python_jobs.core.gate),
        and what it does to the model's holds (python_jobs.core.holds).

        Returns ``{checks, breaches, summary, events, held_partitions,
        events_summary}``: ``checks`` the figures and limits as logged,
        ``breaches`` a list of ``{figure, partition, group, observed,
        allowed: [low, high], message}``, ``events`` the hold log's rows,
        ``held_partitions`` the partitions this write leaves as published.
        ``{error}`` when the ``publication_gate`` var cannot be used.
        """
        try:
            checked = gate.GateLimits.from_mapping(limits)
            judgement = gate.judge(
                measure, [gate.GroupFigures.from_mapping(row) for row in _records(group_figures)], checked, count=count
            )
            decision = holds.decide(
                judgement,
                [holds.OpenHold.from_mapping(row) for row in _records(open_holds)],
                str(model),
                get_invocation_id(),
                override=override,
                actor=actor,
            )
        except (gate.GateConfigError, ValueError) as error:
            return {"error": str(error)}
        return {
            "checks": judgement.figures.checks(checked),
            "breaches": [breach.as_dict() for breach in judgement.breaches],
            "summary": judgement.summary,
            "events": [event.as_dict() for event in decision.events],
            "held_partitions": decision.held_partitions,
            "events_summary": decision.summary,
            "error": None,
        }
