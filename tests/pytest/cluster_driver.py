"""The driver of test_cluster.py's build: the sample on the ``cluster`` target, in its own process.

    python -m tests.pytest.cluster_driver --out RESULT.json

pytest's process already holds a local Spark session (one JVM, one
SparkContext per process), so the cluster build runs here, with the
environment test_cluster.py sets: ``LATECOMER_SPARK_MASTER`` (the standalone
master), ``LATECOMER_STATE_DIR``, ``LATECOMER_WAREHOUSE`` and
``LATECOMER_SCHEMA``. It lands the sample batches and runs the same build as
conftest's ``built_sample`` (tests/pytest/sample_build.py) through dbt's
``cluster`` target, then writes the application id and the answers to
RESULT.json and stops Spark, which closes the event log test_cluster.py reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pyspark import SparkContext

from python_jobs.core.dbt_runner import DbtRunError, DbtRunner
from python_jobs.core.spark_config import REPO_ROOT, get_spark
from python_jobs.landing import ingest
from tests.pytest import sample_build

EXECUTOR_WAIT_SECONDS = 180


def wait_for_executor(spark_context: SparkContext, timeout_s: float) -> None:
    """Fail fast, with the reason, when no executor registers (a job would wait forever)."""
    tracker = spark_context._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout_s
    while len(tracker.getExecutorInfos()) < 2:  # the driver is listed too
        if time.monotonic() > deadline:
            raise SystemExit(f"cluster_driver: no executor registered within {timeout_s:.0f}s")
        time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cluster_driver", description="Build the sample on the cluster target (see tests/pytest/test_cluster.py)."
    )
    parser.add_argument("--out", type=Path, required=True, help="where to write the result JSON")
    args = parser.parse_args(argv)
    schema = os.environ["LATECOMER_SCHEMA"]

    spark = get_spark()
    context = spark.sparkContext
    if not context.master.startswith("spark://"):
        raise SystemExit(f"cluster_driver: expected a standalone master, got {context.master}")
    print(f"cluster_driver: application {context.applicationId} on {context.master}", flush=True)
    wait_for_executor(context, EXECUTOR_WAIT_SECONDS)

    for source, path, arrival_ts in sample_build.landing_batches():
        argv_ingest = ["--source", source, "--arrival-ts", arrival_ts, "--schema", schema, str(path)]
        if ingest.main(argv_ingest) != 0:
            raise SystemExit(f"cluster_driver: ingest of {path.name} failed")
    runner = DbtRunner(
        REPO_ROOT,
        target="cluster",
        target_path=args.out.parent / "target",
        log_path=args.out.parent / "logs",
        schema=schema,
    )
    try:
        runner.invoke(*sample_build.BUILD_ARGS, vars=sample_build.BUILD_VARS)
    except DbtRunError as exc:
        raise SystemExit(f"cluster_driver: {exc}") from None

    result = {
        "app_id": context.applicationId,
        "master": context.master,
        "answers": sample_build.answers(spark, schema),
    }
    args.out.write_text(json.dumps(result, indent=1))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
