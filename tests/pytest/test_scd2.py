"""SCD2 customer dimension (dbt snapshot customer_history) under late, out-of-order,
tied and repeated changes, and revenue by tier from a point-in-time join.

One deployment holds four copies ("universes") of the same story side by side,
each with its own customers (prefix) and its own dates (shifted by 14 days):
the same changes reach them in different orders, in three batches.

    s  every change in the first batch (the history built from scratch)
    f  batches in order 1, 2, 3
    r  batches in order 3, 2, 1
    x  batches in order 2, 3, 1

Events land first, before any customer change (every event is `unknown`).
After each step the tests compare the believed history and gold_revenue_by_tier
with a plain-Python reference written from the rules (below), never with the
SQL under test, and check that exactly the partitions whose values changed
were restated, with restatement_reason dimension_change.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.pytest.conftest import Project, version_count

BASE = datetime(2024, 1, 1, tzinfo=UTC)
SPACING = timedelta(days=14)
ORDERS = {"s": (None, None, None), "f": (1, 2, 3), "r": (3, 2, 1), "x": (2, 3, 1)}
UNIVERSES = tuple(ORDERS)
STEPS = (1, 2, 3)
# Everything gold_revenue_by_tier needs; after step 0 only the customer side
# changes (events land once, before step 0), so steps 1-3 build just that.
SELECT_ALL = (
    "+gold_revenue_by_tier gold_revenue_by_tier_causes +late_arrival_audit stg_bronze_customer_changes_malformed"
)
SELECT_CUSTOMERS = "stg_bronze_customer_changes+ stg_bronze_customer_changes_malformed"
UNKNOWN = "unknown"


def as_of(step: int) -> str:
    return (BASE + timedelta(days=90, hours=step)).isoformat()


def at(day: int, hour: int = 0) -> timedelta:
    return timedelta(days=day, hours=hour)


@dataclass(frozen=True)
class Change:
    customer: str
    offset: timedelta
    tier: str | None
    region: str | None
    batch: int
    is_deleted: bool = False


@dataclass(frozen=True)
class Event:
    event_id: str
    customer: str | None
    offset: timedelta
    event_type: str
    amount: Decimal | None


# The story, in offsets from a universe's first day. `batch` is the batch a
# change travels in; universe s gets every batch at step 1.
CHANGES = (
    # c1: gold, a late silver spell from day 3 noon (batch 3), back to gold on
    # day 5 tied with platinum (platinum > gold wins the tie), a duplicate.
    Change("c1", at(0), "gold", "eu", batch=1),
    Change("c1", at(5), "platinum", "eu", batch=1),
    Change("c1", at(5), "gold", "eu", batch=2),
    Change("c1", at(0), "gold", "eu", batch=2),
    Change("c1", at(3, 12), "silver", "eu", batch=3),
    # c2: bronze from day 1, deleted on day 4, back as silver on day 6; a late
    # change before its first version (gold from day 0).
    Change("c2", at(1), "bronze", "us", batch=1),
    Change("c2", at(4), None, None, batch=2, is_deleted=True),
    Change("c2", at(6), "silver", "us", batch=3),
    Change("c2", at(0), "gold", "us", batch=3),
    # c3: region moves; a tie on day 2 (us > eu wins); a repeat with the
    # same values (opens no version).
    Change("c3", at(1), "silver", "eu", batch=1),
    Change("c3", at(2), "silver", "us", batch=2),
    Change("c3", at(2), "silver", "eu", batch=1),
    Change("c3", at(1, 12), "silver", "eu", batch=3),
    # c4: a deletion before anything is known, then a version without a tier.
    Change("c4", at(1), None, None, batch=2, is_deleted=True),
    Change("c4", at(2), None, "eu", batch=1),
    # c5: a deletion tied with an update: the deletion wins, then nothing.
    Change("c5", at(2), "gold", "us", batch=1),
    Change("c5", at(2), None, None, batch=3, is_deleted=True),
)
MALFORMED_CHANGES = (
    '{"customer_id": "c1", "tier": "diamond", "region": "eu", "updated_at": "2024-01-02T00:00:00Z"}',
    '{"customer_id": "c2", "tier": "gold", "updated_at": "2024-01-02 00:00"}',
    "{not json",
)


def money(text: str) -> Decimal:
    return Decimal(text)


EVENTS = (
    Event("o1", "c1", at(0, 9), "order_placed", money("10.00")),
    Event("o2", "c1", at(3, 9), "order_placed", money("20.00")),
    Event("o3", "c1", at(3, 12), "order_placed", money("40.00")),  # exactly at the late change
    Event("o4", "c1", at(4, 9), "order_placed", money("15.50")),
    Event("r1", "c1", at(4, 18), "refund", money("5.50")),
    Event("o5", "c1", at(5, 0), "order_placed", money("8.00")),  # exactly at the tie
    Event("o6", "c2", at(0, 10), "order_placed", money("7.00")),
    Event("o7", "c2", at(2, 10), "order_placed", money("12.00")),
    Event("o8", "c2", at(4, 10), "order_placed", money("30.00")),  # while deleted
    Event("o9", "c2", at(6, 10), "order_placed", money("9.99")),
    Event("o10", "c3", at(1, 10), "order_placed", money("11.00")),
    Event("o11", "c3", at(2, 10), "order_placed", money("13.00")),
    Event("o12", "c4", at(1, 10), "order_placed", money("3.00")),
    Event("o13", "c4", at(3, 10), "order_placed", money("6.00")),
    Event("o14", "c5", at(3, 10), "order_placed", money("4.00")),
    Event("o15", "c9", at(2, 10), "order_placed", money("100.00")),  # never known
    Event("o16", None, at(2, 11), "order_placed", money("1.00")),  # no user at all
    Event("p1", "c1", at(3, 13), "page_view", None),
)


# ---------------------------------------------------------------- reference


def tie_rank(change: Change) -> tuple:
    """Greatest wins: a deletion, then the greatest tier, then region (nulls lowest)."""
    return (
        change.is_deleted,
        change.tier is not None,
        change.tier or "",
        change.region is not None,
        change.region or "",
    )


def reference_history(changes: Iterable[Change]) -> set[tuple]:
    """(customer, valid_from, valid_to, tier, region, is_current) of every version."""
    by_customer: dict[str, dict[timedelta, list[Change]]] = defaultdict(lambda: defaultdict(list))
    for change in changes:
        by_customer[change.customer][change.offset].append(change)
    versions = set()
    for customer, by_time in by_customer.items():
        boundaries: list[tuple[timedelta, tuple | None]] = []
        for offset in sorted(by_time):
            winner = max(by_time[offset], key=tie_rank)
            state = None if winner.is_deleted else (winner.tier, winner.region)
            if not boundaries or boundaries[-1][1] != state:
                boundaries.append((offset, state))
        for index, (offset, state) in enumerate(boundaries):
            if state is None:
                continue
            valid_to = boundaries[index + 1][0] if index + 1 < len(boundaries) else None
            versions.add((customer, offset, valid_to, *state, valid_to is None))
    return versions


def reference_revenue(history: set[tuple]) -> dict[tuple, tuple]:
    """(day, tier, region) -> (orders, gross, refunds, net), all-zero rows left out."""
    totals: dict[tuple, list] = defaultdict(lambda: [0, Decimal("0"), Decimal("0")])
    for event in EVENTS:
        member = (UNKNOWN, UNKNOWN)
        for customer, valid_from, valid_to, tier, region, _ in history:
            if (
                customer == event.customer
                and valid_from <= event.offset
                and (valid_to is None or event.offset < valid_to)
            ):
                member = (tier or UNKNOWN, region or UNKNOWN)
        row = totals[(event.offset.days, *member)]
        if event.event_type == "order_placed":
            row[0] += 1
            row[1] += event.amount
        elif event.event_type == "refund":
            row[2] += event.amount
    return {
        key: (orders, gross, refunds, gross - refunds)
        for key, (orders, gross, refunds) in totals.items()
        if (orders, gross, refunds) != (0, 0, 0)
    }


def delivered(universe: str, step: int) -> list[Change]:
    """Changes a universe has received once `step` has run (step 0: none)."""
    order = ORDERS[universe]
    if order[0] is None:
        return list(CHANGES) if step >= 1 else []
    batches = set(order[:step])
    return [change for change in CHANGES if change.batch in batches]


# ---------------------------------------------------------------- the run


def shift(universe: str) -> timedelta:
    return SPACING * UNIVERSES.index(universe)


def ts(universe: str, offset: timedelta) -> str:
    return (BASE + shift(universe) + offset).isoformat().replace("+00:00", "Z")


def change_record(universe: str, change: Change) -> dict[str, Any]:
    record: dict[str, Any] = {
        "customer_id": f"{universe}_{change.customer}",
        "updated_at": ts(universe, change.offset),
    }
    if change.tier is not None:
        record["tier"] = change.tier
    if change.region is not None:
        record["region"] = change.region
    if change.is_deleted:
        record["is_deleted"] = True
    return record


def event_record(universe: str, event: Event) -> dict[str, Any]:
    return {
        "event_id": f"{universe}_{event.event_id}",
        "event_type": event.event_type,
        "user_id": f"{universe}_{event.customer}" if event.customer else None,
        "amount": str(event.amount) if event.amount is not None else None,
        "event_ts": ts(universe, event.offset),
    }


def arriving(universe: str, step: int) -> list[Change]:
    order = ORDERS[universe]
    if order[0] is None:
        return list(CHANGES) if step == 1 else []
    return [change for change in CHANGES if change.batch == order[step - 1]]


def universe_of(customer_id: str) -> tuple[str, str]:
    universe, customer = customer_id.split("_", 1)
    return universe, customer


def universe_of_date(event_date: date) -> tuple[str, int]:
    days = (event_date - BASE.date()).days
    return UNIVERSES[days // SPACING.days], days % SPACING.days


@dataclass
class State:
    """What a step left behind."""

    history: dict[str, set[tuple]]
    revenue: dict[str, dict[tuple, tuple]]
    gold: dict[tuple, Any]
    snapshot_rows: int
    change_log_rows: int
    causes: list[Any]  # gold_revenue_by_tier_causes
    snapshot_versions: int
    messages: tuple[str, ...] = ()  # of the run that left it, where a test reads them


def read_state(project: Project) -> State:
    history: dict[str, set[tuple]] = {u: set() for u in UNIVERSES}
    believed = project.table("snapshots", "customer_history").where("superseded_run_at is null")
    for row in believed.collect():
        universe, customer = universe_of(row.customer_id)
        origin = BASE.replace(tzinfo=None) + shift(universe)
        valid_to = None if row.valid_to is None else row.valid_to - origin
        history[universe].add((customer, row.valid_from - origin, valid_to, row.tier, row.region, row.is_current))
    revenue: dict[str, dict[tuple, tuple]] = {u: {} for u in UNIVERSES}
    gold = {}
    for row in project.table("gold", "gold_revenue_by_tier").collect():
        universe, day = universe_of_date(row.event_date)
        gold[(row.event_date, row.tier, row.region)] = row
        values = (row.orders, row.gross_revenue, row.refunds, row.net_revenue)
        if values[:3] != (0, 0, 0):
            revenue[universe][(day, row.tier, row.region)] = values
    return State(
        history=history,
        revenue=revenue,
        gold=gold,
        snapshot_rows=project.table("snapshots", "customer_history").count(),
        change_log_rows=project.table("gold", "gold_revenue_by_tier_changes").count(),
        causes=project.table("audit", "gold_revenue_by_tier_causes").collect(),
        snapshot_versions=version_count(project.spark, f"{project.schema}_snapshots.customer_history"),
    )


# The scenario's customers arrive after their events, so their first versions move
# nearly every published (and final) partition out of `unknown`: far past the
# publication gate's defaults, which test_gate_schedule exercises. Here the gate
# is wide open: its per-partition checks off, its table limits out of reach.
OPEN_GATE = {
    "max_restated_share": 1.0,
    "min_published_partitions": 1,
    "max_total_change": 1000.0,
    "max_row_change": 1000.0,
    "max_final_change": None,
    "shrink_reasons": None,
    "max_shrink": None,
    "max_closed_growth": None,
    "max_value_factor": None,
}


def build(project: Project, step: int, select: str = SELECT_CUSTOMERS) -> None:
    project.dbt(
        "build",
        "--select",
        select,
        "--exclude-resource-type",
        "test",
        vars={"as_of": as_of(step), "publication_gate": OPEN_GATE},
    )


def land_changes(project: Project, tmp: Path, step: int) -> None:
    lines = [change_record(u, c) for u in UNIVERSES for c in arriving(u, step)]
    if step == 1:
        lines += list(MALFORMED_CHANGES)
    path = tmp / f"customers_step_{step}.ndjson"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    arrival = (datetime.fromisoformat(as_of(step)) - timedelta(minutes=30)).isoformat()
    assert project.ingest("crm", path, arrival_ts=arrival, feed="customers") == 0


@pytest.fixture(scope="module")
def scenario(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> dict[int, State]:
    project = module_project
    tmp = tmp_path_factory.mktemp("scd2")
    for universe in UNIVERSES:
        path = tmp / f"events_{universe}.ndjson"
        path.write_text("".join(json.dumps(event_record(universe, e)) + "\n" for e in EVENTS))
        arrival = (BASE + shift(universe) + timedelta(days=8)).isoformat()
        assert project.ingest("web", path, arrival_ts=arrival) == 0
    states = {}
    build(project, 0, SELECT_ALL)
    states[0] = read_state(project)
    for step in STEPS:
        land_changes(project, tmp, step)
        build(project, step)
        states[step] = read_state(project)
    # Re-run: the snapshot alone (an hour later: with nothing landed, the time
    # changes nothing), then the build, with nothing new.
    later = (datetime.fromisoformat(as_of(STEPS[-1])) + timedelta(hours=1)).isoformat()
    project.dbt("snapshot", vars={"as_of": later, "publication_gate": OPEN_GATE})
    snapshot_messages = tuple(project.messages)
    build(project, STEPS[-1], SELECT_ALL)
    states[len(STEPS) + 1] = replace(read_state(project), messages=snapshot_messages)
    return states


# ---------------------------------------------------------------- the tests


def test_events_before_any_customer_are_all_unknown(scenario: dict[int, State]) -> None:
    state = scenario[0]
    assert all(not versions for versions in state.history.values())
    for universe in UNIVERSES:
        assert state.revenue[universe] == reference_revenue(set())
        assert {(tier, region) for _, tier, region in state.revenue[universe]} == {(UNKNOWN, UNKNOWN)}


@pytest.mark.parametrize("step", STEPS)
def test_history_matches_reference(scenario: dict[int, State], step: int) -> None:
    for universe in UNIVERSES:
        expected = reference_history(delivered(universe, step))
        assert scenario[step].history[universe] == expected, f"universe {universe}"


def test_history_is_the_same_whatever_the_arrival_order(scenario: dict[int, State]) -> None:
    final = scenario[STEPS[-1]].history
    from_scratch = final["s"]
    assert from_scratch == reference_history(CHANGES)
    for universe in UNIVERSES:
        assert final[universe] == from_scratch, f"universe {universe}"
    # the rules, spelled out for a few customers
    assert ("c1", at(3, 12), at(5), "silver", "eu", False) in from_scratch
    assert ("c1", at(5), None, "platinum", "eu", True) in from_scratch
    assert {v[1:3] for v in from_scratch if v[0] == "c2"} == {
        (at(0), at(1)),
        (at(1), at(4)),
        (at(6), None),
    }
    assert {v for v in from_scratch if v[0] == "c3"} == {
        ("c3", at(1), at(2), "silver", "eu", False),
        ("c3", at(2), None, "silver", "us", True),
    }
    assert {v for v in from_scratch if v[0] == "c4"} == {("c4", at(2), None, None, "eu", True)}
    assert not {v for v in from_scratch if v[0] == "c5"}


@pytest.mark.parametrize("step", STEPS)
def test_revenue_by_tier_matches_point_in_time_reference(scenario: dict[int, State], step: int) -> None:
    for universe in UNIVERSES:
        expected = reference_revenue(reference_history(delivered(universe, step)))
        assert scenario[step].revenue[universe] == expected, f"universe {universe}"
    final = scenario[STEPS[-1]].revenue
    assert all(final[universe] == final["s"] for universe in UNIVERSES)


def test_no_event_is_dropped(scenario: dict[int, State]) -> None:
    orders = sum(1 for e in EVENTS if e.event_type == "order_placed")
    for state in scenario.values():
        for universe in UNIVERSES:
            assert sum(v[0] for v in state.revenue[universe].values()) == orders


@pytest.mark.parametrize("step", STEPS)
def test_late_changes_restate_exactly_the_changed_partitions(scenario: dict[int, State], step: int) -> None:
    before, after = scenario[step - 1], scenario[step]
    stamp = datetime.fromisoformat(as_of(step)).replace(tzinfo=None)
    for universe in UNIVERSES:
        old = reference_revenue(reference_history(delivered(universe, step - 1)))
        new = reference_revenue(reference_history(delivered(universe, step)))
        expected = {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}
        written = set()
        for (event_date, tier, region), row in after.gold.items():
            row_universe, day = universe_of_date(event_date)
            if row_universe != universe:
                continue
            key = (day, tier, region)
            previous = before.gold.get((event_date, tier, region))
            if row.last_changed_at == stamp and (previous is not None or key in new):
                written.add(key)
            if previous is not None and previous.version != row.version:
                assert row.restated_on == stamp, key
                assert row.restatement_reason == "dimension_change", key
                assert row.version == previous.version + 1, key
            elif previous is not None:
                assert (row.version, row.restated_on) == (previous.version, previous.restated_on)
        assert written == expected, f"universe {universe}"


def test_late_silver_spell_moves_revenue_on_exactly_its_days(scenario: dict[int, State]) -> None:
    """Universe f, step 3: c1's silver spell from day 3 noon arrives after day 5's change."""
    before, after = scenario[2], scenario[3]
    days = set()
    for key, row in after.gold.items():
        universe, day = universe_of_date(key[0])
        previous = before.gold.get(key)
        if universe == "f" and previous is not None and previous.version != row.version:
            days.add(day)
    # day 3: o3 (40.00 at noon) moves gold -> silver; day 4: o4 and r1 do;
    # day 0: c2's late gold version; day 6: c2 returns as silver.
    assert days == {0, 3, 4, 6}
    revenue_before, revenue_after = before.revenue["f"], after.revenue["f"]
    assert revenue_before[(3, "gold", "eu")] == (2, money("60.00"), 0, money("60.00"))
    assert revenue_after[(3, "gold", "eu")] == (1, money("20.00"), 0, money("20.00"))
    assert revenue_after[(3, "silver", "eu")] == (1, money("40.00"), 0, money("40.00"))
    assert (4, "gold", "eu") not in revenue_after
    assert revenue_after[(4, "silver", "eu")] == (1, money("15.50"), money("5.50"), money("10.00"))


def test_dimension_changes_are_audited(scenario: dict[int, State], module_project: Project) -> None:
    """Universe f, step 3: the audit names exactly the days whose revenue moved."""
    stamp = datetime.fromisoformat(as_of(3)).replace(tzinfo=None)
    audited = module_project.table("audit", "late_arrival_audit").where("action = 'dimension_change'").collect()
    days = set()
    for row in audited:
        if row.recorded_at == stamp and row.event_id.startswith("f_"):
            # A customer's first version has no before values; c5's deletion
            # (tied with its only update, batch 3) leaves no after values.
            assert row.reason
            if row.event_id == "f_c5":
                assert row.before_values and row.after_values is None
            else:
                assert row.after_values
            for partition in row.impacted_partitions:
                universe, day = universe_of_date(date.fromisoformat(partition))
                assert universe == "f"
                days.add(day)
    assert days == {0, 3, 4, 6}


@pytest.mark.parametrize("step", (0, *STEPS))
def test_each_step_is_explained_by_what_moved_it(scenario: dict[int, State], step: int) -> None:
    """The causes a step's build explained (gold_revenue_by_tier_causes) add
    up, row by row, to the reference's change: at step 0 the events landing,
    after it the customer changes alone (dimension_change)."""
    seen = {row.explained_run_at for row in scenario[step - 1].causes} if step else set()
    new = [row for row in scenario[step].causes if row.explained_run_at not in seen]
    actions = {row.action for row in new}
    assert actions == {"dimension_change"} if step else actions <= {"insert", "late_merge"}
    zero = (0, Decimal(0), Decimal(0), Decimal(0))
    for universe in UNIVERSES:
        old = reference_revenue(reference_history(delivered(universe, step - 1))) if step else {}
        now = reference_revenue(reference_history(delivered(universe, step)))
        expected = {
            key: delta
            for key in old.keys() | now.keys()
            if (delta := tuple(n - o for n, o in zip(now.get(key, zero), old.get(key, zero), strict=True))) != zero
        }
        explained: dict[tuple, list] = defaultdict(lambda: list(zero))
        for row in new:
            row_universe, day = universe_of_date(row.event_date)
            if row_universe == universe:
                cell = explained[(day, row.tier, row.region)]
                for i, measure in enumerate(("orders", "gross_revenue", "refunds", "net_revenue")):
                    cell[i] += row[measure]
        assert {key: tuple(cell) for key, cell in explained.items() if tuple(cell) != zero} == expected, universe


def test_rerun_changes_nothing(scenario: dict[int, State]) -> None:
    last, rerun = scenario[STEPS[-1]], scenario[len(STEPS) + 1]
    assert len(rerun.causes) == len(last.causes)
    assert rerun.snapshot_rows == last.snapshot_rows
    assert rerun.change_log_rows == last.change_log_rows
    assert rerun.history == last.history
    # The snapshot run alone found nothing landed and ran nothing; neither it
    # nor the build gave the snapshot a new version.
    assert any(m.startswith("customer_history: no change landed since its last run") for m in rerun.messages)
    assert rerun.snapshot_versions == last.snapshot_versions
    assert {k: (r.version, r.last_changed_at, r.net_revenue) for k, r in rerun.gold.items()} == {
        k: (r.version, r.last_changed_at, r.net_revenue) for k, r in last.gold.items()
    }


def test_superseded_versions_are_kept(scenario: dict[int, State], module_project: Project) -> None:
    """Universe r received c1's late silver spell first: its first belief is superseded, not lost."""
    rows = module_project.table("snapshots", "customer_history").where(
        "customer_id = 'r_c1' and superseded_run_at is not null"
    )
    assert rows.count() > 0
    assert rows.where("is_current").count() == 0


def test_malformed_changes_are_listed_not_lost(scenario: dict[int, State], module_project: Project) -> None:
    malformed = module_project.table("bronze", "stg_bronze_customer_changes_malformed").collect()
    assert sorted(r.parse_error for r in malformed) == [
        "invalid_json",
        "unknown_tier",
        "unparseable_updated_at",
    ]
    staged = module_project.table("bronze", "stg_bronze_customer_changes")
    assert staged.count() == len(CHANGES) * len(UNIVERSES)


def test_data_tests_pass(scenario: dict[int, State], module_project: Project) -> None:
    module_project.dbt(
        "test",
        "--select",
        SELECT_CUSTOMERS,
        vars={"as_of": as_of(STEPS[-1])},
    )
