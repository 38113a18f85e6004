"""The landing contract of python -m python_jobs.ingest."""

from __future__ import annotations

from python_jobs import ingest
from tests.pytest.conftest import Project


def test_ingest_flags_malformed_lines_and_lands_a_file_once(project: Project, write_ndjson, capsys) -> None:
    path = write_ndjson(
        "mixed.ndjson",
        [
            {
                "event_id": "a",
                "event_type": "order_placed",
                "user_id": "u",
                "amount": "12.50",
                "event_ts": "2024-01-15T20:00:00+05:30",
                "coupon": "X",
            },
            "{not json",
            {"event_id": "b", "event_type": "page_view", "user_id": "u"},
            {"event_id": "c", "event_type": "page_view", "user_id": "u", "event_ts": "yesterday"},
            {"event_id": "d", "event_type": "page_view", "user_id": "u", "event_ts": "2024-01-15T20:00:00"},
            {"event_id": "e", "event_type": "teleport", "user_id": "u", "event_ts": "2024-01-15T20:00:00Z"},
            {
                "event_id": "f",
                "event_type": "refund",
                "user_id": "u",
                "amount": "ten",
                "event_ts": "2024-01-15T20:00:00Z",
            },
            {"event_id": "g", "event_type": "order_placed", "user_id": "u", "event_ts": "2024-01-15T20:00:00Z"},
            {"event_id": "h", "event_type": "page_view", "user_id": "u", "event_ts": "2030-01-01T00:00:00Z"},
            "",
        ],
    )
    assert project.ingest("web", path, arrival_ts="2024-01-16T00:00:00Z") == 0
    out = capsys.readouterr().out
    assert "read 10 lines, accepted 1, flagged 8 malformed, skipped 1 blank" in out
    rows = {r.line_number: r for r in project.table("bronze", "bronze_events").collect()}
    assert {n: r.parse_error for n, r in rows.items()} == {
        1: None,
        2: "invalid_json",
        3: "missing_event_ts",
        4: "unparseable_event_ts",
        5: "event_ts_without_offset",
        6: "unknown_event_type",
        7: "invalid_amount",
        8: "missing_amount",
        9: "event_ts_in_future",
    }
    good = rows[1]
    assert str(good.event_ts) == "2024-01-15 14:30:00" and str(good.amount) == "12.50"
    assert '"coupon": "X"' in good.raw_payload and good.arrival_date.isoformat() == "2024-01-16"

    assert project.ingest("web", path, arrival_ts="2024-01-17T00:00:00Z") == 0
    assert "already landed" in capsys.readouterr().out
    assert project.table("bronze", "bronze_events").count() == 9


def test_ingest_rejects_bad_arguments(capsys, tmp_path) -> None:
    assert ingest.main(["--source", "web", "--arrival-ts", "2024-01-16T00:00:00", str(tmp_path)]) == 2
    assert "needs a UTC offset" in capsys.readouterr().err
    assert ingest.main(["--source", "web", str(tmp_path / "missing.ndjson")]) == 2
    assert "no such file" in capsys.readouterr().err
