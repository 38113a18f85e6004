"""Sessionization: examples, and incremental == from scratch whatever the arrival order.

Expected sessions come from a plain-Python sessionizer written from the rule
("a new session starts when the previous event of the user is more than the
gap earlier"), not from python_jobs.core.sessionize.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.exceptions import DbtRuntimeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from python_jobs.core.local_rows import local_rows
from python_jobs.core.sessionize import daily_sessions, sessionize, update_sessions
from tests.pytest.conftest import Project, rewrites_and_deletes_added, version_log
from tests.pytest.test_late_arrival_sample import LANDING, batches

GAP = timedelta(minutes=30)
T0 = datetime(2024, 3, 1, 22, 0, tzinfo=UTC)
SILVER_SCHEMA = (
    "event_id string, source_system string, event_type string, user_id string, "
    "amount decimal(18,2), event_ts timestamp, is_deleted boolean, changed_run_at timestamp"
)
CHANGES_SCHEMA = (
    "event_id string, source_system string, action string, user_id string, "
    "previous_user_id string, event_ts timestamp, previous_event_ts timestamp, "
    "changed_run_at timestamp"
)


@dataclass(frozen=True)
class Event:
    event_id: str
    user_id: str | None
    ts: datetime | None
    event_type: str = "page_view"
    amount: Decimal | None = None
    source_system: str = "web"
    is_deleted: bool = False


def at(minute: float) -> datetime:
    return T0 + timedelta(minutes=minute)


# ----------------------------------------------------------------- reference


def reference_sessions(events: list[Event], gap: timedelta = GAP) -> set[tuple]:
    """Sessions of the live events, from the rule, in plain Python."""
    by_user: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if not event.is_deleted and event.user_id is not None and event.ts is not None:
            by_user[event.user_id].append(event)
    sessions = set()
    for user, user_events in by_user.items():
        user_events.sort(key=lambda e: (e.ts, e.source_system, e.event_id))
        runs = [[user_events[0]]]
        for event in user_events[1:]:
            if event.ts - runs[-1][-1].ts > gap:
                runs.append([event])
            else:
                runs[-1].append(event)
        for run in runs:
            first, last = run[0], run[-1]
            orders = [e for e in run if e.event_type == "order_placed"]
            key = f"{user}|{first.source_system}|{first.event_id}|{first.ts:%Y-%m-%dT%H:%M:%S.%f}"
            sessions.add(
                (
                    hashlib.sha256(key.encode()).hexdigest()[:32],
                    user,
                    first.source_system,
                    first.ts,
                    last.ts,
                    int((last.ts - first.ts).total_seconds()),
                    len(run),
                    bool(orders),
                    sum((e.amount or Decimal(0) for e in orders), Decimal("0.00")),
                )
            )
    return sessions


def collected(sessions: DataFrame | list[Row]) -> set[tuple]:
    rows = sessions if isinstance(sessions, list) else sessions.collect()
    return {
        (
            row.session_id,
            row.user_id,
            row.source_system,
            row.session_start_ts.astimezone(UTC),
            row.session_end_ts.astimezone(UTC),
            row.duration_seconds,
            row.event_count,
            row.has_order,
            row.revenue,
        )
        for row in rows
    }


def silver_frame(spark: SparkSession, events: list[Event], run_at: datetime) -> DataFrame:
    rows = [
        (
            e.event_id,
            e.source_system,
            e.event_type,
            e.user_id,
            e.amount,
            e.ts,
            e.is_deleted,
            run_at,
        )
        for e in events
    ]
    # event_date as silver derives it: the UTC date of event_ts.
    return local_rows(spark, rows, SILVER_SCHEMA).withColumn("event_date", F.to_date("event_ts"))


# ------------------------------------------------------------------ examples


def from_scratch(spark: SparkSession, events: list[Event]) -> set[tuple]:
    frame = silver_frame(spark, events, T0).where("not is_deleted and user_id is not null")
    return collected(sessionize(frame, GAP.total_seconds() / 60))


def test_gap_boundary_ties_and_excluded_rows(spark: SparkSession) -> None:
    events = [
        Event("a1", "u1", at(0)),
        Event("a2", "u1", at(30)),  # exactly one gap later: same session
        Event("a3", "u1", at(60.01)),  # just over a gap later: new session
        Event("b1", "u2", at(5), source_system="mobile"),
        Event("b0", "u2", at(5), source_system="mobile"),  # same instant: b0 sorts first
        Event("n1", None, at(1)),  # no user: in no session
        Event("d1", "u1", at(45), is_deleted=True),  # deleted: in no session
    ]
    got = from_scratch(spark, events)
    assert got == reference_sessions(events)
    assert sorted((s[1], s[6]) for s in got) == [("u1", 1), ("u1", 2), ("u2", 2)]


def test_revenue_and_conversion_are_from_orders_only(spark: SparkSession) -> None:
    events = [
        Event("o1", "u1", at(0), "order_placed", Decimal("10.50")),
        Event("o2", "u1", at(10), "order_placed", Decimal("4.25")),
        Event("r1", "u1", at(20), "refund", Decimal("10.50")),
        Event("v1", "u2", at(0)),
    ]
    by_user = {s[1]: s for s in from_scratch(spark, events)}
    assert by_user["u1"][7:] == (True, Decimal("14.75"))
    assert by_user["u2"][7:] == (False, Decimal("0.00"))


def test_daily_sessions_by_start_date_and_first_source(spark: SparkSession) -> None:
    events = [
        # Starts 23:50 on March 1 on mobile, runs past midnight: counts on March 1.
        Event("m1", "u1", at(110), source_system="mobile"),
        Event("w1", "u1", at(130), "order_placed", Decimal("20.00")),
        Event("w2", "u2", at(125)),  # 00:05 March 2, web, no order
        Event("w3", "u3", at(126)),  # 00:06 March 2, web, 60 s long, order
        Event("w4", "u3", at(127), "order_placed", Decimal("5.00")),
    ]
    frame = silver_frame(spark, events, T0)
    daily = daily_sessions(sessionize(frame, 30)).collect()
    got = {
        (row.event_date.isoformat(), row.source_system): (
            row.sessions,
            row.converted_sessions,
            row.conversion_rate,
            row.avg_duration_seconds,
            row.revenue,
        )
        for row in daily
    }
    assert got == {
        ("2024-03-01", "mobile"): (1, 1, 1.0, 1200.0, Decimal("20.00")),
        ("2024-03-02", "web"): (2, 1, 0.5, 30.0, Decimal("5.00")),
    }


# ------------------------------------------------ incremental, property-based


@dataclass
class Silver:
    """A toy silver: current rows by key plus the change log, as the contract says."""

    rows: dict[str, Event]
    changes: list[tuple]

    def apply(self, new: Event, run_at: datetime) -> None:
        old = self.rows.get(new.event_id)
        self.rows[new.event_id] = new
        self.changes.append(
            (
                new.event_id,
                new.source_system,
                "change",
                new.user_id,
                old.user_id if old else None,
                None if new.user_id is None and new.is_deleted else new.ts,
                old.ts if old else None,
                run_at,
            )
        )


class SessionsTable:
    """silver_sessions as dbt leaves it: update rows merged on session_id, tombstones deleted."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.rows: dict[str, Row] | None = None  # None: the table does not exist yet
        self.schema = ""  # DDL of the sessions, once a run has returned them

    def run(self, silver: Silver, run_at: datetime, gap_minutes: float = 30) -> list[Row]:
        current = None if self.rows is None else local_rows(self.spark, list(self.rows.values()), self.schema)
        update = update_sessions(
            current,
            silver_frame(self.spark, list(silver.rows.values()), run_at),
            local_rows(self.spark, silver.changes, CHANGES_SCHEMA),
            gap_minutes,
        )
        merged = update.collect()
        assert len({row.session_id for row in merged}) == len(merged), "merge keys must be unique"
        self.schema = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in update.schema.fields)
        rows = dict(self.rows or {})
        for row in merged:
            if row.event_count == 0:
                del rows[row.session_id]  # a tombstone names an existing session
            else:
                rows[row.session_id] = row
        self.rows = rows
        return merged

    def sessions(self) -> set[tuple]:
        return collected(list((self.rows or {}).values()))


def test_late_bridge_merges_deletion_splits_and_untouched_sessions_stay(
    spark: SparkSession,
) -> None:
    runs = [datetime(2024, 4, day, tzinfo=UTC) for day in (1, 2, 3, 4)]
    silver = Silver({}, [])
    table = SessionsTable(spark)

    def stamps() -> dict[tuple[str, float], int]:
        """(user, start minute) -> index of the run that last changed the session."""
        return {
            (row.user_id, (row.session_start_ts.astimezone(UTC) - T0).total_seconds() / 60): runs.index(
                row.changed_run_at.astimezone(UTC)
            )
            for row in table.rows.values()
        }

    for event in [Event("a", "u1", at(0)), Event("b", "u1", at(50)), Event("c", "u1", at(100))]:
        silver.apply(event, runs[0])
    for event in [Event("x", "u2", at(0)), Event("y", "u2", at(200))]:
        silver.apply(event, runs[0])
    table.run(silver, runs[0])
    assert table.sessions() == reference_sessions(list(silver.rows.values()))
    assert stamps() == {("u1", 0): 0, ("u1", 50): 0, ("u1", 100): 0, ("u2", 0): 0, ("u2", 200): 0}

    silver.apply(Event("late", "u1", at(25)), runs[1])  # bridges a and b
    silver.apply(replace(silver.rows["c"], ts=at(75)), runs[1])  # corrected: c moves next to b
    silver.apply(Event("z", "u2", at(100)), runs[1])  # a gap away from both x and y
    merged = table.run(silver, runs[1])
    assert table.sessions() == reference_sessions(list(silver.rows.values()))
    assert stamps() == {("u1", 0): 1, ("u2", 0): 0, ("u2", 100): 1, ("u2", 200): 0}
    # Merged: u1's grown session and u2's new one; tombstones for u1's b and c sessions.
    assert sorted(row.event_count for row in merged) == [0, 0, 1, 4]

    silver.apply(replace(silver.rows["b"], is_deleted=True), runs[2])  # splits a-late | c
    table.run(silver, runs[2])
    assert table.sessions() == reference_sessions(list(silver.rows.values()))
    assert stamps() == {("u1", 0): 2, ("u1", 75): 2, ("u2", 0): 0, ("u2", 100): 1, ("u2", 200): 0}

    silver.apply(silver.rows["x"], runs[3])  # a re-delivery: nothing to merge
    assert table.run(silver, runs[3]) == []


minutes = st.integers(min_value=0, max_value=240)
users = st.sampled_from(["u1", "u2", "u3"])


@st.composite
def history(draw: st.DrawFn) -> list[list[tuple]]:
    """Runs of operations: insert, move (time/user/amount correction), delete, re-deliver."""
    n_events = draw(st.integers(min_value=1, max_value=14))
    keys = [f"e{i}" for i in range(n_events)]
    runs: list[list[tuple]] = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        run = []
        for _ in range(draw(st.integers(min_value=1, max_value=6))):
            kind = draw(st.sampled_from(["insert", "insert", "move", "delete", "redeliver"]))
            run.append(
                (
                    kind,
                    draw(st.sampled_from(keys)),
                    draw(users),
                    draw(minutes),
                    draw(st.booleans()),
                    draw(st.booleans()),
                )
            )
        runs.append(run)
    return runs


def play(histories: list[list[list[tuple]]]) -> list[tuple[datetime, Silver]]:
    """Silver after each run. Histories are independent (own users and keys) and
    played side by side, so one Spark pass per run checks all of them."""
    silver = Silver({}, [])
    states = []
    for index in range(max(len(runs) for runs in histories)):
        run_at = datetime(2024, 4, 1, tzinfo=UTC) + timedelta(hours=index)
        for number, runs in enumerate(histories):
            operations = runs[index] if index < len(runs) else []
            for kind, key, user, minute, is_order, blank_deleted in operations:
                key, user = f"h{number}{key}", f"h{number}{user}"
                old = silver.rows.get(key)
                if kind == "insert" or old is None:
                    event_type = "order_placed" if is_order else "page_view"
                    amount = Decimal(minute) / 4 if is_order else None
                    silver.apply(Event(key, user, at(minute), event_type, amount), run_at)
                elif kind == "move":
                    silver.apply(replace(old, user_id=user, ts=at(minute), is_deleted=False), run_at)
                elif kind == "delete":
                    # A deletion record may carry the event's fields or only its key.
                    deleted = replace(old, is_deleted=True)
                    silver.apply(replace(deleted, user_id=None) if blank_deleted else deleted, run_at)
                else:
                    silver.apply(old, run_at)  # re-delivery: logged, nothing changes
        states.append((run_at, Silver(dict(silver.rows), list(silver.changes))))
    return states


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    histories=st.lists(history(), min_size=1, max_size=5),
    gap_minutes=st.sampled_from([20, 30]),
)
def test_incremental_equals_from_scratch_whatever_the_order(
    spark: SparkSession, histories: list[list[list[tuple]]], gap_minutes: int
) -> None:
    table = SessionsTable(spark)
    for run_at, silver in play(histories):
        table.run(silver, run_at, gap_minutes)
        assert table.sessions() == reference_sessions(list(silver.rows.values()), timedelta(minutes=gap_minutes))


# ------------------------------------------------------- dbt build, end to end


def silver_events(project: Project) -> list[Event]:
    return [
        Event(
            row.event_id,
            row.user_id,
            row.event_ts and row.event_ts.astimezone(UTC),
            row.event_type,
            row.amount,
            row.source_system,
            row.is_deleted,
        )
        for row in project.table("silver", "silver_events").collect()
    ]


def reference_daily(sessions: set[tuple]) -> dict[tuple, tuple]:
    days: dict[tuple, list[tuple]] = defaultdict(list)
    for session in sessions:
        days[(session[3].date(), session[2])].append(session)
    return {
        key: (
            len(group),
            sum(s[7] for s in group),
            sum(s[5] for s in group) / len(group),
            sum((s[8] for s in group), Decimal(0)),
        )
        for key, group in days.items()
    }


def test_dbt_build_keeps_sessions_equal_to_a_fresh_sessionization(project: Project) -> None:
    gap_minutes = 45
    landed = batches()
    stages = [(landed[:4], "2024-01-17T12:00:00+00:00"), (landed[4:], "2024-01-21T00:00:00+00:00")]
    stamps = []
    for stage, as_of in stages:
        for batch in stage:
            file = LANDING / batch["file_name"]
            assert project.ingest(batch["source_system"], file, arrival_ts=batch["arrival_ts"]) == 0
        project.build(as_of=as_of, select="+gold_daily_sessions", session_gap_minutes=gap_minutes)

        expected = reference_sessions(silver_events(project), timedelta(minutes=gap_minutes))
        sessions = project.table("silver", "silver_sessions")
        assert collected(sessions) == expected
        daily = {
            (row.event_date, row.source_system): (
                row.sessions,
                row.converted_sessions,
                row.avg_duration_seconds,
                row.revenue,
            )
            for row in project.table("gold", "gold_daily_sessions").collect()
        }
        assert daily == reference_daily(expected)
        stamps.append({row.session_id: row.changed_run_at for row in sessions.collect()})
        # The Python model's staging table is gone (SQL models leave session temp views).
        staging = project.spark.sql(f"show tables in {project.schema}_silver like 'silver_sessions__dbt_tmp'")
        assert staging.where("not isTemporary").collect() == []

    # Second build: only the sessions of users with changes were recomputed.
    first_build = max(stamps[0].values())
    changes = project.table("silver", "silver_event_changes").where(f"changed_run_at > '{first_build}'")
    changed_users = {user for row in changes.collect() for user in (row.user_id, row.previous_user_id) if user}
    kept = {sid for sid, stamp in stamps[1].items() if stamp == first_build}
    by_user = {row.session_id: row.user_id for row in project.table("silver", "silver_sessions").collect()}
    untouched_users = {user for user in by_user.values() if user not in changed_users}
    assert untouched_users, "the scenario must leave some users untouched"
    assert {sid for sid, user in by_user.items() if user in untouched_users} <= kept
    assert kept <= set(stamps[0])

    # silver_sessions is merge-on-read (meta.merge_on_read): after the first
    # build's table, the second build's merge and tombstone delete wrote
    # delete files and removed no data file.
    # On Delta the same through deletion vectors.
    sessions = f"{project.schema}_silver.silver_sessions"
    later = rewrites_and_deletes_added(project.spark, sessions)[1:]
    assert later, "the second build must commit to silver_sessions"
    assert all(rewritten == 0 for rewritten, _ in later), later
    assert any(added > 0 for _, added in later), later
    assert any(stamp > first_build for stamp in stamps[1].values())

    # Nothing new: the sessions table gets no new version, and no Python
    # runs for it (skip_if_inputs_unchanged: silver is at the versions the
    # last run read).
    before = version_log(project.spark, sessions)
    project.build(as_of=stages[-1][1], select="silver_sessions", session_gap_minutes=gap_minutes)
    assert version_log(project.spark, sessions) == before
    assert any(m.startswith("silver_sessions: inputs unchanged since its last run") for m in project.messages)
    assert collected(project.table("silver", "silver_sessions")) == expected

    # A build's tests read the sessions it wrote (meta test_scope, run_value
    # latest): a duplicated id among them fails, one among older sessions is
    # left to `dbt test`, which reads the whole table.
    def test_status(name: str, **more_vars: Any) -> str:
        result = project.dbt(
            "test",
            "--select",
            name,
            vars={"as_of": stages[-1][1], "session_gap_minutes": gap_minutes, **more_vars},
            expect_ok=False,
        )
        (status,) = [str(r.status) for r in result.result if r.node.name == name]  # type: ignore[union-attr]
        return status

    def key_test_status(**more_vars: Any) -> str:
        return test_status("primary_key_silver_sessions_session_id", **more_vars)

    table = f"{project.schema}_silver.silver_sessions"
    latest = max(stamps[1].values())
    one = sorted(kept)[0]  # a session of the first build, older than the latest
    second = timedelta(seconds=1)
    for stamp, in_run_scope in ((latest + second, True), (first_build - second, False)):
        project.sql(
            f"insert into {table} select session_id, user_id, source_system, session_start_ts, session_end_ts,"
            f" duration_seconds, event_count, has_order, revenue, timestamp'{stamp}' from {table}"
            f" where session_id = '{one}'"
        )
        assert key_test_status(data_tests="run") == ("fail" if in_run_scope else "pass")
        assert key_test_status() == "fail"
        project.sql(f"delete from {table} where session_id = '{one}' and changed_run_at = timestamp'{stamp}'")
    assert key_test_status(data_tests="run") == "pass"

    # A null key fails the key test (unique and not null in one query); a
    # null in another required column fails the model's not_null_columns.
    not_null = "not_null_columns_silver_sessions_user_id__source_system__session_start_ts__session_end_ts"
    assert test_status(not_null, data_tests="run") == "pass"
    for column, failing in (("session_id", "primary_key_silver_sessions_session_id"), ("user_id", not_null)):
        values = "session_id, user_id, source_system, session_start_ts, session_end_ts".replace(
            column, f"cast(null as string) as {column}"
        )
        project.sql(
            f"insert into {table} select {values}, duration_seconds, event_count, has_order, revenue,"
            f" timestamp'{latest + second}' from {table} where session_id = '{one}'"
        )
        assert test_status(failing, data_tests="run") == "fail"
        project.sql(f"delete from {table} where changed_run_at = timestamp'{latest + second}'")
    assert test_status(not_null, data_tests="run") == key_test_status(data_tests="run") == "pass"


@pytest.mark.parametrize("method", [SparkConnectionMethod.THRIFT, SparkConnectionMethod.HTTP])
def test_python_model_fails_at_once_with_one_sentence_off_session_targets(
    method: SparkConnectionMethod,
) -> None:
    adapter = LatecomerAdapter.__new__(LatecomerAdapter)  # no connection needed for the hook
    adapter.config = SimpleNamespace(credentials=SimpleNamespace(method=method))
    model = SimpleNamespace(language="python", name="silver_sessions")
    with pytest.raises(DbtRuntimeError) as failure:
        # Called by dbt before the materialization (no pre-hook, no drop, no SQL).
        adapter.pre_model_hook(SimpleNamespace(model=model))
    message = failure.value.msg
    assert message == (
        f"Python model silver_sessions cannot run over a {method.value} connection: dbt Python "
        "models run only on session targets (local, delta, cluster), so build them there or "
        "leave them out with --exclude tag:python."
    )
    sql_model = SimpleNamespace(language="sql", name="silver_events")
    assert adapter.pre_model_hook(SimpleNamespace(model=sql_model)) is None
