"""The latecomer adapter: dbt-spark with Python models on a Spark session."""

from __future__ import annotations

import json
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

ICEBERG_TABLE_PROPERTY = "table_type=iceberg"


class LatecomerAdapter(SparkAdapter):
    ConnectionManager = LatecomerConnectionManager

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
