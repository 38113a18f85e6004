"""One Spark process of test_shared_metastore.py, on the shared metastore it names.

    python -m tests.pytest.metastore_worker iceberg --who a --index 0 --appends N --rows R
                                            --barrier DIR --parties 2 [--create] --out RESULT.json
    python -m tests.pytest.metastore_worker delta --out RESULT.json

The environment (``LATECOMER_METASTORE_URI``, ``LATECOMER_STATE_DIR``) comes
from the test; the session from :func:`python_jobs.core.spark_config.get_spark`,
as every latecomer process gets it.

``iceberg``: the worker with ``--create`` creates the table, then every
worker says it is ready in the barrier folder and waits for the others, so
that their appends run at the same time: ``--appends`` inserts of ``--rows``
rows each, with ids of their own (``--index``). The creating worker then waits
until every worker is done and counts what the table holds. ``delta``: a
Delta table created, written and read through the same metastore, and the
Iceberg table listed beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from python_jobs.core.spark_config import get_spark

SCHEMA = "shared_catalog"
ICEBERG_TABLE = f"{SCHEMA}.appends"
DELTA_TABLE = f"{SCHEMA}.delta_check"
WAIT_S = 300.0


def wait_for(barrier: Path, prefix: str, parties: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(list(barrier.glob(f"{prefix}-*"))) < parties:
        if time.monotonic() > deadline:
            raise SystemExit(f"metastore_worker: fewer than {parties} {prefix} workers after {WAIT_S:.0f}s")
        time.sleep(0.1)


def iceberg(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    spark = get_spark("iceberg")
    result: dict[str, Any] = {"who": args.who, "session_s": time.monotonic() - started}
    if args.create:
        spark.sql(f"create database if not exists {SCHEMA}")
        spark.sql(f"create table {ICEBERG_TABLE} (id bigint, who string, batch int) using iceberg")
    (args.barrier / f"ready-{args.who}").touch()
    wait_for(args.barrier, "ready", args.parties)
    appends = []
    for batch in range(args.appends):
        first_id = (args.index * args.appends + batch) * args.rows
        begun = time.time()
        spark.sql(
            f"insert into {ICEBERG_TABLE} "
            f"select id, '{args.who}', {batch} from range({first_id}, {first_id + args.rows})"
        )
        appends.append((begun, time.time()))
    result["appends"] = appends
    (args.barrier / f"done-{args.who}").touch()
    if args.create:
        wait_for(args.barrier, "done", args.parties)
        spark.sql(f"refresh table {ICEBERG_TABLE}")
        counts = spark.sql(f"select count(*) as total, count(distinct id) as ids from {ICEBERG_TABLE}").first()
        result["rows"] = counts["total"]
        result["distinct_ids"] = counts["ids"]
        by_who = spark.sql(f"select who, count(*) as n from {ICEBERG_TABLE} group by who").collect()
        result["rows_by_who"] = {row["who"]: row["n"] for row in by_who}
        result["snapshots"] = spark.sql(f"select count(*) from {ICEBERG_TABLE}.snapshots").first()[0]
        properties = spark.sql(f"show tblproperties {ICEBERG_TABLE}").collect()
        result["properties"] = {row["key"]: row["value"] for row in properties}
    spark.stop()
    return result


def delta(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    spark = get_spark("delta")
    result: dict[str, Any] = {"session_s": time.monotonic() - started}
    begun = time.monotonic()
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"create table {DELTA_TABLE} (id bigint, who string) using delta")
    spark.sql(f"insert into {DELTA_TABLE} values (1, 'delta'), (2, 'delta'), (3, null)")
    result["rows"] = spark.sql(f"select count(*) from {DELTA_TABLE}").first()[0]
    described = {row["col_name"]: row["data_type"] for row in spark.sql(f"describe extended {DELTA_TABLE}").collect()}
    result["provider"] = described.get("Provider")
    result["location"] = described.get("Location")
    result["tables"] = sorted(row["tableName"] for row in spark.sql(f"show tables in {SCHEMA}").collect())
    result["work_s"] = time.monotonic() - begun
    spark.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="metastore_worker")
    parser.add_argument("format", choices=["iceberg", "delta"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--who", default="a")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--appends", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--barrier", type=Path)
    parser.add_argument("--parties", type=int, default=1)
    parser.add_argument("--create", action="store_true")
    args = parser.parse_args()
    result = iceberg(args) if args.format == "iceberg" else delta(args)
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
