"""One process of test_shared_load.py, on the shared catalog its environment names.

    python -m tests.pytest.load_driver land  --files DIR --source S --pause SECONDS --before-first-build N
                                             --run DIR --out RESULT.json
    python -m tests.pytest.load_driver build --every SECONDS --run DIR --out RESULT.json
    python -m tests.pytest.load_driver read  --port PORT --run DIR --out RESULT.json

``land``: every file of DIR (``<n>.ndjson`` with its arrival time in
``<n>.arrival``), in order, through ingest's ``main()`` (one JVM for all),
a pause between two; the first ``--before-first-build`` while the first
build runs, the others after it published; writes ``landed-<source>`` in the
run folder after its first file and ``done-<source>`` at its end. ``build``: once every lander
has landed a file, a build of the selection every ``--every`` seconds until
the landers are done, then one last build; after its first build, a steward
decision (the rejection of a quarantined row); at the end it writes the
gold tables and bronze's counts to the result, and ``built`` in the run
folder. ``read``: queries gold through the Thrift server in a loop, from the
first publication until it reads the last build's publication (which
``built`` names), and records each read's publication and its totals of
the daily, weekly and monthly tables.

The run folder holds the processes' markers; every process records its
failures in its result instead of stopping at the first.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SELECT = "+gold_daily_revenue +gold_weekly_revenue +gold_monthly_revenue silver_quarantine"
LANDERS = ("web", "mobile")
BUILD_VARS = {"publication_gate_override": "checked by hand"}
WAIT_S = 900.0
# How long the reader goes on after the last build for a read of its publication.
LAST_READ_WAIT_S = 60.0
GRAINS = (
    ("daily", "gold_daily_revenue"),
    ("weekly", "gold_weekly_revenue"),
    ("monthly", "gold_monthly_revenue"),
)


def wait_for(path: Path, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"load_driver: {path.name} did not appear within {timeout_s:.0f} s")
        time.sleep(0.2)


def land(args: argparse.Namespace) -> dict[str, Any]:
    from python_jobs.landing import ingest

    schema = os.environ["LATECOMER_SCHEMA"]
    landings, failures = [], []
    for number, path in enumerate(sorted(args.files.glob("*.ndjson"), key=lambda p: int(p.stem))):
        arrival = path.with_suffix(".arrival").read_text().strip()
        argv = ["--source", args.source, "--arrival-ts", arrival, "--schema", schema, str(path)]
        begun = time.time()
        try:
            code = ingest.main(argv)
        except Exception:  # noqa: BLE001 - the test reports every failure
            code, failure = -1, traceback.format_exc()
            failures.append(failure)
        landings.append({"file": path.name, "code": code, "begun": begun, "ended": time.time()})
        if code != 0 and code != -1:
            failures.append(f"ingest of {path.name} exited {code}")
        if number == 0:
            (args.run / f"landed-{args.source}").touch()
        if number + 1 == args.before_first_build:
            # The rest lands while later builds run.
            wait_for(args.run / "published")
        time.sleep(args.pause)
    (args.run / f"done-{args.source}").touch()
    return {"landings": landings, "failures": failures}


def build(args: argparse.Namespace) -> dict[str, Any]:
    from python_jobs.core.dbt_runner import DbtRunner, failures
    from python_jobs.core.spark_config import get_spark
    from python_jobs.landing import steward

    schema = os.environ["LATECOMER_SCHEMA"]
    for source in LANDERS:
        wait_for(args.run / f"landed-{source}")
    spark = get_spark(os.environ["LATECOMER_TABLE_FORMAT"])
    runner = DbtRunner(ROOT, profiles_dir=ROOT / "profiles", target=os.environ["LATECOMER_TARGET"],
                       target_path=args.run / "target",
                       schema=schema)  # fmt: skip
    builds: list[dict[str, Any]] = []
    problems: list[str] = []
    decision: dict[str, Any] = {}

    def one_build() -> None:
        begun = time.time()
        result = runner.invoke("build", "--select", SELECT, "--no-write-json", vars=BUILD_VARS, check=False)
        builds.append({"begun": begun, "ended": time.time(), "success": result.success})
        if not result.success:
            problems.append(f"build {len(builds)}: {failures(result)}")
        if len(builds) == 1:
            (args.run / "published").touch()

    while True:
        landers_done = all((args.run / f"done-{source}").exists() for source in LANDERS)
        started = time.monotonic()
        one_build()
        if len(builds) == 1:
            rows = spark.sql(
                f"select bronze_row_id from {schema}_silver.silver_quarantine where status = 'quarantined'"
            ).collect()
            ids = sorted(row.bronze_row_id for row in rows)[:1]
            code = (
                steward.main(["--schema", schema, "reject", "--reason", "load test: not an order", *ids]) if ids else 2
            )
            decision = {"rejected": ids, "code": code, "at": time.time()}
            if code != 0:
                problems.append(f"steward reject of {ids} exited {code}")
        if landers_done:
            break
        time.sleep(max(0.0, args.every - (time.monotonic() - started)))
    # Every file landed: this last build reads what the one above did not.
    one_build()
    gold = {name: [row.asDict() for row in spark.table(f"{schema}_gold.{table}").collect()] for name, table in GRAINS}
    bronze_rows = spark.table(f"{schema}_bronze.bronze_events").count()
    bronze_distinct = (
        spark.table(f"{schema}_bronze.bronze_events").select("ingestion_id", "line_number").distinct().count()
    )
    ledger_rows = spark.table(f"{schema}_silver.silver_event_arrivals").count()
    quarantine = [
        row.asDict() for row in spark.table(f"{schema}_silver.silver_quarantine").select("bronze_row_id", "status")
        .collect()
    ]  # fmt: skip
    last_publication = spark.sql(f"select max(publication_seq) from {schema}_published.publication").first()[0]
    (args.run / "built").write_text(str(last_publication))
    return {
        "builds": builds,
        "failures": problems,
        "decision": decision,
        "gold": gold,
        "bronze_rows": bronze_rows,
        "bronze_distinct": bronze_distinct,
        "ledger_rows": ledger_rows,
        "quarantine": quarantine,
    }


def read(args: argparse.Namespace) -> dict[str, Any]:
    from pyhive import hive

    from python_jobs.core import reader_views

    schema = os.environ["LATECOMER_SCHEMA"]
    published = f"{schema}_published"
    totals = ", ".join(
        f"(select coalesce(sum(orders), 0) from {published}.{table}) as {name}_orders, "
        f"(select cast(coalesce(sum(gross_revenue), 0) as string) from {published}.{table}) as {name}_gross"
        for name, table in GRAINS
    )
    query = f"select {reader_views.current_sql(schema)} as publication_seq, {totals}"
    wait_for(args.run / "published")
    reads: list[dict[str, Any]] = []
    errors: list[str] = []
    connection = hive.connect(host="127.0.0.1", port=args.port, username="load")
    last_publication = None
    while True:
        built = args.run / "built"
        if last_publication is None and built.exists():
            last_publication = int(built.read_text())
            deadline = time.monotonic() + LAST_READ_WAIT_S
        begun = time.time()
        try:
            cursor = connection.cursor()
            cursor.execute(query)
            rows = cursor.fetchall()
            cursor.close()
        except Exception as error:  # noqa: BLE001 - the test reports every failure
            errors.append(f"{begun:.3f}: {error}")
            if last_publication is not None and time.monotonic() > deadline:
                break
            try:
                connection.close()
            finally:
                connection = hive.connect(host="127.0.0.1", port=args.port, username="load")
            time.sleep(0.5)
            continue
        for row in rows:
            reads.append({"seq": row[0], "values": list(row[1:]), "begun": begun, "ended": time.time()})
        if not rows:
            reads.append({"seq": None, "values": [], "begun": begun, "ended": time.time()})
        # Until a read of the last build's publication, once it is in effect.
        if last_publication is not None and (
            any(row[0] == last_publication for row in rows) or time.monotonic() > deadline
        ):
            break
        time.sleep(args.pause)
    connection.close()
    return {"reads": reads, "failures": errors}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.pytest.load_driver")
    parser.add_argument("role", choices=("land", "build", "read"))
    parser.add_argument("--files", type=Path)
    parser.add_argument("--source")
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--before-first-build", type=int, default=0)
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("--port", type=int)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.time()
    try:
        result = {"land": land, "build": build, "read": read}[args.role](args)
    except BaseException:
        result = {"failures": [traceback.format_exc()]}
        args.out.write_text(json.dumps({**result, "started": started, "ended": time.time()}, default=str))
        raise
    args.out.write_text(json.dumps({**result, "started": started, "ended": time.time()}, default=str))


if __name__ == "__main__":
    main()
