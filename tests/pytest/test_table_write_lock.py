"""Commits to one table from several dbt threads are serialized (adapter table_write_lock).

On the embedded metastore two threads appending to the change manifest at the
same moment lost one append (seen in CI: a restated model's manifest rows were
missing). The end-to-end check is test_lateness_monitoring's report test, which
reads every restated model's first manifest rows; these tests pin down which
statements take which lock.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from dbt.adapters.latecomer.impl import table_write_lock


@pytest.mark.parametrize(
    "sql",
    [
        "insert into demo_audit.gold_change_manifest select 1",
        "\n    INSERT INTO demo_audit.gold_change_manifest\n    select 1",
        "insert into table `demo_audit`.`gold_change_manifest` values (1)",
        "merge into demo_audit.gold_change_manifest as target using s on false when not matched then insert *",
        "delete from demo_audit.gold_change_manifest where false",
    ],
)
def test_every_row_write_to_one_table_takes_the_same_lock(sql):
    assert table_write_lock(sql) is table_write_lock("insert into demo_audit.gold_change_manifest select 2")


def test_other_tables_and_reads_do_not_share_it():
    manifest = table_write_lock("insert into demo_audit.gold_change_manifest select 1")
    assert table_write_lock("insert into demo_audit.publication_gate_log select 1") is not manifest
    assert isinstance(table_write_lock("select * from demo_audit.gold_change_manifest"), contextlib.nullcontext)
    assert isinstance(table_write_lock("create table demo.t as select 1"), contextlib.nullcontext)


def test_two_threads_writing_one_table_never_overlap():
    inside = []
    overlaps = []

    def write() -> None:
        with table_write_lock("insert into demo_audit.overlap_probe select 1"):
            inside.append(1)
            if len(inside) > 1:
                overlaps.append(1)
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
