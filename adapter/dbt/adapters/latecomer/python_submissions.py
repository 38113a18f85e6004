"""Run dbt Python models in the Spark session that runs the SQL models."""

from __future__ import annotations

from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.spark.connections import SparkCredentials
from dbt_common.exceptions import DbtRuntimeError


class SessionPythonJobHelper(PythonJobHelper):
    """Executes the compiled model in-process with the shared ``spark`` session."""

    def __init__(self, parsed_model: dict[str, Any], credentials: SparkCredentials) -> None:
        self.parsed_model = parsed_model
        self.credentials = credentials

    def submit(self, compiled_code: str) -> None:
        from python_jobs.spark_config import get_spark

        spark = get_spark(getattr(self.credentials, "table_format", None))
        namespace: dict[str, Any] = {"spark": spark, "__name__": "dbt_python_model"}
        exec(
            compile(compiled_code, self.parsed_model.get("original_file_path", "<model>"), "exec"),
            namespace,
        )  # noqa: S102


class ThriftPythonJobHelper(PythonJobHelper):
    """Thrift and HTTP connections cannot run Python: say so at once."""

    def __init__(self, parsed_model: dict[str, Any], credentials: SparkCredentials) -> None:
        raise DbtRuntimeError(
            f"Python model {parsed_model.get('name')} cannot run on a {credentials.method} "
            "target: dbt Python models run only on session targets (local, delta, cluster)."
        )

    def submit(self, compiled_code: str) -> None:  # pragma: no cover - never constructed
        raise NotImplementedError
