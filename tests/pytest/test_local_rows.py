"""python_jobs/core/local_rows.py: driver rows as a DataFrame, without a Spark job."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from pyspark.sql import SparkSession

from python_jobs.core.local_rows import flat_columns, local_rows

DDL = "name string, at timestamp, day date, total bigint, amount decimal(18, 2)"


def test_values_come_back_as_written_and_typed(spark: SparkSession) -> None:
    tricky = "it's a \\path\\ with 'quotes', a newline\nand :v0_0"
    paris = timezone(timedelta(hours=2))
    rows = [
        (tricky, datetime(2024, 5, 1, 12, 30, 0, 123456, tzinfo=paris), date(2024, 5, 1), 2**40, None),
        (None, None, None, None, None),
    ]
    frame = local_rows(spark, rows, DDL)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("name", "string"),
        ("at", "timestamp"),
        ("day", "date"),
        ("total", "bigint"),
        ("amount", "decimal(18,2)"),
    ]
    first, second = frame.collect()
    assert first.name == tricky
    # The same instant: 12:30 at +02:00 is 10:30 UTC (pyspark hands back this process's local time).
    assert first.at.astimezone(UTC) == datetime(2024, 5, 1, 10, 30, 0, 123456, tzinfo=UTC)
    assert (first.day, first.total, first.amount) == (date(2024, 5, 1), 2**40, None)
    assert tuple(second) == (None,) * 5


def test_no_spark_job_runs_to_read_them(spark: SparkSession) -> None:
    """The point of the helper: createDataFrame runs a job (and a Python worker) per call."""
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("local_rows", "local_rows")
    try:
        assert local_rows(spark, [("a", 1)], "k string, n bigint").collect()[0].n == 1
        assert local_rows(spark, [], "k string").collect() == []
        assert tracker.getJobIdsForGroup("local_rows") == []
        spark.createDataFrame([("a", 1)], "k string, n bigint").collect()
        assert tracker.getJobIdsForGroup("local_rows") != []  # the check above can fail
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        ("a struct<b: int>", "flat 'name type' columns"),
        ("a int, `b c` string", "flat 'name type' columns"),
        ("a int,", "flat 'name type' columns"),
    ],
)
def test_nested_or_malformed_columns_are_refused(ddl: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        flat_columns(ddl)


def test_a_row_of_another_width_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="row 1 has 1 values for 2 columns"):
        local_rows(spark, [("a", 1), ("b",)], "k string, n bigint")


def test_no_rows_is_an_empty_frame_of_the_columns(spark: SparkSession) -> None:
    empty = local_rows(spark, [], "k string, amount decimal(18, 2)")
    assert [(f.name, f.dataType.simpleString()) for f in empty.schema.fields] == [
        ("k", "string"),
        ("amount", "decimal(18,2)"),
    ]
    assert empty.collect() == []


def test_decimal_precision_with_a_comma_is_one_column() -> None:
    assert flat_columns(" a decimal(18, 2), b string ") == [("a", "decimal(18, 2)"), ("b", "string")]
