"""Read a deployment's bronze landings as JSON, in a process of its own (test_stream.py).

    python -m tests.pytest.stream_driver SCHEMA

The streams under test run as commands on their own state dir, whose
embedded metastore admits one process at a time, so the test reads what they
landed from another short process instead of holding a session itself.
Prints one JSON object: ``rows`` (the events' bronze rows, identity and
shape) and ``log`` (the ingestion log).
"""

from __future__ import annotations

import json
import sys

from python_jobs.core.spark_config import get_spark

ROW_COLUMNS = (
    "bronze_row_id",
    "ingestion_id",
    "source_system",
    "source_file",
    "line_number",
    "event_id",
    "parse_error",
    "raw_payload",
    "arrival_ts",
)
LOG_COLUMNS = (
    "ingestion_id",
    "feed",
    "source_system",
    "source_file",
    "lines_read",
    "blank_lines",
    "rows_accepted",
    "rows_flagged",
)


def main(schema: str) -> None:
    spark = get_spark()
    database = f"{schema}_bronze"
    rows = spark.table(f"{database}.bronze_events").select(*ROW_COLUMNS).collect()
    log = spark.table(f"{database}.bronze_ingestions").select(*LOG_COLUMNS).collect()
    as_json = {
        "rows": [{**row.asDict(), "arrival_ts": row.arrival_ts.isoformat()} for row in rows],
        "log": [row.asDict() for row in log],
    }
    print(json.dumps(as_json))


if __name__ == "__main__":
    main(sys.argv[1])
