"""The synthetic history of the benchmark (tooling.synthetic): no Spark."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tooling.synthetic import Scale, generate
from tooling.synthetic.generator import _binomial, _ts_text


def read_lines(paths: list[Path]) -> list[str]:
    return [line for path in paths for line in path.read_text().splitlines()]


def test_same_scale_same_bytes(tmp_path):
    scale = Scale(days=4, events_per_day=300)
    first = generate(scale, tmp_path / "a")
    second = generate(scale, tmp_path / "b")
    assert [b.path.read_bytes() for b in first.history] == [b.path.read_bytes() for b in second.history]
    assert [b.path.read_bytes() for b in first.late] == [b.path.read_bytes() for b in second.late]
    assert generate(Scale(days=4, events_per_day=300, seed=8), tmp_path / "c").stats != first.stats


def test_longer_history_keeps_recent_days_and_the_late_batch(tmp_path):
    short = generate(Scale(days=50, events_per_day=100), tmp_path)
    long = generate(Scale(days=60, events_per_day=100), tmp_path)
    assert short.late_dates == long.late_dates
    assert [b.path.read_bytes() for b in short.late] == [b.path.read_bytes() for b in long.late]
    # A line arrives at most 40 days after its event: the last landing (the
    # last 7 days' arrivals) is the same bytes when both histories reach back
    # 47 days; the first landings differ.
    short_files = [b for b in short.history if b.feed == "events"]
    long_files = {b.path.name: b for b in long.history if b.feed == "events"}
    assert len(short_files) == 2 * 8 and len(long_files) == 2 * 9  # weekly landings, web and mobile
    for batch in short_files[-2:]:
        assert batch.path.read_bytes() == long_files[batch.path.name].path.read_bytes()
    assert short_files[0].path.read_bytes() != long_files[short_files[0].path.name].path.read_bytes()
    # every day but the emptied one (two orders) holds its events_per_day
    assert long.stats["events"] == 59 * 100 + 2 and short.stats["events"] == 49 * 100 + 2


def test_mix_and_landings(tmp_path):
    history = generate(Scale(days=20, events_per_day=2_000), tmp_path)
    stats = history.stats
    events = stats["events"]
    # Each kind of event is there, in about its share.
    assert 0.02 < stats["late"] / events < 0.04
    assert 0.005 < stats["dup_within"] / events < 0.015
    assert stats["very_late"] > 0 and stats["dup_across"] > 0 and stats["null_key"] > 0
    assert stats["corrections"] > 0 and stats["correction_moves"] > 0 and stats["deletions"] > 0
    assert stats["malformed"] >= 1 and stats["id_less"] > 0
    lines = read_lines([b.path for b in history.history if b.feed == "events"])
    assert len(lines) == sum(b.lines for b in history.history if b.feed == "events")
    parsed = [json.loads(line) for line in lines if line.strip() and line.rstrip().endswith("}")]
    assert sum("is_correction" in p for p in parsed) == stats["corrections"]
    assert sum(p.get("is_deleted", False) for p in parsed) == stats["deletions"]
    # The 20 arrival days (2025-12-11 to 30) land in 3 landings, counted back
    # from the last day: 6, 7 and 7 days, each at the midnight after its last
    # day; the customers with the first.
    landings = sorted({b.arrival_ts for b in history.history})
    assert [ts.date().isoformat() for ts in landings] == ["2025-12-17", "2025-12-24", "2025-12-31"]
    assert {ts.time().isoformat() for ts in landings} == {"00:00:00"}
    assert [b.arrival_ts for b in history.history if b.feed == "customers"][0] == landings[0]
    # Landing every week keeps every event inside the 30-day watermark.
    for batch in history.history:
        if batch.feed != "events":
            continue
        for line in batch.path.read_text().splitlines():
            if line.endswith("}") and '"event_ts": "20' in line:
                event_ts = datetime.fromisoformat(json.loads(line)["event_ts"].replace("Z", "+00:00"))
                if event_ts.tzinfo is None:  # a malformed line: no offset
                    continue
                assert timedelta(0) <= batch.arrival_ts - event_ts < timedelta(days=30), line


def test_ts_text_and_binomial():
    assert _ts_text(0, (0, "Z")) == "2024-01-01T00:00:00Z"
    assert _ts_text(3600, (-300, "-05:00")) == "2023-12-31T20:00:00-05:00"
    assert _ts_text(86_399, (330, "+05:30")) == "2024-01-02T05:29:59+05:30"
    assert _binomial(random.random, 100, 0.0) == 0
    rng = random.Random(1)
    total = sum(_binomial(rng.random, 1_000, 0.01) for _ in range(200))
    assert 1_700 < total < 2_300  # mean 2,000


def test_the_late_batch_empties_a_quiet_day(tmp_path):
    scale = Scale(days=30, events_per_day=2_000)
    history = generate(scale, tmp_path)
    day = scale.date_of(scale.emptied_day)
    assert str(day) in history.late_dates and len(history.late_dates) == scale.k + 1

    def on_day(batches):
        parsed = (json.loads(line) for line in read_lines([b.path for b in batches]) if line.rstrip().endswith("}"))
        return [
            p
            for p in parsed
            if "event_ts" in p
            and (ts := datetime.fromisoformat(p["event_ts"].replace("Z", "+00:00"))).tzinfo is not None
            and ts.astimezone(UTC).date() == day
        ]

    # The history: two orders on the day, nothing else lands on it (no
    # correction moves an event there).
    kept = on_day(history.history)
    assert [(p["event_type"], "is_deleted" in p or "is_correction" in p) for p in kept] == [("order_placed", False)] * 2
    # The late batch deletes both, and brings nothing else for the day.
    late = on_day(history.late)
    assert sorted(p["event_id"] for p in late) == sorted(p["event_id"] for p in kept)
    assert all(p.get("is_deleted") for p in late)
