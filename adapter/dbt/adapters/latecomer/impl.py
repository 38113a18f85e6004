"""The latecomer adapter: dbt-spark with Python models on a Spark session."""

from __future__ import annotations

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.latecomer.connections import LatecomerConnectionManager
from dbt.adapters.latecomer.python_submissions import SessionPythonJobHelper, ThriftPythonJobHelper
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter


class LatecomerAdapter(SparkAdapter):
    ConnectionManager = LatecomerConnectionManager

    @classmethod
    def type(cls) -> str:
        return "latecomer"

    @property
    def default_python_submission_method(self) -> str:
        if self.config.credentials.method == SparkConnectionMethod.SESSION:
            return "session"
        return "unsupported"

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        return {
            **super().python_submission_helpers,
            "session": SessionPythonJobHelper,
            "unsupported": ThriftPythonJobHelper,
        }
