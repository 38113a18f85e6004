"""The landing contract of python -m python_jobs.landing.ingest."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from python_jobs.landing import ingest
from tests.pytest.conftest import TEST_FORMAT, Project

# Logged once per build by unsettled_arrival_dates: how many arrival dates the
# unread-file scan of the ledger reads (those whose row counts disagree). On
# Iceberg only: it reads the ledger's file metadata; Delta scans every date.
SCANNED_DATES = (
    "silver_event_arrivals: {} of {} arrival date(s) may hold events files it has not read (row counts); "
    "only those are scanned"
)


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


# Hostile input (docs/guarantees.md): every line lands once, whole or flagged
# with a reason; nothing is half-landed, merged with another line or read twice.


def _bronze(project: Project) -> dict[int, tuple[str | None, str | None]]:
    return {r.line_number: (r.event_id, r.parse_error) for r in project.table("bronze", "bronze_events").collect()}


def test_ingest_flags_a_line_holding_more_than_one_json_value(project: Project, write_ndjson) -> None:
    a, b = json.dumps(_event("a")), json.dumps(_event("b"))
    nested = {**_event("n"), "context": {"page": {"path": "/x}{y"}, "tags": ["}", "{"]}}
    path = write_ndjson(
        "two.ndjson",
        [
            a + b,  # 1: two objects back to back
            a + " " + b,  # 2: separated by a space
            a + "," + b,  # 3: by a comma
            a + " x",  # 4: anything after the object
            a + "]",  # 5
            {**_event("q"), "user_id": 'u"}{"'},  # 6: braces and quotes inside a string: one object
            nested,  # 7: nested objects and arrays: one object
            a + "\t ",  # 8: trailing whitespace only: one object
        ],
    )
    assert project.ingest("web", path, arrival_ts="2024-01-16T00:00:00Z") == 0
    errors = {n: error for n, (_, error) in _bronze(project).items()}
    assert errors == {
        1: "trailing_content",
        2: "trailing_content",
        3: "trailing_content",
        4: "trailing_content",
        5: "trailing_content",
        6: None,
        7: None,
        8: None,
    }


def test_ingest_reads_file_names_literally(project: Project, tmp_path, capsys) -> None:
    # Each name is also a Hadoop glob pattern that matches the decoy beside it.
    names = {
        "a[1].ndjson": "a1.ndjson",
        "b?.ndjson": "bx.ndjson",
        "c*.ndjson": "cz.ndjson",
        "d\\e.ndjson": "de.ndjson",
        # URL syntax: taken as it is, never decoded.
        "e f%41#.ndjson": "e fA#.ndjson",
    }
    files = []
    for n, (name, decoy) in enumerate(names.items()):
        (tmp_path / decoy).write_text(json.dumps(_event(f"decoy{n}")) + "\n")
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(_event(f"own{n}")) + "\n")
    files.append(tmp_path / "{f,g}.ndjson")
    files[-1].write_text(json.dumps(_event("own_braces")) + "\n")
    (tmp_path / "f.ndjson").write_text(json.dumps(_event("decoy_braces")) + "\n")

    assert project.ingest("web", *files, arrival_ts="2024-01-16T00:00:00Z") == 0
    rows = project.table("bronze", "bronze_events").collect()
    assert sorted((r.source_file, r.event_id) for r in rows) == sorted(
        [(str(path), f"own{n}") for n, path in enumerate(files[:-1])] + [(str(files[-1]), "own_braces")]
    )
    # A pattern that names no file is not expanded either.
    assert ingest.main(["--source", "web", str(tmp_path / "*.ndjson")]) == 2
    assert "no such file" in capsys.readouterr().err
    # Names Spark would skip as hidden or Hadoop cannot open: refused before anything lands.
    refused = [tmp_path / name for name in ("_under.ndjson", ".dot.ndjson", "g:h.ndjson")]
    for n, path in enumerate(refused):
        path.write_text(json.dumps(_event(f"refused{n}")) + "\n")
    assert ingest.main(["--source", "web", str(tmp_path / "a1.ndjson"), *map(str, refused)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ingest: error: rename these files, nothing landed: ")
    assert all(str(path) in error for path in refused), error
    assert project.table("bronze", "bronze_events").count() == len(files)


def test_ingest_flags_invalid_utf8_instead_of_merging_ids(project: Project, tmp_path) -> None:
    path = tmp_path / "bytes.ndjson"
    line = '{"event_id": "id-%s", "event_type": "page_view", "user_id": "u", "event_ts": "2024-01-15T20:00:00Z"}\n'
    path.write_bytes(
        (line % "\xff").encode("latin-1")  # 1: a lone byte 0xff
        + (line % "\xfe").encode("latin-1")  # 2: 0xfe, which a lossy decoder makes equal to line 1
        + (line % "\u00e9").encode("utf-8")  # 3: é, valid UTF-8
        + (line % "x").encode()[:-1]
        + b"\xc3\n"  # 4: a truncated two-byte sequence after the object
    )
    assert project.ingest("web", path, arrival_ts="2024-01-16T00:00:00Z") == 0
    query = "select *, hex(cast(raw_payload as binary)) as raw_hex from {schema}_bronze.bronze_events"
    rows = {r.line_number: r for r in project.sql(query)}
    flagged = {n: r.parse_error for n, r in rows.items()}
    assert flagged == {1: "invalid_utf8", 2: "invalid_utf8", 3: None, 4: "invalid_utf8"}
    assert rows[3].event_id == "id-\u00e9"
    # The bytes as they came, in bronze: the two lines stay distinct.
    original = path.read_bytes().split(b"\n")
    assert [bytes.fromhex(rows[n].raw_hex) for n in (1, 2, 4)] == [original[0], original[1], original[3]]


def test_ingest_canonicalises_source_names(project: Project, write_ndjson, capsys) -> None:
    path = write_ndjson("batch.ndjson", [_event("a"), _event("b")])
    assert project.ingest("web", path, arrival_ts="2024-01-16T00:00:00Z") == 0
    capsys.readouterr()
    for spelling in ("WEB", " Web "):
        assert project.ingest(spelling, path, arrival_ts="2024-01-17T00:00:00Z") == 0
        assert "ingest: 0 file(s) landed, 1 already landed" in capsys.readouterr().out
    rows = project.table("bronze", "bronze_events").collect()
    assert sorted((r.source_system, r.event_id) for r in rows) == [("web", "a"), ("web", "b")]
    assert [r.source_system for r in project.table("bronze", "bronze_ingestions").collect()] == ["web"]
    for bad in ("we-b", "w\u00e9b", "web;drop", "", "\u212aey"):
        assert ingest.main(["--source", bad, str(path)]) == 2
        assert "--source" in capsys.readouterr().err


def test_ingest_lands_a_file_named_twice_once(project: Project, write_ndjson, capsys, monkeypatch) -> None:
    path = write_ndjson("batch.ndjson", [_event("a"), _event("b")])
    link = path.with_name("link.ndjson")
    link.symlink_to(path)
    monkeypatch.chdir(path.parent)
    spellings = (path, Path("batch.ndjson"), Path("./batch.ndjson"), link)
    assert project.ingest("web", *spellings, arrival_ts="2024-01-16T00:00:00Z") == 0
    assert "ingest: 1 file(s) landed, 3 already landed; 2 rows accepted" in capsys.readouterr().out
    rows = project.table("bronze", "bronze_events").collect()
    assert sorted((r.line_number, r.event_id) for r in rows) == [(1, "a"), (2, "b")]
    assert project.table("bronze", "bronze_ingestions").count() == 1


def test_state_folders_are_private(spark) -> None:
    state = Path(os.environ["LATECOMER_STATE_DIR"])
    for folder in (state, state / "warehouse"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_an_ingest_stopped_between_its_two_commits_is_completed_not_landed_again(
    project: Project, write_ndjson, capsys, monkeypatch
) -> None:
    path = write_ndjson(
        "half.ndjson",
        [
            {
                "event_id": "a",
                "event_type": "order_placed",
                "user_id": "u",
                "amount": "5.00",
                "event_ts": "2024-01-15T20:00:00Z",
            },
            "{not json",
            "",
        ],
    )
    # A file landed and built before: the arrival ledger exists, so the
    # builds below are incremental.
    first = write_ndjson(
        "first.ndjson",
        [{"event_id": "f", "event_type": "page_view", "user_id": "u", "event_ts": "2024-01-14T20:00:00Z"}],
    )
    assert project.ingest("web", first, arrival_ts="2024-01-15T00:00:00Z") == 0
    project.dbt("build", "--select", "+silver_event_arrivals")
    real_append = ingest.append_rows

    def stop_before_the_log(frame, table, settings) -> None:
        if table.endswith(ingest.INGESTIONS_TABLE):
            raise KeyboardInterrupt("stopped between the bronze commit and the log commit")
        real_append(frame, table, settings)

    monkeypatch.setattr(ingest, "append_rows", stop_before_the_log)
    with pytest.raises(KeyboardInterrupt):
        project.ingest("web", path, arrival_ts="2024-01-16T00:00:00Z")
    monkeypatch.setattr(ingest, "append_rows", real_append)
    assert project.table("bronze", "bronze_events").count() == 3
    assert project.table("bronze", "bronze_ingestions").count() == 1
    # Another file lands (ingested after the stopped call) and is built. The
    # build reads the stopped file's rows too, from a log row it derives from
    # bronze, so bronze stays conserved in the ledger.
    other = write_ndjson(
        "other.ndjson",
        [{"event_id": "b", "event_type": "page_view", "user_id": "u", "event_ts": "2024-01-16T20:00:00Z"}],
    )
    assert project.ingest("web", other, arrival_ts="2024-01-17T00:00:00Z") == 0
    built = project.dbt("build", "--select", "+silver_events")
    statuses = {r.node.name: str(r.status) for r in built.result}  # type: ignore[union-attr]
    assert statuses["assert_bronze_rows_conserved"] == "pass"
    assert any("stopped before its log row" in message for message in project.messages)
    # 01-15 (first) is held in full; 01-16 (the stopped file, 2 rows derived
    # from bronze) and 01-17 (other) are not held at all.
    assert TEST_FORMAT == "delta" or SCANNED_DATES.format(2, 3) in project.messages
    ledger = project.table("silver", "silver_event_arrivals")
    assert sorted(r.source_file.rsplit("/", 1)[-1] for r in ledger.collect()) == [
        "first.ndjson",
        "half.ndjson",
        "half.ndjson",
        "other.ndjson",
    ]
    (derived,) = project.table("bronze", "stg_bronze_ingestions").where("source_file like '%half.ndjson'").collect()
    # From bronze: its last line number (the blank line after it is not in
    # bronze) and the rows there; no checksum until the file lands again.
    assert (derived.lines_read, derived.blank_lines, derived.rows_accepted, derived.rows_flagged) == (2, 0, 1, 1)
    assert derived.file_sha256 is None and derived.arrival_date.isoformat() == "2024-01-16"
    capsys.readouterr()

    # Run again, a day later: the rows stay as they are, the log row is
    # written with the first call's arrival and counts, and replaces the
    # derived one.
    assert project.ingest("web", path, arrival_ts="2024-01-17T00:00:00Z") == 0
    assert "rows were in" in capsys.readouterr().out
    assert project.table("bronze", "bronze_events").count() == 4
    (log,) = project.table("bronze", "bronze_ingestions").where("source_file like '%half.ndjson'").collect()
    assert (log.lines_read, log.blank_lines, log.rows_accepted, log.rows_flagged) == (3, 1, 1, 1)
    assert log.arrival_date.isoformat() == "2024-01-16"
    assert log.ingestion_id == derived.ingestion_id
    half_rows = project.table("bronze", "bronze_events").where(f"ingestion_id = '{log.ingestion_id}'")
    assert half_rows.count() == 2
    # The next builds read nothing again: the ledger holds each row once.
    for _ in range(2):
        project.dbt("build", "--select", "+silver_events")
        assert project.table("silver", "silver_event_arrivals").count() == 4
        assert project.table("bronze", "stg_bronze_ingestions").count() == 3
        # The real log row counts what the derived one did: every date agrees.
        assert TEST_FORMAT == "delta" or SCANNED_DATES.format(0, 3) in project.messages
    assert not any("stopped before its log row" in message for message in project.messages)

    assert project.ingest("web", path, arrival_ts="2024-01-18T00:00:00Z") == 0
    assert "already landed" in capsys.readouterr().out
    assert project.table("bronze", "bronze_ingestions").count() == 3
