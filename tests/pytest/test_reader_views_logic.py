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

GRACE = 5.0


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


def test_a_delta_view_reads_each_slot_when_the_pointer_names_it() -> None:
    sql = reader_views.delta_view_sql(
        "latecomer", "gold_daily_revenue", "latecomer_gold.gold_daily_revenue", [Slot(4, "11"), Slot(5, "12")]
    )
    pointer = "(select publication_seq from latecomer_published.publication)"
    assert sql == (
        "create or replace view latecomer_published.gold_daily_revenue as\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 11\n"
        f"where case {pointer} when 4 then true when 5 then false"
        f" else raise_error('{reader_views.MOVED_MESSAGE}') end\n"
        "union all\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 12\n"
        f"where {pointer} = 5"
    )


def test_an_iceberg_view_reads_the_tag_of_the_pointers_parity() -> None:
    sql = reader_views.iceberg_view_sql("latecomer", "gold_daily_revenue", "latecomer_gold.gold_daily_revenue")
    pointer = "(select publication_seq % 2 from latecomer_published.publication)"
    assert sql == (
        "create view if not exists latecomer_published.gold_daily_revenue as\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 'latecomer_published_0'\n"
        f"where {pointer} = 0\n"
        "union all\n"
        "select * from latecomer_gold.gold_daily_revenue version as of 'latecomer_published_1'\n"
        f"where {pointer} = 1"
    )
    assert reader_views.tag_sql("latecomer_gold.gold_daily_revenue", 7, "123") == (
        "alter table latecomer_gold.gold_daily_revenue create or replace tag latecomer_published_1 as of version 123"
    )


def test_the_pointer_names_the_publication_in_one_commit() -> None:
    publication = Publication(5, "latecomer_run_b2", 1700000000.25, {"gold_daily_revenue": "12"})
    assert reader_views.pointer_sql("latecomer", publication) == (
        "insert overwrite latecomer_published.publication\n"
        "select 5, 'latecomer_run_b2', timestamp_millis(1700000000250), '{\"gold_daily_revenue\":\"12\"}'"
    )
    assert reader_views.pointer_table_sql("latecomer", "delta").endswith("using delta")
    row = {
        "publication_seq": 5,
        "run_id": "latecomer_run_b2",
        "published_at": datetime.fromtimestamp(1700000000.25, UTC),
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


def test_the_grace_setting() -> None:
    assert reader_views.grace_seconds("") == reader_views.DEFAULT_GRACE_S
    assert reader_views.grace_seconds("0.5") == 0.5
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(reader_views.ReaderViewError):
            reader_views.grace_seconds(bad)


def test_the_slots_move_once_the_grace_has_passed_since_the_pointer_moved() -> None:
    current = Publication(4, "r", 100.0, {})
    assert reader_views.seconds_to_wait_before_slots(None, 100.0, GRACE) == 0.0
    assert reader_views.seconds_to_wait_before_slots(current, 101.0, GRACE) == 4.0
    assert reader_views.seconds_to_wait_before_slots(current, 130.0, GRACE) == 0.0


def timeline(gaps: list[float], rewrite_spans: list[float]) -> tuple[list[tuple[float, int, float]], float]:
    """Publications as the adapter makes them: (rewrite start, seq, pointer move), the views
    rewritten one after the other over the span, the pointer moved ``GRACE`` after the last;
    a build between two publications takes ``gap`` seconds."""
    events, now, current_moved = [], 0.0, None
    for seq, (gap, span) in enumerate(zip(gaps, rewrite_spans, strict=True), start=1):
        now += gap
        if current_moved is not None:
            now += reader_views.seconds_to_wait_before_slots(Publication(seq - 1, "r", current_moved), now, GRACE)
        start = now
        now += span + GRACE
        events.append((start, seq, now))
        current_moved = now
    return events, now


@settings(max_examples=400, deadline=None)
@given(
    gaps=st.lists(st.floats(0, 20), min_size=2, max_size=6),
    spans=st.lists(st.floats(0, 2), min_size=6, max_size=6),
    start=st.floats(0, 100),
    offsets=st.lists(st.floats(0, GRACE * 0.999), min_size=4, max_size=4),
)
def test_a_query_planned_within_the_grace_reads_one_publication(
    gaps: list[float], spans: list[float], start: float, offsets: list[float]
) -> None:
    """A query loads the pointer and three views at moments of its own within GRACE,
    in any order: whatever the pointer names, every view it loaded has that slot."""
    events, _ = timeline(gaps, spans[: len(gaps)])
    views = 3
    pointer_at, *view_at = (start + offset for offset in offsets[: views + 1])

    def pointer(at: float) -> int | None:
        moved = [seq for _, seq, move in events if move <= at]
        return moved[-1] if moved else None

    def view_slots(index: int, at: float) -> set[int]:
        # View `index` of publication seq is rewritten at start + span * (index + 1) / views.
        rewritten = [
            seq for (rewrite, seq, move) in events if rewrite + (move - GRACE - rewrite) * (index + 1) / views <= at
        ]
        if not rewritten:
            return set()
        seq = rewritten[-1]
        return {seq - 1, seq} if seq > 1 else {seq}

    seen = pointer(pointer_at)
    if seen is None:
        return  # nothing published yet: the views do not exist for this query
    for index, at in enumerate(view_at):
        assert seen in view_slots(index, at), (seen, index, at, events)
