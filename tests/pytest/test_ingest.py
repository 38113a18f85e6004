"""The landing contract of python -m python_jobs.landing.ingest."""

from __future__ import annotations

from python_jobs.landing import ingest
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


def _event(event_id: str) -> dict[str, str]:
    return {"event_id": event_id, "event_type": "page_view", "user_id": "u", "event_ts": "2024-01-15T20:00:00Z"}


def test_ingest_numbers_physical_lines_across_splits_and_files(project: Project, write_ndjson, capsys) -> None:
    # Line k of big.ndjson holds event "e<k>", except the blank lines 7, 150
    # (spaces only), 151 and 300: they count as lines but do not land.
    blank = {7: "", 150: "   ", 151: "", 300: ""}
    big = write_ndjson("big.ndjson", [blank.get(k, _event(f"e{k}")) for k in range(1, 301)])
    small = write_ndjson("small.ndjson", ["", _event("s2"), "{broken"])
    split_size = "spark.sql.files.maxPartitionBytes"
    before = project.spark.conf.get(split_size)
    project.spark.conf.set(split_size, "1024")  # big.ndjson (29 kB) is read in ~28 splits
    try:
        assert project.spark.read.text(str(big)).rdd.getNumPartitions() > 10
        assert project.ingest("web", big, small, arrival_ts="2024-01-16T00:00:00Z") == 0
    finally:
        project.spark.conf.set(split_size, before)
    out = capsys.readouterr().out
    assert f"{big}: read 300 lines, accepted 296, flagged 0 malformed, skipped 4 blank" in out
    assert f"{small}: read 3 lines, accepted 1, flagged 1 malformed, skipped 1 blank" in out

    rows = project.table("bronze", "bronze_events").collect()
    big_rows = [r for r in rows if r.source_file.endswith("big.ndjson")]
    assert sorted(r.line_number for r in big_rows) == [k for k in range(1, 301) if k not in blank]
    assert all(r.event_id == f"e{r.line_number}" for r in big_rows)
    assert all(r.bronze_row_id == f"{r.ingestion_id}:{r.line_number}" for r in rows)
    small_rows = {r.line_number: (r.event_id, r.parse_error) for r in rows if r.source_file.endswith("small.ndjson")}
    assert small_rows == {2: ("s2", None), 3: (None, "invalid_json")}

    log = {r.source_file: r for r in project.table("bronze", "bronze_ingestions").collect()}
    assert (log[str(big)].lines_read, log[str(big)].blank_lines, log[str(big)].rows_accepted) == (300, 4, 296)
    assert (log[str(small)].lines_read, log[str(small)].blank_lines, log[str(small)].rows_flagged) == (3, 1, 1)


def test_ingest_lands_the_same_bytes_once_within_one_call(project: Project, write_ndjson, capsys) -> None:
    path = write_ndjson("batch.ndjson", [_event("a"), _event("b")])
    copy = path.with_name("copy.ndjson")
    copy.write_bytes(path.read_bytes())
    assert project.ingest("web", path, path, copy, arrival_ts="2024-01-16T00:00:00Z") == 0
    out = capsys.readouterr().out
    assert "ingest: 1 file(s) landed, 2 already landed; 2 rows accepted, 0 flagged malformed" in out
    assert f"{copy}: same bytes as {path}" in out

    bronze = project.table("bronze", "bronze_events").collect()
    assert sorted((r.line_number, r.event_id) for r in bronze) == [(1, "a"), (2, "b")]
    log = project.table("bronze", "bronze_ingestions").collect()
    assert [(r.source_file, r.lines_read, r.rows_accepted) for r in log] == [(str(path), 2, 2)]
