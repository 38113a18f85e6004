"""The statements that warm a new driver JVM: the kinds a build runs, on a few rows.

A new JVM runs its first build at about a new process's speed: it loads the
classes of Spark's planner, the table format and the metastore client, and
compiles the hot ones, as the build goes (docs/warm-driver.md). These
statements take it through the same code first: a partitioned table
created, inserted into, merged with a delete and an update, aggregated into
another by ``CREATE TABLE AS`` and ``INSERT OVERWRITE``, window functions, a
view, a join, a ``DELETE``, listing and describing. They run in a schema of
their own and leave nothing behind.

Two users: the warm driver runs them after each start of its JVM
(:mod:`python_jobs.operations.warm_driver`), and ``make install`` runs them
once to record the classes they load in the class data archive that command
JVMs start from (:mod:`python_jobs.operations.jvm_archive`).
"""

from __future__ import annotations

SCHEMA = "latecomer_warm_up"


def clean(schema: str = SCHEMA) -> list[str]:
    """Drop what the warm-up makes, each object by name: on Iceberg's session
    catalog, ``drop schema ... cascade`` left the tables to be found again in
    a new schema of the same name (as the adapter's ``drop_schema`` says)."""
    return [
        f"drop view if exists {schema}.latest",
        f"drop table if exists {schema}.daily purge",
        f"drop table if exists {schema}.events purge",
        f"drop schema if exists {schema}",
    ]


def statements(table_format: str, schema: str = SCHEMA) -> list[str]:
    """One round: what a leftover round made is dropped first, and what this one makes, last."""
    events, daily = f"{schema}.events", f"{schema}.daily"
    rows = ", ".join(
        f"('e{n}', timestamp'2024-01-0{1 + n % 3} 1{n}:00:00', {n}.25, '{('web', 'mobile')[n % 2]}', {n % 4 == 0})"
        for n in range(8)
    )
    newer = "select id, event_ts + interval 1 hour as event_ts, amount * 2 as amount, source, is_deleted"
    daily_rows = "select to_date(event_ts) as event_date, source, sum(amount) as revenue, count(*) as events"
    return [
        *clean(schema),
        f"create schema {schema}",
        f"create table {events} (id string, event_ts timestamp, amount decimal(18, 2), source string,"
        f" is_deleted boolean) using {table_format} partitioned by (source)",
        f"insert into {events} values {rows}",
        f"merge into {events} t using ({newer} from {events} where amount > 3) s on t.id = s.id"
        " when matched and s.is_deleted then delete when matched then update set * when not matched then insert *",
        f"create table {daily} using {table_format} as {daily_rows} from {events} group by 1, 2",
        f"insert overwrite {daily} select event_date, source, revenue, events from ({daily_rows},"
        f" row_number() over (partition by source order by sum(amount) desc) as rank from {events} group by 1, 2)"
        " where rank < 3",
        f"create or replace view {schema}.latest as select * from (select *, row_number() over"
        f" (partition by id order by event_ts desc) as version from {events}) where version = 1",
        f"select d.source, d.revenue, count(l.id) from {daily} d left join {schema}.latest l"
        " on d.source = l.source and d.event_date = to_date(l.event_ts) group by 1, 2",
        f"delete from {events} where amount < 2",
        f"show table extended in {schema} like '*'",
        f"describe table extended {events}",
        f"show tblproperties {daily}",
        *clean(schema),
    ]
