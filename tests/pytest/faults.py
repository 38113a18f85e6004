"""Fault injection: kill ingests and builds with SIGKILL, run again, compare.

Processes run in their own process group on their own state dir (the
embedded metastore is one process's at a time), so SIGKILL takes down their
JVM too: nothing gets to clean up. An ingest killed at a failpoint or after
a given time runs as a user would run it (`python -m python_jobs.landing.ingest`).
Otherwise a batch's landing, the build after it and the read of the tables
run in one process (tests/pytest/fault_driver.py: ingest's main() and
`dbt build` in-process, as `make run` does), which saves two JVM starts per
batch. A build is killed right after a named node finishes (a model
boundary, read from dbt's log lines as they are printed). The next run must
converge: a complete `dbt build` (with its data tests) succeeds, and silver
and gold equal the plain-Python reference of everything landed.

Used by test_faults.py (a few kill points, in CI) and by
`make faults` (every model boundary and random ones: figures in docs/killed-at-any-point.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.pytest.fault_driver import ingest_args
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue, expected_state

ROOT = Path(__file__).resolve().parents[2]
LANDING = ROOT / "seeds" / "landing"
PYTHON = sys.executable
DBT = str(Path(sys.executable).parent / "dbt")
# dbt's line for a node that finished: "12 of 53 OK created sql incremental model s.silver_events ...".
FINISHED = re.compile(r"\d+ of \d+ (OK|PASS|WARN|ERROR|FAIL|SKIP)\b.*?\b(?:model|test|snapshot|seed) (\S+)")


@dataclass
class Fault:
    """One injected fault and what the run after it found."""

    kind: str  # "build" or "ingest"
    at: str  # the node after which the build was killed, or the ingest's seconds
    killed: bool  # False when the process ended before the kill point
    converged: bool  # the next build succeeded and silver and gold match the reference
    rows_lost: int  # reference rows missing or different after recovery (silver and gold)
    detail: str = ""


class Deployment:
    """A deployment on its own state dir, driven through subprocesses."""

    def __init__(self, state_dir: Path, schema: str, work: Path) -> None:
        self.state_dir = state_dir
        self.schema = schema
        self.work = work
        self.arrivals: list[Arrival] = []
        self.env = {
            "LATECOMER_JVM_PROFILE": "short",  # short processes over the sample (spark_config.JVM_PROFILES)
            **os.environ,
            "LATECOMER_STATE_DIR": str(state_dir),
            "LATECOMER_SCHEMA": schema,
            "LATECOMER_LOCK_WAIT_SECONDS": "0",
        }

    def _start(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: the JVM dies with it
        )

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def ingest_argv(self, source: str, path: Path, arrival_ts: str) -> list[str]:
        return [PYTHON, "-m", "python_jobs.landing.ingest", *ingest_args(source, str(path), arrival_ts, self.schema)]

    def ingest(self, source: str, path: Path, arrival_ts: str, kill_at: str | float | None = None) -> bool:
        """Land ``path``. ``kill_at``: a failpoint's name (python_jobs/core/failpoints.py),
        where the ingest kills itself, or seconds after which it is killed.
        Returns whether it was killed (False: it finished first)."""
        failpoint = {"LATECOMER_FAILPOINT": kill_at} if isinstance(kill_at, str) else {}
        process = self._start(self.ingest_argv(source, path, arrival_ts), failpoint)
        if isinstance(kill_at, float):
            try:
                process.wait(timeout=kill_at)
            except subprocess.TimeoutExpired:
                self._kill(process)
                return True
        output = process.communicate()[0]
        if failpoint and process.returncode == -signal.SIGKILL:
            return True
        if process.returncode != 0:
            raise RuntimeError(f"ingest of {path.name} failed ({process.returncode}):\n{output[-3000:]}")
        return False

    def record(self, source: str, path: Path, arrival_ts: str) -> None:
        arrival = datetime.fromisoformat(arrival_ts)
        self.arrivals += arrivals_from_lines(source, arrival, path.name, path.read_text().splitlines())

    def run(self, plan: list[list[str]], kill_after_node: str | None = None) -> tuple[bool, str]:
        """Run ``plan`` (tests/pytest/fault_driver.py's steps) in one process; with
        ``kill_after_node``, SIGKILL it once a build's node of that name finishes.
        Returns (killed, output). Without a kill point, a failed step raises."""
        plan_path = self.work / "plan.json"
        plan_path.write_text(json.dumps(plan))
        process = self._start([PYTHON, "-u", "-m", "tests.pytest.fault_driver", str(plan_path)])
        lines = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = FINISHED.search(line)
            if kill_after_node and match and match.group(2).split(".")[-1] == kill_after_node:
                self._kill(process)
                return True, "".join(lines)
        process.wait()
        output = "".join(lines)
        if kill_after_node is None and process.returncode != 0:
            # The driver's last line names the step that failed.
            raise RuntimeError(f"fault_driver exited {process.returncode}:\n{output[-5000:]}")
        return False, output

    @staticmethod
    def dumped(output: str) -> dict[str, Any]:
        """The tables a plan's ``dump`` step printed."""
        line = next((x for x in output.splitlines() if x.startswith("DUMP ")), None)
        if line is None:
            raise RuntimeError(f"reading the tables failed:\n{output[-3000:]}")
        return json.loads(line[5:])

    def differences(self, tables: dict[str, Any]) -> tuple[int, str]:
        """Rows of silver and gold (as dumped) that differ from the reference (missing, extra or other values)."""
        gold = {
            (day, source): (orders, Decimal(gross), Decimal(refunds))
            for day, source, orders, gross, refunds in tables["gold"]
            if orders or Decimal(refunds)
        }
        want_gold = {
            (str(day), source): value
            for (day, source), value in expected_daily_revenue(self.arrivals).items()
            if value[0] or value[2]
        }
        current, _ = expected_state(self.arrivals)
        want_silver = {
            source: sorted(
                (row["type"], str(row["amount"].quantize(Decimal("0.01"))), str(row["date"]), row["deleted"])
                for (_, s), row in current.items()
                if s == source
            )
            for source in {s for (_, s) in current}
        }
        silver = {
            source: sorted(
                (event_type, str(money(amount)), day, deleted)
                for _, s, event_type, amount, day, deleted in tables["silver"]
                if s == source
            )
            for source in {row[1] for row in tables["silver"]}
        }
        lost = len(set(want_gold.items()) ^ set(gold.items()))
        for source in set(want_silver) | set(silver):
            a, b = want_silver.get(source, []), silver.get(source, [])
            lost += sum(1 for x in a if x not in b) + sum(1 for x in b if x not in a)
        detail = "" if not lost else f"gold differs: {sorted(set(want_gold.items()) ^ set(gold.items()))[:6]}"
        return lost, detail


def money(text: str) -> Decimal:
    """A dumped amount; a null one (an event without amount) counts as 0, as in the reference."""
    return Decimal(0 if text == "None" else text).quantize(Decimal("0.01"))


def sample_batches() -> list[dict[str, str]]:
    import csv

    with (ROOT / "seeds" / "landing_batches.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@dataclass(frozen=True)
class Step:
    """Land a sample batch (its number in seeds/landing_batches.csv), with a fault:

    - kind "ingest": its ingest is killed after ``at`` seconds, or kills
      itself at the failpoint named ``at``, and then runs again;
    - kind "build": the build after it is killed once the node ``at`` finishes;
    - kind "": no fault.

    With ``recover``, a complete build then runs and silver and gold are
    compared with the reference; without, the next step lands on top of
    what the fault left (a crash, then more data, then a build). A fault's
    convergence is judged at the next recovery.
    """

    batch: int
    kind: str = ""
    at: str | float = ""
    recover: bool = True


def run_faults(deployment: Deployment, steps: list[Step], as_of: str) -> list[Fault]:
    """Run ``steps`` in order; one Fault per step that injected one."""
    faults: list[Fault] = []
    pending: list[tuple[Step, bool]] = []  # faults waiting for the next recovery
    batches = {int(b["batch_no"]): b for b in sample_batches()}
    carried: list[list[str]] = []  # landings not run yet: they open the next process
    for step in steps:
        batch = batches[step.batch]
        path = LANDING / batch["file_name"]
        killed = False
        if step.kind == "ingest":
            killed = deployment.ingest(batch["source_system"], path, batch["arrival_ts"], kill_at=step.at)
        # The landing, and what follows it up to a kill or a recovery's read, in one process.
        plan = [*carried, ["ingest", batch["source_system"], str(path), batch["arrival_ts"]]]
        carried = []
        deployment.record(batch["source_system"], path, batch["arrival_ts"])
        if step.kind == "build":
            killed, _ = deployment.run([*plan, ["build", as_of]], kill_after_node=str(step.at))
            plan = []
        if step.kind:
            pending.append((step, killed))
        if not step.recover:
            carried = plan
            continue
        try:
            _, output = deployment.run([*plan, ["build", as_of], ["dump"]])
            lost, detail = deployment.differences(deployment.dumped(output))
        except RuntimeError as error:
            lost, detail = -1, str(error)[-2000:]
        faults += [Fault(s.kind, str(s.at), k, lost == 0, lost, detail) for s, k in pending]
        pending = []
    if carried:
        deployment.run(carried)
    return faults


def plan_in_order(faults: list[tuple[str, str | float]]) -> list[Step]:
    """One fault per sample batch, in the sample's order, each recovered at once."""
    return [Step(number, kind, at) for number, (kind, at) in enumerate(faults, start=1)]


def model_nodes(deployment: Deployment) -> list[str]:
    """The project's models, as `dbt ls` lists them."""
    process = subprocess.run(
        [DBT, "ls", "--resource-type", "model", "--output", "name", "--profiles-dir", str(ROOT / "profiles")],
        cwd=ROOT,
        env=deployment.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.strip() for line in process.stdout.splitlines() if re.fullmatch(r"[a-z0-9_]+", line.strip())]


def random_plan(nodes: list[str], seed: int, faults: int) -> list[tuple[str, str | float]]:
    rng = random.Random(seed)
    return [
        ("ingest", round(rng.uniform(2, 20), 1)) if rng.random() < 0.2 else ("build", rng.choice(nodes))
        for _ in range(faults)
    ]


def summary(faults: list[Fault]) -> dict[str, Any]:
    return {
        "faults_injected": sum(f.killed for f in faults),
        "faults_survived": sum(f.killed and f.converged for f in faults),
        "kill_points_reached_end_first": sum(not f.killed for f in faults),
        "rows_lost": sum(max(f.rows_lost, 0) for f in faults),
        "faults": [asdict(f) for f in faults],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    """`make faults`: kill at every model boundary, or at random points for some seeds."""
    import argparse
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m tests.pytest.faults", description=main.__doc__)
    parser.add_argument("--boundaries", action="store_true", help="a fault after every model, one deployment per 7")
    parser.add_argument("--seeds", default="1", help="comma-separated seeds of random plans (7 faults each)")
    parser.add_argument("--nodes", default="", help="comma-separated models: a fault after each, in one deployment")
    parser.add_argument("--out", type=Path, default=ROOT / "target" / "faults" / "summary.json")
    args = parser.parse_args(argv)

    work_root = Path(tempfile.mkdtemp(prefix="latecomer-faults-"))
    probe = Deployment(work_root / "probe", "faults_probe", work_root)
    nodes = model_nodes(probe)
    batches = len(sample_batches())
    plans: list[list[Step]] = []
    if args.boundaries:
        every: list[tuple[str, str | float]] = [("build", node) for node in nodes] + [("ingest", "ingest:after_rows")]
        plans += [plan_in_order(every[i : i + batches]) for i in range(0, len(every), batches)]
    chosen = [node.strip() for node in args.nodes.split(",") if node.strip()]
    if unknown := sorted(set(chosen) - set(nodes)):
        parser.error(f"--nodes: not models of the project: {', '.join(unknown)}")
    if len(chosen) > batches:
        parser.error(f"--nodes: at most {batches} (one per sample batch), got {len(chosen)}")
    if chosen:
        plans.append(plan_in_order([("build", node) for node in chosen]))
    plans += [plan_in_order(random_plan(nodes, int(seed), batches)) for seed in args.seeds.split(",") if seed]
    faults: list[Fault] = []
    for number, plan in enumerate(plans):
        work = work_root / f"d{number}"
        work.mkdir()
        deployment = Deployment(work / "state", f"faults_{number}", work)
        for fault in run_faults(deployment, plan, "2024-01-21T00:00:00+00:00"):
            faults.append(fault)
            print(f"faults: {fault.kind} at {fault.at}: killed {fault.killed}, converged {fault.converged}, "
                  f"rows lost {fault.rows_lost}", flush=True)  # fmt: skip
            if not fault.converged:
                # What the recovery found, now: the summary is written only at the end.
                print(f"faults:   {fault.detail}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    result = summary(faults)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(
        f"faults: {result['faults_injected']} injected, {result['faults_survived']} survived, "
        f"{result['kill_points_reached_end_first']} kill points not reached, rows lost {result['rows_lost']} "
        f"({args.out})"
    )
    return 0 if result["faults_injected"] == result["faults_survived"] and result["rows_lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
