"""The latecomer adapter: dbt-spark with Python models on a Spark session."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.latecomer.connections import LatecomerConnectionManager
from dbt.adapters.latecomer.python_submissions import (
    SessionPythonJobHelper,
    ThriftPythonJobHelper,
    python_model_unsupported_message,
)
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

ICEBERG_TABLE_PROPERTY = "table_type=iceberg"
# Statements that may change a relation's columns (or the relation itself).
SCHEMA_CHANGING_SQL = re.compile(r"^\s*(create|replace|alter|drop)\b", re.IGNORECASE)


class LatecomerAdapter(SparkAdapter):
    ConnectionManager = LatecomerConnectionManager

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Both are kept for one dbt invocation only (keyed by its id): another
        # invocation, or anything outside dbt, may have changed the tables since.
        self._columns: dict[tuple[str, str], list[Any]] = {}
        self._memo: dict[tuple[str, str], Any] = {}

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
        """
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        return [
            relation.incorporate(is_iceberg=True)
            if ICEBERG_TABLE_PROPERTY in (relation.information or "").lower()
            else relation
            for relation in relations
        ]

    def get_columns_in_relation(self, relation: Any) -> list[Any]:
        """dbt-spark's columns (a ``describe table extended``), kept for the invocation.

        dbt asks for a relation's columns several times per model (schema-change
        checks, merge column lists); each ask is a round trip to the metastore.
        The entry is dropped when a statement that can change the relation runs
        (see ``execute``).
        """
        key = (get_invocation_id(), relation.render().lower())
        if key not in self._columns:
            columns = super().get_columns_in_relation(relation)
            if not columns:
                return columns
            self._columns[key] = columns
        return list(self._columns[key])

    def execute(self, sql: str, auto_begin: bool = False, fetch: bool = False, limit: int | None = None) -> Any:
        if SCHEMA_CHANGING_SQL.match(sql):
            self._forget_columns(sql)
        return super().execute(sql, auto_begin=auto_begin, fetch=fetch, limit=limit)

    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> Any:
        self._columns.clear()
        return super().submit_python_job(parsed_model, compiled_code)

    def drop_relation(self, relation: Any) -> None:
        self._columns.clear()
        super().drop_relation(relation)

    def rename_relation(self, from_relation: Any, to_relation: Any) -> None:
        self._columns.clear()
        super().rename_relation(from_relation, to_relation)

    def _forget_columns(self, sql: str) -> None:
        text = sql.lower()
        for key in list(self._columns):
            if re.search(r"(?<![\w.])" + re.escape(key[1]) + r"(?![\w])", text):
                del self._columns[key]

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

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        """Fail a Python model on a Thrift/HTTP target before its materialization starts.

        The materialization would otherwise run pre-hooks and, for a table
        whose format is neither Delta nor Iceberg, drop the old table before
        it reaches the Python submission.
        """
        model = getattr(config, "model", None)
        if getattr(model, "language", None) == "python" and not self.runs_python:
            raise DbtRuntimeError(python_model_unsupported_message(model.name, self.config.credentials))
        return super().pre_model_hook(config)

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
                cwd=root, capture_output=True, text=True, timeout=10, check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        return f"{commit}-dirty" if dirty else commit

    @available
    def write_json_artifact(self, relative_path: str, payload: Any) -> str:
        """Write ``payload`` as JSON under the target path; returns the file written."""
        target = Path(self.config.project_root) / self.config.target_path
        path = (target / relative_path).resolve()
        if target.resolve() not in path.parents:
            raise DbtRuntimeError(f"write_json_artifact: {relative_path} is outside the target path")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
        return str(path)
