"""Which statements of one process run in turn (adapter locks.table_write_lock).

On the embedded metastore two metastore writes at the same moment failed an
Iceberg commit in CI (CommitStateUnknownException from a NullPointerException
in DataNucleus), and two appends to the change manifest lost one append. The
end-to-end checks are the scenario tests, which build with several dbt
threads; these tests pin down which statements take which lock.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from dbt.adapters.latecomer.locks import metastore_write_lock, statement_head, table_write_lock

MANIFEST_APPEND = "insert into demo_audit.gold_change_manifest select 2"
METASTORE_WRITES = [
    "insert into demo_audit.gold_change_manifest select 1",
    "\n    INSERT INTO demo_audit.gold_change_manifest\n    select 1",
    "insert into table `demo_audit`.`gold_change_manifest` values (1)",
    "merge into demo_audit.gold_change_manifest as target using s on false when not matched then insert *",
    "delete from demo_audit.gold_change_manifest where false",
    "-- a comment first\n/* and another */ insert into demo_audit.gold_change_manifest select 1",
]
SCHEMA_WRITES = [
    "create table demo.t as select 1",
    "/* dbt */\ncreate or replace view demo.v as select 1",
    "alter table demo.t set tblproperties ('a' = 'b')",
    "drop table if exists demo.t",
    "call spark_catalog.system.rollback_to_snapshot('demo.t', 1)",
    "insert into demo_audit.publication_gate_log select 1",
]
READS = [
    "select * from demo_audit.gold_change_manifest",
    "-- insert into x\nselect 1",
    "show tables in demo",
    # spill_rows writes files, not a table: the models' compute runs side by side
    "insert overwrite directory '/w/_spill/s/m__spilled' using parquet select 1",
    "INSERT OVERWRITE LOCAL DIRECTORY '/tmp/x' select 1",
    # temporary views are the session's, not the metastore's: a model's view
    # over its spilled rows never waits for another model's long write
    "create or replace temporary view m__spilled using parquet options (path '/w/_spill/s/m__spilled')",
    "/* dbt */ CREATE TEMPORARY VIEW m__dbt_tmp as select 1",
    "create or replace global temp view g as select 1",
]


def test_statement_head_skips_leading_comments():
    assert statement_head("  -- a\n /* b\n c */\n  merge into t") == "merge into t"
    assert statement_head("select '--' as x") == "select '--' as x"


@pytest.mark.parametrize("sql", METASTORE_WRITES + SCHEMA_WRITES)
def test_on_the_embedded_metastore_every_write_takes_one_lock(sql):
    assert table_write_lock(sql, embedded=True) is table_write_lock(MANIFEST_APPEND, embedded=True)


@pytest.mark.parametrize("sql", READS)
def test_reads_take_no_lock(sql):
    for embedded in (True, False):
        assert isinstance(table_write_lock(sql, embedded=embedded), contextlib.nullcontext)


@pytest.mark.parametrize("sql", METASTORE_WRITES)
def test_with_a_metastore_service_row_writes_to_one_table_share_its_lock(sql):
    assert table_write_lock(sql, embedded=False) is table_write_lock(MANIFEST_APPEND, embedded=False)


def test_with_a_metastore_service_other_tables_and_ddl_do_not_share_it():
    manifest = table_write_lock(MANIFEST_APPEND, embedded=False)
    assert table_write_lock("insert into demo_audit.publication_gate_log select 1", embedded=False) is not manifest
    assert isinstance(table_write_lock("create table demo.t as select 1", embedded=False), contextlib.nullcontext)


def test_a_python_models_write_takes_the_embedded_metastores_lock(monkeypatch):
    monkeypatch.delenv("LATECOMER_METASTORE_URI", raising=False)
    assert metastore_write_lock() is table_write_lock(MANIFEST_APPEND)
    monkeypatch.setenv("LATECOMER_METASTORE_URI", "thrift://metastore:9083")
    assert isinstance(metastore_write_lock(), contextlib.nullcontext)


@pytest.mark.parametrize("embedded", [True, False])
def test_two_threads_writing_one_table_never_overlap(embedded):
    inside = []
    overlaps = []

    def write() -> None:
        with table_write_lock("insert into demo_audit.overlap_probe select 1", embedded=embedded):
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
