"""The table format's side of the benchmark, by name (see tooling.bench.state)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from tooling.bench.config import FORMATS
from tooling.bench.delta_state import DeltaFormat
from tooling.bench.iceberg_state import IcebergFormat
from tooling.bench.state import TableFormat

_CLASSES: dict[str, type[TableFormat]] = {"iceberg": IcebergFormat, "delta": DeltaFormat}


def table_format(spark: SparkSession, name: str) -> TableFormat:
    """The format's side of the benchmark on ``spark`` (a session configured for that format)."""
    if name not in _CLASSES:
        raise ValueError(f"table format {name!r}: choose one of {', '.join(FORMATS)}")
    return _CLASSES[name](spark)
