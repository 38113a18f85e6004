"""Readers' views (python_jobs.core.reader_views), without Spark: the SQL they
are made of, the slots a publication gives each view, and, over any timing,
that a query planned within the grace time finds the pointer's publication
in every slot it loads, so it reads one run everywhere."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_jobs.core import reader_views
from python_jobs.core.reader_views import Publication, Slot


def test_the_first_publication_gives_each_view_one_slot() -> None:
    first = reader_views.next_publication(None, "latecomer_run_a1", {"gold_daily_revenue": 11})
    assert first.seq == 1
    assert reader_views.slots(None, first, "gold_daily_revenue") == [Slot(1, "11")]


def test_a_view_keeps_the_current_publication_beside_the_new_one() -> None:
    current = Publication(4, "latecomer_run_a1", 100.0, {"gold_daily_revenue": "11", "gold_weekly_revenue": "21"})
    new = reader_views.next_publication(
        current, "latecomer_run_b2", {"gold_daily_revenue": "12", "gold_weekly_revenue": "21", "gold_new": "5"}
    )
    assert new.seq == 5
    assert reader_views.slots(current, new, "gold_daily_revenue") == [Slot(4, "11"), Slot(5, "12")]
    assert reader_views.slots(current, new, "gold_weekly_revenue") == [Slot(4, "21"), Slot(5, "21")]
    # A table the current publication did not have: the new slot only.
    assert reader_views.slots(current, new, "gold_new") == [Slot(5, "5")]
    assert reader_views.fallback_slots([Slot(4, "11"), Slot(5, "12")]) == [Slot(5, "12")]


CURRENT = "(select max(publication_seq) from latecomer_published.publication where effective_at <= current_timestamp())"


def test_a_query_reads_the_newest_publication_in_effect_at_its_timestamp() -> None:
    assert reader_views.current_sql("latecomer") == CURRENT


def test_a_delta_view_reads_each_slot_when_the_query_reads_its_publication() -> None:
    sql = reader_views.delta_view_sql(
        "latecomer", "gold_daily_revenue", "latecomer_gold.gold_daily_revenue", [Slot(4, "11"), Slot(5, "12")]
    )
    assert sql == (
        "create or replace view latecomer_published.gold_daily_revenue as\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 11\n"
        f"where case {CURRENT} when 4 then true when 5 then false"
        f" else raise_error('{reader_views.MOVED_MESSAGE}') end\n"
        "union all\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 12\n"
        f"where {CURRENT} = 5"
    )


def test_an_iceberg_view_reads_the_tag_of_the_publications_parity() -> None:
    sql = reader_views.iceberg_view_sql("latecomer", "gold_daily_revenue", "latecomer_gold.gold_daily_revenue")
    assert sql == (
        "create view if not exists latecomer_published.gold_daily_revenue as\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 'latecomer_published_0'\n"
        f"where {CURRENT} % 2 = 0\n"
        "union all\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 'latecomer_published_1'\n"
        f"where {CURRENT} % 2 = 1"
    )
    assert reader_views.tag_sql("latecomer_gold.gold_daily_revenue", 7, "123") == (
        "alter table latecomer_gold.gold_daily_revenue create or replace tag latecomer_published_1 as of version 123"
    )


def test_a_publication_is_one_entry_of_the_log() -> None:
    publication = Publication(5, "latecomer_run_b2", 1700000000.25, {"gold_daily_revenue": "12"}, 1700000005.25)
    assert reader_views.pointer_sql("latecomer", publication) == (
        "insert into latecomer_published.publication\n"
        "select 5, 'latecomer_run_b2', timestamp_millis(1700000000250), timestamp_millis(1700000005250), "
        '\'{"gold_daily_revenue":"12"}\''
    )
    assert reader_views.pointer_table_sql("latecomer", "delta").endswith("using delta")
    assert reader_views.last_publication_sql("latecomer") == (
        "select * from latecomer_published.publication order by publication_seq desc limit 1"
    )
    row = {
        "publication_seq": 5,
        "run_id": "latecomer_run_b2",
        "published_at": datetime.fromtimestamp(1700000000.25, UTC),
        "effective_at": datetime.fromtimestamp(1700000005.25, UTC),
        "versions": '{"gold_daily_revenue":"12"}',
    }
    assert reader_views.parse_pointer([row]) == publication
    assert reader_views.parse_pointer([]) is None


@pytest.mark.parametrize("name", ["bad name", "x;drop", "", "a.b"])
def test_names_that_are_not_identifiers_are_refused(name: str) -> None:
    with pytest.raises(reader_views.ReaderViewError):
        reader_views.delta_view_sql("latecomer", name, "latecomer_gold.t", [Slot(1, "1")])


@pytest.mark.parametrize("version", ["1 or 1=1", "-3", "abc", ""])
def test_versions_that_are_not_numbers_are_refused(version: str) -> None:
    with pytest.raises(reader_views.ReaderViewError):
        reader_views.next_publication(None, "run", {"t": version})


def test_the_lag_setting() -> None:
    assert reader_views.lag_seconds("") == reader_views.DEFAULT_LAG_S
    assert reader_views.lag_seconds("0.5") == 0.5
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(reader_views.ReaderViewError):
            reader_views.lag_seconds(bad)


def test_the_slots_move_once_the_last_publication_is_in_effect() -> None:
    current = Publication(4, "r", 100.0, {}, 105.0)
    assert reader_views.seconds_to_wait_before_slots(None, 100.0) == 0.0
    assert reader_views.seconds_to_wait_before_slots(current, 101.0) == 4.0
    assert reader_views.seconds_to_wait_before_slots(current, 130.0) == 0.0


def timeline(gaps: list[float], spans: list[float], wait: bool = True) -> list[tuple[float, float, int, float]]:
    """Publications as the adapter makes them: (slot moves begin, end, seq, in effect from).
    A build between two takes ``gap`` seconds; the slots of the views move one after
    the other over ``span``; the entry is logged at once and takes effect LAG later."""
    events: list[tuple[float, float, int, float]] = []
    now = 0.0
    for seq, (gap, span) in enumerate(zip(gaps, spans, strict=True), start=1):
        now += gap
        if wait and events:
            now += reader_views.seconds_to_wait_before_slots(Publication(seq - 1, "r", 0.0, {}, events[-1][3]), now)
        begin, now = now, now + span
        events.append((begin, now, seq, now + LAG))
    return events


def read_one_publication(events: list[tuple[float, float, int, float]], at: float, loads: list[float]) -> bool:
    """Whether a query whose timestamp is ``at``, having loaded view ``i`` at ``loads[i]``,
    finds the publication it reads in every view's slots (or reads none yet)."""
    in_effect = [seq for _, _, seq, effective in events if effective <= at]
    if not in_effect:
        return True
    read = in_effect[-1]
    for index, loaded in enumerate(loads):
        moved = [seq for begin, end, seq, _ in events if begin + (end - begin) * (index + 1) / len(loads) <= loaded]
        slots = {moved[-1] - 1, moved[-1]} if moved else set()
        if read not in slots:
            return False
    return True


LAG = 5.0
SCENARIO = {
    "gaps": st.lists(st.floats(0, 20), min_size=2, max_size=6),
    "spans": st.lists(st.floats(0, 2), min_size=6, max_size=6),
    "at": st.floats(0, 150),
    "before": st.lists(st.floats(0, LAG * 0.999), min_size=3, max_size=3),
}


@settings(max_examples=500, deadline=None)
@given(**SCENARIO)
def test_a_query_analysed_within_the_lag_reads_one_publication(
    gaps: list[float], spans: list[float], at: float, before: list[float]
) -> None:
    """A query loads three views at moments of its own, less than LAG before its
    timestamp, in any order: every view's slots hold the publication it reads."""
    events = timeline(gaps, spans[: len(gaps)])
    assert read_one_publication(events, at, [at - offset for offset in before])


def test_without_the_wait_or_the_lag_a_query_can_read_a_mix() -> None:
    """The two rules are what makes it hold: slots moved before the last
    publication took effect, or loaded longer than LAG before the timestamp."""
    rushed = timeline([10.0, 0.0, 0.0], [1.0, 1.0, 1.0], wait=False)
    assert not all(read_one_publication(rushed, at / 10, [at / 10 - 1.0] * 3) for at in range(0, 400))
    events = timeline([10.0, 10.0, 10.0], [1.0, 1.0, 1.0])
    assert not all(read_one_publication(events, at / 10, [at / 10 - 2 * LAG] * 3) for at in range(0, 600))
