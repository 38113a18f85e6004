"""The main job on the sample data: land each sample batch through ingest and
`dbt build` on the local target, as a day of late data would unfold.

    python -m python_jobs.operations.run_sample                           (make run)
    LATECOMER_TABLE_FORMAT=delta python -m python_jobs.operations.run_sample  (make run TABLE_FORMAT=delta)

On Delta Lake the session, the landing and dbt's target (``delta``, schema
prefix ``latecomer_delta``) all follow; LATECOMER_TARGET and LATECOMER_SCHEMA
still choose others.

Batches and arrival times come from seeds/landing_batches.csv; files from
seeds/landing/. Running it again lands nothing new and changes nothing.
"""

from __future__ import annotations

import csv
import os
import sys
from typing import Any

from python_jobs.core.dbt_runner import DbtRunError, DbtRunner
from python_jobs.core.spark_config import REPO_ROOT, get_spark
from python_jobs.landing import ingest

SEEDS = REPO_ROOT / "seeds"
# Build after these batch numbers, as of the latest arrival so far.
BUILD_AFTER = (2, 5, 7)


def sample_batches() -> list[dict[str, str]]:
    with (SEEDS / "landing_batches.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def dbt(*args: str, vars: dict[str, Any] | None = None) -> None:
    try:
        DbtRunner(REPO_ROOT).invoke(*args, vars=vars)
    except DbtRunError as exc:
        raise SystemExit(f"run_sample: {exc}; see logs/dbt.log") from None


def main() -> int:
    if os.environ.setdefault("LATECOMER_TABLE_FORMAT", "iceberg") == "delta":
        os.environ.setdefault("LATECOMER_TARGET", "delta")
        os.environ.setdefault("LATECOMER_SCHEMA", "latecomer_delta")
    get_spark()
    latest_arrival = ""
    for batch in sample_batches():
        path = SEEDS / "landing" / batch["file_name"]
        print(f"\n== batch {batch['batch_no']} ({batch['scenario']}): {batch['description']}")
        code = ingest.main(["--source", batch["source_system"], "--arrival-ts", batch["arrival_ts"], str(path)])
        if code:
            return code
        latest_arrival = max(latest_arrival, batch["arrival_ts"])
        if int(batch["batch_no"]) in BUILD_AFTER:
            as_of = latest_arrival
            print(f"== dbt build as of {as_of}")
            dbt("build", vars={"as_of": as_of})
    schema = os.environ.get("LATECOMER_SCHEMA", "latecomer")
    get_spark().sql(
        f"select event_date, source_system, orders, gross_revenue, refunds, net_revenue, status, "
        f"version, restatement_reason from {schema}_gold.gold_daily_revenue "
        "order by event_date, source_system"
    ).show(100, truncate=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
