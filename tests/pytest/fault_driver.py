"""One process of a fault run: land batches, build, read the tables, in that order.

    python -m tests.pytest.fault_driver PLAN.json

tests/pytest/faults.py starts it in a process group of its own, on a
deployment's state dir (``LATECOMER_STATE_DIR``, ``LATECOMER_SCHEMA``), and
may SIGKILL that group at any line it prints. The plan is a JSON list of
steps, run in one JVM:

- ``["ingest", source, path, arrival_ts]``: ingest's ``main()``, as
  ``python -m python_jobs.landing.ingest`` runs it;
- ``["build", as_of]``: ``dbt build`` in this process (the project's one dbt
  runner). dbt prints a line as each node finishes, which is where a fault
  run kills it;
- ``["dump"]``: what the comparison with the reference needs, as one line
  ``DUMP {json}``.

A step that fails ends the process with status 3 and says which. One process
for what would otherwise be three (an ingest, a build, a read) saves two JVM
starts, and a kill takes them all down alike.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from python_jobs.core.dbt_runner import DbtRunError, DbtRunner
from python_jobs.core.spark_config import REPO_ROOT, get_spark
from python_jobs.landing import ingest


def ingest_args(source: str, path: str, arrival_ts: str, schema: str) -> list[str]:
    """Ingest's arguments for one landing file (faults.py's killed ingests pass the same)."""
    return ["--source", source, "--arrival-ts", arrival_ts, "--schema", schema, path]


def dump(schema: str) -> dict[str, Any]:
    spark = get_spark()
    gold = spark.sql(
        f"select event_date, source_system, orders, gross_revenue, refunds from {schema}_gold.gold_daily_revenue"
    )
    silver = spark.sql(
        f"select event_id, source_system, event_type, amount, event_date, is_deleted from {schema}_silver.silver_events"
    )
    return {
        "gold": [[str(r[0]), r[1], r[2], str(r[3]), str(r[4])] for r in gold.collect()],
        "silver": [[r[0], r[1], r[2], str(r[3]), str(r[4]), r[5]] for r in silver.collect()],
    }


def run(plan: list[list[str]], work: Path) -> None:
    schema = os.environ["LATECOMER_SCHEMA"]
    runner = DbtRunner(REPO_ROOT, target_path=work / "target", log_path=work / "logs", schema=schema)
    for kind, *args in plan:
        if kind == "ingest":
            source, path, arrival_ts = args
            if ingest.main(ingest_args(source, path, arrival_ts, schema)) != 0:
                raise SystemExit(f"fault_driver: ingest of {Path(path).name} failed")
        elif kind == "build":
            (as_of,) = args
            try:
                runner.invoke("build", vars={"as_of": as_of})
            except DbtRunError as exc:
                print(f"fault_driver: {exc}", flush=True)
                raise SystemExit(3) from None
        elif kind == "dump":
            print("DUMP " + json.dumps(dump(schema)), flush=True)
        else:
            raise SystemExit(f"fault_driver: unknown step {kind!r}")


def main(argv: list[str] | None = None) -> int:
    (plan_path,) = argv if argv is not None else sys.argv[1:]
    plan = Path(plan_path)
    run(json.loads(plan.read_text()), plan.parent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
