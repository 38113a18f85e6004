"""Table versions without Spark: python_jobs.core.versions and the adapter methods over it.

Expected values are written out by hand. The version log used throughout
(UTC, oldest first) is run 1, run 2, a restore back to run 1's snapshot, run 3:

    111  committed 2024-01-22 10:00:00  created 10:00:00  append
    222  committed 2024-01-22 12:00:00  created 12:00:00  overwrite
    111  committed 2024-01-22 14:00:00  created 10:00:00  restore
    333  committed 2024-01-22 16:00:00  created 16:00:00  overwrite

The macros that run the SQL around these functions are exercised with Spark
by tests/pytest/test_versions.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt_common.clients.agate_helper import table_from_data_flat

from python_jobs.core.versions import partitions, records, restore, retention
from python_jobs.core.versions.partitions import PartitionLayout
from python_jobs.core.versions.records import TableVersion, VersionsError
from python_jobs.core.versions.restore import RestoreRequest
from python_jobs.core.versions.retention import MaintenanceTotals, RetentionBoundary

RUN_1 = TableVersion("111", "2024-01-22 10:00:00.000000", "2024-01-22 10:00:00.000000", "append")
RUN_2 = TableVersion("222", "2024-01-22 12:00:00.000000", "2024-01-22 12:00:00.000000", "overwrite")
RESTORE = TableVersion("111", "2024-01-22 14:00:00.000000", "2024-01-22 10:00:00.000000", "restore")
RUN_3 = TableVersion("333", "2024-01-22 16:00:00.000000", "2024-01-22 16:00:00.000000", "overwrite")
LOG = [RUN_1, RUN_2, RESTORE, RUN_3]
RELATION = "latecomer_gold.gold_daily_revenue"


def as_dicts(entries: list[TableVersion]) -> list[dict[str, str]]:
    """The version list as table_versions() hands it to the adapter."""
    return [entry.as_dict() for entry in entries]


def agate(rows: list[dict]) -> object:
    """An agate table as run_query returns it (dbt's own conversion of cursor rows)."""
    return table_from_data_flat(rows, list(rows[0]) if rows else [])


# ------------------------------------------------------------ time travel


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ("2024-01-22 09:59:59.999999", None),  # before the first commit
        ("2024-01-22 10:00:00.000000", RUN_1),  # exactly at a commit: that version
        ("2024-01-22 11:59:59.999999", RUN_1),
        ("2024-01-22 12:00:00.000000", RUN_2),
        ("2024-01-22T13:00:00+01:00", RUN_2),  # 12:00 UTC
        ("2024-01-22 15:00:00", RESTORE),  # run 1's snapshot, made current again
        ("2024-01-23", RUN_3),
    ],
)
def test_version_current_at(at: str, expected: TableVersion | None) -> None:
    assert records.version_current_at(LOG, at) == expected


def test_version_current_at_reads_aware_datetimes_in_utc() -> None:
    at = datetime(2024, 1, 22, 7, 0, tzinfo=timezone(timedelta(hours=-5)))  # 12:00 UTC
    assert records.version_current_at(LOG, at) == RUN_2


def test_version_current_at_refuses_what_is_no_time() -> None:
    with pytest.raises(VersionsError, match="Cannot read 'yesterday' as a point in time."):
        records.version_current_at(LOG, "yesterday")


def test_version_with_id_takes_the_latest_entry() -> None:
    assert records.version_with_id(LOG, "111") == RESTORE
    assert records.version_with_id(LOG, "333") == RUN_3
    assert records.version_with_id(LOG, "999") is None
    assert records.version_with_id([], "111") is None


RUN_AT = {1: datetime(2024, 1, 22, 10, 0), 2: datetime(2024, 1, 22, 12, 0), 3: datetime(2024, 1, 22, 16, 0)}


def runs(invocation_run: int | None) -> list[dict]:
    """Per version: its newest changed_run_at, and the newest one of the invocation's rows."""
    newest = {"111": RUN_AT[1], "222": RUN_AT[2], "333": RUN_AT[3]}
    # run 1's rows survive in every later version (run 2 and 3 rewrote other rows)
    own = {1: {"111": RUN_AT[1], "222": RUN_AT[1], "333": RUN_AT[1]}, 2: {"222": RUN_AT[2], "333": RUN_AT[2]}}
    rows = own.get(invocation_run, {}) if invocation_run else {}
    return [{"version": v, "newest_run_at": at, "run_at": rows.get(v)} for v, at in newest.items()]


def test_version_left_by_invocation() -> None:
    # run 1 left snapshot 111, which is current again after the restore: the latest entry
    assert records.version_left_by_invocation(LOG, runs(1)) == RESTORE
    assert records.version_left_by_invocation(LOG, runs(2)) == RUN_2
    # an invocation id no retained version carries
    assert records.version_left_by_invocation(LOG, runs(None)) is None
    assert records.version_left_by_invocation([], []) is None


def test_checked_invocation_id() -> None:
    columns = ["event_date", "Invocation_Id", "CHANGED_RUN_AT"]
    assert records.checked_invocation_id("  4f0c-aa_1 ", RELATION, columns) == "4f0c-aa_1"
    with pytest.raises(VersionsError) as error:
        records.checked_invocation_id("x'; drop", RELATION, columns)
    assert str(error.value) == "An invocation id looks like a UUID, got 'x'; drop'"
    with pytest.raises(VersionsError) as error:
        records.checked_invocation_id("abc", RELATION, ["invocation_id"])
    assert str(error.value) == (
        "latecomer_gold.gold_daily_revenue has no invocation_id and changed_run_at columns, so its versions"
        " cannot be mapped to runs; use version or as_of_time instead."
    )


# ---------------------------------------------------------------- history


def test_iceberg_versions_mark_a_snapshot_made_current_again_as_restore() -> None:
    rows = [
        {**RUN_1.as_dict(), "operation": "append"},
        {**RUN_2.as_dict(), "operation": "overwrite"},
        {**RESTORE.as_dict(), "operation": "append"},  # the snapshot's own operation
        {**RUN_3.as_dict(), "operation": "overwrite"},
    ]
    assert records.iceberg_versions(rows) == LOG


def test_delta_versions_oldest_first_in_utc() -> None:
    berlin = timezone(timedelta(hours=1))
    history = [  # DESCRIBE HISTORY: newest first
        {"version": 2, "timestamp": "2024-01-22 12:00:00.000", "operation": "RESTORE"},  # Thrift: a string
        {"version": 1, "timestamp": datetime(2024, 1, 22, 11, 30, tzinfo=berlin), "operation": "MERGE"},
        {"version": 0, "timestamp": datetime(2024, 1, 22, 9, 0, 0, 250000, tzinfo=UTC), "operation": "WRITE"},
    ]
    assert records.delta_versions(history) == [
        TableVersion("0", "2024-01-22 09:00:00.250000", "2024-01-22 09:00:00.250000", "write"),
        TableVersion("1", "2024-01-22 10:30:00.000000", "2024-01-22 10:30:00.000000", "merge"),
        TableVersion("2", "2024-01-22 12:00:00.000", "2024-01-22 12:00:00.000", "restore"),
    ]


def test_changed_versions_skip_versions_that_left_the_partition_as_it_was() -> None:
    times = [f"2024-01-22 1{n}:00:00.000000" for n in range(6)]
    log = [TableVersion(str(n), time, time, "x") for n, time in enumerate(times)]
    fingerprints = [
        {"version": "0", "fingerprint": "empty"},  # before the partition had rows
        {"version": "1", "fingerprint": "a"},
        {"version": "2", "fingerprint": "a"},  # another partition changed
        {"version": "3", "fingerprint": "b"},
        {"version": "4", "fingerprint": "empty"},  # the partition's rows were deleted
        {"version": "5", "fingerprint": "empty"},
    ]
    assert [entry.version for entry in partitions.changed_versions(log, fingerprints)] == ["1", "3", "4"]
    assert partitions.changed_versions(log, [{"version": str(n), "fingerprint": "empty"} for n in range(6)]) == []


@pytest.mark.parametrize(
    ("current", "previous", "delta"),
    [
        ("60.00", "30.00", "+30.00"),
        ("3", "2", "+1"),
        ("25.00", "40.00", "-15.00"),
        ("-5.00", "0.00", "-5.00"),
        ("30.00", "30.00", None),
        ("30.0", "30.00", None),  # equal numbers, as <=> compares them
        ("0.0000001", "0.0000000", "+0.0000001"),  # no exponent, as Spark prints decimals
        ("10.5", "10.25", "+0.25"),  # the scale of the more precise value
        (None, "30.00", None),  # removed
        ("30.00", None, None),  # new
        (None, None, None),
    ],
)
def test_measure_delta(current: str | None, previous: str | None, delta: str | None) -> None:
    assert partitions.measure_delta(current, previous) == delta


def test_partition_layout() -> None:
    columns = [
        ("event_date", "date"),
        ("source_system", "string"),
        ("orders", "bigint"),
        ("Gross_Revenue", "decimal(18,2)"),
        ("share", "double"),
        ("status", "string"),
        ("version", "int"),
        ("restatement_reason", "string"),
        ("changed_run_at", "timestamp"),
    ]
    layout = partitions.partition_layout(RELATION, columns, "EVENT_DATE", ["source_system"])
    assert layout == PartitionLayout(
        keys=("source_system",),
        measures=("orders", "gross_revenue", "share"),
        extras=("status", "version", "restatement_reason"),
    )
    with pytest.raises(VersionsError) as error:
        partitions.partition_layout(RELATION, columns, "event_hour", [])
    assert str(error.value) == "latecomer_gold.gold_daily_revenue has no column event_hour."


LAYOUT = PartitionLayout(keys=("source_system",), measures=("orders", "net_revenue"), extras=("status", "version"))


def state_row(rank: int, source: str, orders: str | None, net: str | None, status: str, version: str) -> dict:
    return {
        "state_rank": rank,
        "source_system": source,
        "orders": orders,
        "net_revenue": net,
        "status": status,
        "version": version,
    }


STATE_ROWS = [
    state_row(0, "web", "2", "30.00", "live", "1"),
    state_row(0, "app", "1", "5.00", "live", "1"),
    state_row(1, "web", "3", "60.00", "preliminary", "2"),  # restated
    state_row(1, "pos", "1", None, "live", "1"),  # new, null measure
    # app removed
]


def test_partition_states_pair_rows_by_key() -> None:
    first, second = partitions.partition_states([RUN_1, RUN_2], STATE_ROWS, LAYOUT)
    assert first.version == RUN_1 and second.version == RUN_2
    assert [row.as_dict(LAYOUT) for row in first.rows] == [
        {
            "is_new": True,
            "is_removed": False,
            "source_system": "app",
            "status": "live",
            "version": "1",
            "orders": "1",
            "orders__delta": None,
            "net_revenue": "5.00",
            "net_revenue__delta": None,
        },
        {
            "is_new": True,
            "is_removed": False,
            "source_system": "web",
            "status": "live",
            "version": "1",
            "orders": "2",
            "orders__delta": None,
            "net_revenue": "30.00",
            "net_revenue__delta": None,
        },
    ]
    assert [row.as_dict(LAYOUT) for row in second.rows] == [  # ordered by key
        {
            "is_new": False,
            "is_removed": True,
            "source_system": "app",
            "status": None,
            "version": None,
            "orders": None,
            "orders__delta": None,
            "net_revenue": None,
            "net_revenue__delta": None,
        },
        {
            "is_new": True,
            "is_removed": False,
            "source_system": "pos",
            "status": "live",
            "version": "1",
            "orders": "1",
            "orders__delta": None,
            "net_revenue": None,
            "net_revenue__delta": None,
        },
        {
            "is_new": False,
            "is_removed": False,
            "source_system": "web",
            "status": "preliminary",
            "version": "2",
            "orders": "3",
            "orders__delta": "+1",
            "net_revenue": "60.00",
            "net_revenue__delta": "+30.00",
        },
    ]


def test_partition_states_nulls_sort_first_and_pair_null_safely() -> None:
    layout = PartitionLayout(keys=("region",), measures=("orders",), extras=())
    rows = [
        {"state_rank": 0, "region": None, "orders": "1"},
        {"state_rank": 1, "region": "eu", "orders": "1"},
        {"state_rank": 1, "region": None, "orders": "4"},
    ]
    _, second = partitions.partition_states([RUN_1, RUN_2], rows, layout)
    assert [(row.key, row.deltas["orders"], row.is_new) for row in second.rows] == [
        ((None,), "+3", False),
        (("eu",), None, True),
    ]


def test_partition_history_report_words_each_state() -> None:
    states = partitions.partition_states([RUN_1, RUN_2], STATE_ROWS, LAYOUT)
    history = partitions.partition_history(LAYOUT, states, table_versions=4)
    assert partitions.partition_history_report(RELATION, "event_date", "2024-01-03", history) == [
        "gold_versions: latecomer_gold.gold_daily_revenue where event_date = 2024-01-03: 2 published version(s)"
        " of its rows among 4 table version(s)",
        "version 111  current from 2024-01-22 10:00:00.000000 UTC  append",
        "    source_system=app  orders=1  net_revenue=5.00  status=live  row_version=1",
        "    source_system=web  orders=2  net_revenue=30.00  status=live  row_version=1",
        "version 222  current from 2024-01-22 12:00:00.000000 UTC  overwrite  (changes since version 111)",
        "    source_system=app  removed",
        "    source_system=pos  orders=1  net_revenue=None  status=live  row_version=1  (new)",
        "    source_system=web  orders=3 (+1)  net_revenue=60.00 (+30.00)  status=preliminary  row_version=2",
    ]


def test_partition_history_report_of_an_empty_state_and_no_history() -> None:
    states = partitions.partition_states([RUN_1], [], LAYOUT)
    history = partitions.partition_history(LAYOUT, states, table_versions=1)
    assert partitions.partition_history_report(RELATION, "event_date", "2024-01-05", history)[1:] == [
        "version 111  current from 2024-01-22 10:00:00.000000 UTC  append",
        "    no rows",
    ]
    nothing = partitions.partition_history(LAYOUT, [], table_versions=0)
    assert nothing == {
        "states": [],
        "keys": ["source_system"],
        "measures": ["orders", "net_revenue"],
        "extras": ["status", "version"],
        "table_versions": 0,
    }
    assert partitions.partition_history_report(RELATION, "event_date", "2024-01-05", nothing) == [
        "gold_versions: latecomer_gold.gold_daily_revenue where event_date = 2024-01-05: 0 published version(s)"
        " of its rows among 0 table version(s)"
    ]


# ---------------------------------------------------------------- restore

# The models restore_table may restore (the macro passes the restated gold models).
ALLOWED = ("gold_daily_revenue", "m")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"model": None},
            "restore_table needs a model: --args '{model: gold_daily_revenue, version: ..., reason: ...}'",
        ),
        ({"model": "  ", "version": "1", "reason": "x"}, "restore_table needs a model"),
        (
            {"model": "m", "version": "1"},
            "restore_table needs a reason (--args '{..., reason: \"why\"}'); it is recorded in table_restores.",
        ),
        ({"model": "m", "version": "1", "reason": " "}, "restore_table needs a reason"),
        (
            {"model": "m", "reason": "x"},
            "restore_table needs exactly one of version, as_of_time or invocation_id, got none",
        ),
        ({"model": "m", "reason": "x", "version": " ", "invocation_id": ""}, "got none"),
        (
            {"model": "m", "reason": "x", "version": 7, "as_of_time": " 2024-01-22 "},
            "exactly one of version, as_of_time or invocation_id, got version=7, as_of_time=2024-01-22",
        ),
    ],
)
def test_restore_request_refuses(arguments: dict, message: str) -> None:
    with pytest.raises(VersionsError) as error:
        restore.restore_request(**arguments, allowed_models=ALLOWED)
    assert message in str(error.value)


def test_restore_request() -> None:
    request = restore.restore_request(
        model="gold_daily_revenue",
        version=" ",
        as_of_time=" 2024-01-22T13:00 ",
        reason="  dedup fix ",
        allowed_models=ALLOWED,
    )
    assert request == RestoreRequest(
        model="gold_daily_revenue",
        reason="dedup fix",
        selector="as_of_time",
        value="2024-01-22T13:00",
        raw_value=" 2024-01-22T13:00 ",
    )
    assert request.text == "as_of_time=2024-01-22T13:00"


KNOWN = (
    "its retained versions, oldest first: 111 (2024-01-22 10:00:00.000000, append); "
    "222 (2024-01-22 12:00:00.000000, overwrite); 111 (2024-01-22 14:00:00.000000, restore); "
    "333 (2024-01-22 16:00:00.000000, overwrite)"
)


def test_restore_target_missing() -> None:
    by_version = restore.restore_request("m", version=" 999", reason="x", allowed_models=ALLOWED)
    assert restore.restore_target_missing(by_version, RELATION, LOG) == (
        f"Unknown version 999 of {RELATION} (never existed or expired); {KNOWN}"
    )
    by_time = restore.restore_request("m", as_of_time="2024-01-01 ", reason="x", allowed_models=ALLOWED)
    assert restore.restore_target_missing(by_time, RELATION, LOG) == (
        f"{RELATION} had no version at 2024-01-01  (or it has expired); {KNOWN}"
    )
    by_run = restore.restore_request("m", invocation_id="abc", reason="x", allowed_models=ALLOWED)
    assert restore.restore_target_missing(by_run, RELATION, []) == (
        f"No retained version of {RELATION} was written by dbt invocation abc"
        " (no row of any retained version carries it as its newest run); its retained versions, oldest first: none"
    )


def test_retained_versions_lists_the_last_ten() -> None:
    log = [TableVersion(str(n), f"t{n}", f"t{n}", "append") for n in range(12)]
    assert restore.retained_versions_text(log) == (
        "its retained versions, oldest first (last 10): " + "; ".join(f"{n} (t{n}, append)" for n in range(2, 12))
    )
    assert restore.retained_versions_text(log[:10]).startswith("its retained versions, oldest first: 0 (t0")


# -------------------------------------------------------------- retention


def test_retention_boundary_cutoff_exactly_at_a_commit() -> None:
    boundary = retention.retention_boundary(LOG, "2024-01-22 12:00:00.000000")
    # run 2 was current at the cutoff; the restore made run 1's snapshot (created 10:00) current again
    assert boundary == RetentionBoundary(expire_before="2024-01-22 10:00:00.000000", protected=(RUN_2, RESTORE, RUN_3))


def test_retention_boundary_between_commits_and_after_the_last() -> None:
    assert retention.retention_boundary(LOG, "2024-01-22 15:00:00.000000") == RetentionBoundary(
        expire_before="2024-01-22 10:00:00.000000", protected=(RESTORE, RUN_3)
    )
    assert retention.retention_boundary(LOG, "2024-01-22 17:00:00.000000") == RetentionBoundary(
        expire_before="2024-01-22 16:00:00.000000", protected=(RUN_3,)
    )
    # a minute before run 3's commit: the restore entry is current, run 1's snapshot stays
    assert retention.retention_boundary(LOG, "2024-01-22 15:59:00.000000").protected == (RESTORE, RUN_3)


def test_retention_boundary_before_the_first_commit_protects_everything() -> None:
    boundary = retention.retention_boundary(LOG, "2024-01-22 09:00:00.000000")
    assert boundary == RetentionBoundary(expire_before="2024-01-22 09:00:00.000000", protected=tuple(LOG))
    assert retention.retention_boundary([], "2024-01-22 09:00:00.000000") == RetentionBoundary(
        expire_before="2024-01-22 09:00:00.000000", protected=()
    )


def test_expiry_outcome() -> None:
    outcome = retention.expiry_outcome(LOG, [RESTORE, RUN_3], protected=(RESTORE, RUN_3))
    assert outcome.expired == ("222",) and outcome.lost == ()
    outcome = retention.expiry_outcome(LOG, [RUN_3], protected=(RUN_2, RESTORE, RUN_3))
    assert outcome.expired == ("111", "222") and outcome.lost == (RUN_2, RESTORE)


def test_properties_to_set() -> None:
    wanted = {"history.expire.max-snapshot-age-ms": "3196800000", "history.expire.min-snapshots-to-keep": "2"}
    current = [("history.expire.min-snapshots-to-keep", 2), ("format-version", "2")]
    assert retention.properties_to_set(wanted, current) == {"history.expire.max-snapshot-age-ms": "3196800000"}
    current.append(("history.expire.max-snapshot-age-ms", "3196800000"))
    assert retention.properties_to_set(wanted, current) == {}


# ------------------------------------------------------------ maintenance

BOUNDARY = retention.retention_boundary(LOG, "2024-01-22 15:00:00.000000")
PROPERTY = ["history.expire.max-snapshot-age-ms"]


def test_table_maintenance() -> None:
    done = retention.table_maintenance(
        MaintenanceTotals(properties=1, rewritten=2),
        RELATION,
        False,
        PROPERTY,
        {"rewritten_files": 3},
        LOG,
        BOUNDARY,
        {"candidates": 1, "deleted_files": 4},
        {"orphan_files": 0},
        versions_after=[RESTORE, RUN_3],
    )
    assert done.line == (
        "    set history.expire.max-snapshot-age-ms; compaction rewrote 3 file(s); expired 1 version(s) created before"
        " 2024-01-22 10:00:00.000000 (4 file(s) deleted); 0 orphan file(s); 2 version(s) inside the horizon kept"
    )
    assert done.totals == MaintenanceTotals(properties=2, rewritten=5, expired=1, deleted=4, orphans=0)


def test_table_maintenance_where_the_format_does_not_say() -> None:
    done = retention.table_maintenance(
        MaintenanceTotals(),
        RELATION,
        False,
        [],
        {"rewritten_files": None},
        LOG,
        BOUNDARY,
        {"candidates": None, "deleted_files": None},
        {"orphan_files": None},
        versions_after=LOG,
    )
    assert done.line == (
        "    compaction rewrote some file(s); expired 0 version(s) created before 2024-01-22 10:00:00.000000"
        " (unreported file(s) deleted); vacuum covered orphan file(s); 2 version(s) inside the horizon kept"
    )
    assert done.totals == MaintenanceTotals()


def test_table_maintenance_dry_run_counts_candidates() -> None:
    done = retention.table_maintenance(
        MaintenanceTotals(expired=2),
        RELATION,
        True,
        [],
        {"rewritten_files": None},
        LOG,
        BOUNDARY,
        {"candidates": 1, "deleted_files": 0},
        {"orphan_files": 5},
    )
    assert done.line == (
        "    would set no properties; would compact; would expire 1 version(s) created before"
        " 2024-01-22 10:00:00.000000; 5 orphan file(s); 2 of 4 version(s) protected"
    )
    assert done.totals == MaintenanceTotals(expired=3, orphans=5)
    delta = retention.table_maintenance(
        MaintenanceTotals(), RELATION, True, PROPERTY, {}, LOG, BOUNDARY, {"candidates": None}, {"orphan_files": None}
    )
    assert delta.line.startswith(
        "    would set history.expire.max-snapshot-age-ms; would compact; would expire unreferenced version(s)"
    )
    assert "; no separate orphan file(s);" in delta.line and delta.totals == MaintenanceTotals(properties=1)


def test_table_maintenance_fails_when_a_protected_version_is_lost() -> None:
    with pytest.raises(VersionsError) as error:
        retention.table_maintenance(
            MaintenanceTotals(), RELATION, False, [], {}, LOG, BOUNDARY, {}, {}, versions_after=[RUN_3]
        )
    assert str(error.value) == (
        "maintain_tables: version 111 of latecomer_gold.gold_daily_revenue (current from 2024-01-22 14:00:00.000000)"
        " is inside the horizon and is no longer readable."
    )


def test_unversioned_table_maintenance() -> None:
    done = retention.unversioned_table_maintenance(MaintenanceTotals(rewritten=1), PROPERTY)
    assert done.line == "    set history.expire.max-snapshot-age-ms; no version yet, nothing else to do"
    assert done.totals == MaintenanceTotals(properties=1, rewritten=1)
    assert retention.unversioned_table_maintenance(MaintenanceTotals(), []).line == (
        "    no version yet, nothing else to do"
    )


def test_maintenance_header_and_summary() -> None:
    cutoff = "2023-12-15 00:00:00.000000"
    assert retention.maintenance_header(True, 3, "iceberg", 888, cutoff) == (
        "maintain_tables (dry run): 3 table(s), iceberg, horizon 888 h: versions current at or after"
        " 2023-12-15 00:00:00.000000 UTC stay readable"
    )
    assert retention.maintenance_header(False, 3, "delta", 888, cutoff, now="2024-01-20 00:00").endswith(
        "UTC stay readable (now = 2024-01-20 00:00)"
    )
    totals = MaintenanceTotals(properties=1, rewritten=2, expired=3, deleted=4, orphans=5)
    assert retention.maintenance_summary(totals, False, 7, cutoff) == (
        "maintain_tables summary: 7 table(s); retention properties set on 1; 2 data file(s) rewritten;"
        " 3 version(s) expired, 4 file(s) deleted; 5 orphan file(s) removed;"
        " nothing current at or after 2023-12-15 00:00:00.000000 UTC was expired."
    )
    assert retention.maintenance_summary(totals, True, 7, cutoff) == (
        "maintain_tables summary (dry run, nothing changed): 7 table(s); retention properties to set on 1;"
        " 2 data file(s) rewritten; 3 version(s) to expire, 4 file(s) deleted; 5 orphan file(s) found;"
        " nothing current at or after 2023-12-15 00:00:00.000000 UTC was expired."
    )


# --------------------------------- the adapter methods, as the macros call them
# They use no adapter state, so they are called unbound (self=None) with what
# Jinja passes: agate tables from run_query, lists of dicts, dbt Columns.


def test_adapter_methods_read_agate_tables() -> None:
    log = as_dicts(LOG)
    fingerprints = agate([{"version": v, "fingerprint": f} for v, f in [("111", "a"), ("222", "b"), ("333", "b")]])
    kept = LatecomerAdapter.changed_versions(None, log, fingerprints)
    # the restore brings run 1's rows back, run 3 run 2's
    assert kept == log

    columns = [
        SimpleNamespace(name=name, dtype=dtype)
        for name, dtype in [
            ("event_date", "date"),
            ("source_system", "string"),
            ("orders", "bigint"),
            ("net_revenue", "decimal(18,2)"),
            ("status", "string"),
            ("version", "int"),
        ]
    ]
    layout = LatecomerAdapter.partition_layout(None, RELATION, columns, "event_date", ["source_system"])
    assert layout == {
        "keys": ["source_system"],
        "measures": ["orders", "net_revenue"],
        "extras": ["status", "version"],
        "error": None,
    }
    assert LatecomerAdapter.partition_layout(None, RELATION, columns, "day", [])["error"] == (
        f"{RELATION} has no column day."
    )
    history = LatecomerAdapter.partition_history(None, layout, kept[:2], agate(STATE_ROWS), 4)
    assert history["states"][1]["rows"][2]["net_revenue__delta"] == "+30.00"
    lines = LatecomerAdapter.partition_history_report(None, RELATION, "event_date", "2024-01-03", history)
    assert lines[-1] == (
        "    source_system=web  orders=3 (+1)  net_revenue=60.00 (+30.00)  status=preliminary  row_version=2"
    )

    by_run = agate(
        [
            {"version": "111", "newest_run_at": RUN_AT[1], "run_at": RUN_AT[1]},
            {"version": "222", "newest_run_at": RUN_AT[2], "run_at": None},
        ]
    )
    assert LatecomerAdapter.version_left_by_invocation(None, log, by_run) == RESTORE.as_dict()
    assert LatecomerAdapter.version_current_at(None, log, "2024-01-22 12:00:00.000000") == RUN_2.as_dict()
    assert LatecomerAdapter.version_with_id(None, log, "999") is None
    assert LatecomerAdapter.retention_boundary(None, log, "2024-01-22 17:00:00.000000") == {
        "expire_before": "2024-01-22 16:00:00.000000",
        "protected": [RUN_3.as_dict()],
    }
    properties = agate([{"key": "history.expire.min-snapshots-to-keep", "value": "2"}])
    assert LatecomerAdapter.retention_properties_to_set(
        None, {"history.expire.min-snapshots-to-keep": "2", "x": "1"}, properties
    ) == {"x": "1"}


def test_adapter_methods_return_errors_as_text() -> None:
    assert LatecomerAdapter.restore_request(None, "m", None, None, None, "x", ALLOWED)["error"].startswith(
        "restore_table needs exactly one of"
    )
    request = LatecomerAdapter.restore_request(None, "m", 999, None, None, "x", ALLOWED)
    assert request["error"] is None and request["text"] == "version=999"
    assert LatecomerAdapter.restore_target_missing(None, request, RELATION, []).startswith(
        f"Unknown version 999 of {RELATION}"
    )
    assert LatecomerAdapter.invocation_lookup(None, RELATION, "a b", [])["error"] == (
        "An invocation id looks like a UUID, got 'a b'"
    )
    assert LatecomerAdapter.invocation_lookup(None, RELATION, "ab", ["invocation_id", "changed_run_at"]) == {
        "invocation_id": "ab",
        "error": None,
    }


def test_adapter_table_maintenance_keeps_running_totals() -> None:
    totals: dict = {}
    log = as_dicts(LOG)
    boundary = LatecomerAdapter.retention_boundary(None, log, "2024-01-22 15:00:00.000000")
    first = LatecomerAdapter.table_maintenance(None, totals, RELATION, False, PROPERTY)
    assert first == {
        "line": "    set history.expire.max-snapshot-age-ms; no version yet, nothing else to do",
        "totals": {"properties": 1, "rewritten": 0, "expired": 0, "deleted": 0, "orphans": 0},
        "error": None,
    }
    totals.update(first["totals"])
    second = LatecomerAdapter.table_maintenance(
        None,
        totals,
        RELATION,
        False,
        [],
        {"rewritten_files": 2},
        log,
        boundary,
        {"candidates": 1, "deleted_files": 3},
        {"orphan_files": 1},
        as_dicts([RESTORE, RUN_3]),
    )
    assert second["totals"] == {"properties": 1, "rewritten": 2, "expired": 1, "deleted": 3, "orphans": 1}
    lost = LatecomerAdapter.table_maintenance(
        None, totals, RELATION, False, [], {}, log, boundary, {}, {}, as_dicts([RUN_3])
    )
    assert lost["error"].startswith("maintain_tables: version 111 of")
