"""dbt-tests-adapter's Python model suite, on the session target's one Spark session.

Models returning pandas or pandas-on-Spark DataFrames need pandas (and
pyarrow), which neither the project nor the adapter depends on; they run when
pandas is installed. Koalas (databricks.koalas) is left out as dbt-spark
leaves it out: pandas-on-Spark replaced it in Spark 3.2.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
)
from dbt.tests.adapter.python_model.test_spark import BasePySparkTests
from dbt.tests.util import run_dbt

HAS_PANDAS = importlib.util.find_spec("pandas") is not None


class TestPythonModel(BasePythonModelTests):
    pass


class TestPythonIncrementalModel(BasePythonIncrementalTests):
    pass


class TestPythonMetaGet(BasePythonMetaGetTests):
    pass


class TestPySpark(BasePySparkTests):
    def test_different_dataframes(self, project: Any) -> None:
        results = run_dbt(["run", "--select", "pyspark_df"])
        assert len(results) == 1


@pytest.mark.skipif(
    not HAS_PANDAS,
    reason="dbt Python models returning pandas or pandas-on-Spark DataFrames need pandas and pyarrow, "
    "which are not dependencies of the project or the adapter (a PySpark DataFrame is tested above)",
)
class TestPandasDataFrames(BasePySparkTests):
    def test_different_dataframes(self, project: Any) -> None:
        results = run_dbt(["run", "--exclude", "koalas_df"])
        assert len(results) == 3
