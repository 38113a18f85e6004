"""The sample, landed and built one way wherever a test needs it built, and its answers as plain rows.

conftest's session fixture ``built_sample`` builds it in the pytest process
(the ``local`` target); ``cluster_driver.py`` builds it in a subprocess on the
``cluster`` target. Both land the batches of ``seeds/landing_batches.csv`` in
order, then run the one build below, so their tables must hold the same
answers. This module imports nothing that starts Spark or changes the
environment, so both can import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.operations.run_sample import SEEDS, sample_batches

AS_OF = "2024-01-21T00:00:00+00:00"
# The late-arrival core, revenue by tier and everything they read. No Python
# models, and no data tests: the answers are the point here, and
# test_late_arrival_sample.py runs the sample's data tests.
SELECT = (
    "+late_arrival_audit +gold_hourly_revenue +gold_weekly_revenue +gold_monthly_revenue +gold_quarterly_revenue"
    " +gold_ytd_revenue +gold_revenue_by_tier +lateness_alerts +volume_against_baseline +gold_daily_revenue_causes"
    " +gold_rollup_revenue_causes"
)
BUILD_ARGS = ("build", "--select", SELECT, "--exclude", "resource_type:test")
BUILD_VARS = {"as_of": AS_OF}

# Tables compared row by row, and tables compared by row count (their rows
# carry ids or times of the run: audit ids hash the run time, quarantine rows
# the decision time).
COMPARED_TABLES = (
    "silver.silver_events",
    "gold.gold_daily_revenue",
    "gold.gold_hourly_revenue",
    "gold.gold_weekly_revenue",
    "gold.gold_monthly_revenue",
    "gold.gold_quarterly_revenue",
    "gold.gold_ytd_revenue",
    "gold.gold_revenue_by_tier",
)
COUNTED_TABLES = (
    "bronze.bronze_events",
    "silver.silver_quarantine",
    "silver.silver_event_changes",
    "audit.late_arrival_audit",
)


def landing_batches() -> list[tuple[str, Path, str]]:
    """(source system, landing file, arrival time) of each sample batch, in landing order."""
    return [
        (batch["source_system"], SEEDS / "landing" / batch["file_name"], batch["arrival_ts"])
        for batch in sample_batches()
    ]


def is_run_specific(column: str) -> bool:
    """Columns that differ between two builds of the same data.

    ``invocation_id`` names the dbt run; ``*_run_at`` columns
    (``changed_run_at``, ``source_changed_run_at``) hold the run's wall-clock
    start, the high-water marks' clock; ``ingested_at`` the wall clock of the
    ingest. Business-time columns stay in: ``first_published_at``,
    ``last_changed_at``, ``restated_on`` and ``processed_at`` are ``as_of``,
    which both builds share.
    """
    return column == "invocation_id" or column == "ingested_at" or column.endswith("_run_at")


def table_rows(spark: SparkSession, relation: str) -> dict[str, Any]:
    """The table's columns (run-specific ones left out) and its rows as sorted lists of strings.

    Values are cast to strings in Spark (UTC session time zone), so decimals
    keep their scale and timestamps do not depend on the Python process's zone.
    """
    columns = [column for column in spark.table(relation).columns if not is_run_specific(column)]
    casts = ", ".join(f"cast(`{column}` as string) as `{column}`" for column in columns)
    rows = [list(row) for row in spark.sql(f"select {casts} from {relation}").collect()]
    rows.sort(key=lambda row: [(value is None, value or "") for value in row])
    return {"columns": columns, "rows": rows}


def answers(spark: SparkSession, schema: str) -> dict[str, Any]:
    """What the two builds must agree on, as JSON-ready values."""
    return {
        "rows": {name: table_rows(spark, f"{schema}_{name}") for name in COMPARED_TABLES},
        "counts": {name: spark.table(f"{schema}_{name}").count() for name in COUNTED_TABLES},
    }
