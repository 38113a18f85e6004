"""dbt-tests-adapter's microbatch suite, and batches whose rows went away.

The latecomer adapter's microbatch strategy replaces each batch's event-time
range exactly (adapter/dbt/include/latecomer/macros/materializations/microbatch.sql).
dbt-spark's runs a dynamic `insert overwrite` of the partitions a batch writes
to, so a batch that writes nothing overwrites nothing and its stale rows stay.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.util import patch_microbatch_end_time, relation_from_name, run_dbt

INPUT_MODEL_SQL = """
{{ config(materialized='table', event_time='event_time') }}
select 1 as id, TIMESTAMP '2020-01-01 00:00:00-0' as event_time
union all
select 2 as id, TIMESTAMP '2020-01-02 00:00:00-0' as event_time
union all
select 3 as id, TIMESTAMP '2020-01-03 00:00:00-0' as event_time
"""
# Neither a unique key nor partitions: the batch's range is what is replaced.
MICROBATCH_MODEL_SQL = """
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='event_time',
          batch_size='day', begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0)) }}
select * from {{ ref('input_model') }}
"""


class TestMicrobatch(BaseMicrobatch):
    pass


class TestMicrobatchEmptiedBatches:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"input_model.sql": INPUT_MODEL_SQL, "microbatch_model.sql": MICROBATCH_MODEL_SQL}

    @staticmethod
    def rows(project, name: str) -> list[tuple[int, str]]:
        relation = relation_from_name(project.adapter, name)
        rows = project.run_sql(f"select id, cast(event_time as date) from {relation} order by id", fetch="all")
        return [(row[0], str(row[1])) for row in rows]

    def test_emptied_batches_are_replaced(self, project) -> None:
        with patch_microbatch_end_time("2020-01-03 13:57:00"):
            run_dbt(["run"])
        assert self.rows(project, "microbatch_model") == [(1, "2020-01-01"), (2, "2020-01-02"), (3, "2020-01-03")]
        input_model = relation_from_name(project.adapter, "input_model")

        # Every event of 2020-01-02 deleted: its batch has no row and must leave none.
        project.run_sql(f"delete from {input_model} where id = 2")
        rerun_batches("2020-01-02", "2020-01-03")
        assert self.rows(project, "microbatch_model") == [(1, "2020-01-01"), (3, "2020-01-03")]

        # The event of 2020-01-03 corrected into 2020-01-01: both days' batches
        # run again; the 3rd's is empty and must leave no row.
        project.run_sql(f"update {input_model} set event_time = TIMESTAMP '2020-01-01 12:00:00-0' where id = 3")
        rerun_batches("2020-01-01", "2020-01-04")
        assert self.rows(project, "microbatch_model") == [(1, "2020-01-01"), (3, "2020-01-01")]


def rerun_batches(start: str, end: str) -> None:
    """The microbatch model's batches from ``start`` to ``end`` run again, as a backfill does."""
    with patch_microbatch_end_time("2020-01-03 13:57:00"):
        run_dbt(["run", "--select", "microbatch_model", "--event-time-start", start, "--event-time-end", end])
