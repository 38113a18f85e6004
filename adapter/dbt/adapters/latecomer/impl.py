"""The latecomer adapter: dbt-spark with Python models on a Spark session.

``LatecomerAdapter`` is composed of one mixin per concern, each in its own
module beside this one: relations, columns and schemas (``relations``), the
invocation's memo (``memo``), the run's lock, clock and vars
(``run_context``), publication (``publishing``), table versions
(``versioning``) and what a run reports (``reporting``). This module keeps
the core: the adapter's type and state, Python model submission, ``execute``
and the hook every node passes before its materialization.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.latecomer.connections import LatecomerConnectionManager
from dbt.adapters.latecomer.locks import SCHEMA_CHANGING_SQL, holding, statement_head, table_write_lock
from dbt.adapters.latecomer.memo import MemoMixin
from dbt.adapters.latecomer.publishing import PublicationMixin
from dbt.adapters.latecomer.python_submissions import (
    SessionPythonJobHelper,
    ThriftPythonJobHelper,
    python_model_unsupported_message,
)
from dbt.adapters.latecomer.relations import RelationsMixin
from dbt.adapters.latecomer.reporting import ReportingMixin
from dbt.adapters.latecomer.run_context import RunContextMixin
from dbt.adapters.latecomer.scheduling import use_thread_pool
from dbt.adapters.latecomer.versioning import VersionsMixin
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import DbtRuntimeError

# Materializations that write no table: they get no default file_format.
NO_TABLE_MATERIALIZATIONS = ("view", "ephemeral")
# The nodes that get the target's table format when they set none: models,
# seeds and snapshots (not tests, unit tests or hooks, whose configs are other
# classes).
FORMATTED_RESOURCES = ("model", "seed", "snapshot")


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


class LatecomerAdapter(
    RelationsMixin,
    MemoMixin,
    RunContextMixin,
    PublicationMixin,
    VersionsMixin,
    ReportingMixin,
    SparkAdapter,
):
    """dbt-spark's adapter with the latecomer platform's procedures.

    The mixins come before ``SparkAdapter``, so their overrides of dbt-spark's
    methods win and their ``super()`` calls reach dbt-spark. Each mixin is a
    class of dbt's ``AdapterMeta``: its ``@available`` methods are in its
    ``_available_``, which this class's ``_available_`` collects, so Jinja's
    ``adapter`` reaches them.
    """

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

    def execute(self, sql: str, auto_begin: bool = False, fetch: bool = False, limit: int | None = None) -> Any:
        if SCHEMA_CHANGING_SQL.match(statement_head(sql)):
            self._forget_columns(sql)
        use_thread_pool()
        self._tell_run_branch()
        with holding(table_write_lock(sql), sql):
            return super().execute(sql, auto_begin=auto_begin, fetch=fetch, limit=limit)

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        self._columns.clear()
        use_thread_pool()
        return super().submit_python_job(parsed_model, compiled_code)

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
