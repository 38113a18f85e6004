"""Two write paths rendered without Spark (tests/pytest/macro_render.py): the SQL they emit, in order.

* ``dbt_spark_get_incremental_sql`` (the adapter include's formats/incremental_sql.sql):
  what an incremental append or merge runs itself, and the SQL it returns
  for dbt to run as the write;
* the ``restated`` materialization (its materializations/restated.sql):
  its steps (skip, spill, count, gate, merge, manifest, record) and the
  statements it runs, on Iceberg and on Delta. What lies outside the file
  (the gate, the manifest, the spill) is a stub that records its call;

and what a node's inputs fingerprint holds (materializations/recomputed.sql).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from tests.pytest.macro_render import PLATFORM, Rendered, load

TARGET = "s_silver.silver_events"
SPILL = "file:/w/_spill/s/silver_events__dbt_tmp__spilled"


@dataclass
class Relation:
    identifier: str

    def __str__(self) -> str:
        return self.identifier


@dataclass
class Memo:
    """The adapter's per-invocation memo, all the write path asks of the adapter."""

    values: dict[str, Any] = field(default_factory=dict)

    def memo_has(self, key: str) -> bool:
        return key in self.values

    def memo_get(self, key: str) -> Any:
        return self.values.get(key)

    def memo_set(self, key: str, value: Any) -> str:
        self.values[key] = value
        return ""

    def get_columns_in_relation(self, relation: Any) -> list[Any]:
        return [type("Column", (), {"name": name}) for name in ("event_id", "Source_System", "event_date")]


@dataclass
class Config:
    values: dict[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass
class Model:
    name: str = "silver_events"
    unique_id: str = "model.latecomer.silver_events"
    language: str = "sql"


def write_path(memo: Memo, staged: bool = False) -> tuple[Rendered, list[str]]:
    """The macros of incremental_sql.sql, and the calls the write path made outside its concern."""
    calls: list[str] = []
    rendered = load(
        f"{PLATFORM}/formats/incremental_sql.sql",
        model=Model(),
        target=type("Target", (), {"schema": "s"}),
        invocation_id="inv-1",
        this=TARGET,
        adapter=memo,
        config=Config({"merge_prune": {"target_column": "event_date", "source_column": "previous_event_date"}}),
        latecomer__sql_string=lambda value: f"'{value}'",
        latecomer__staged_model=lambda: staged,
        latecomer__record_no_rows_written=lambda target: calls.append(f"no rows written to {target}"),
        latecomer__record_written_partitions=lambda target, source: calls.append(f"partitions of {source} in {target}"),
        latecomer__stage_for_publication=lambda target: calls.append(f"{target} staged for publication"),
        get_merge_sql=lambda target, source, unique_key, dest_columns, incremental_predicates: (
            f"merge into {target} using {source} on {' and '.join(incremental_predicates)}"
        ),
        get_insert_into_sql=lambda source, target: f"insert into {target} select * from {source}",
    )
    rendered.answer("set spark.sql.warehouse.dir", [("spark.sql.warehouse.dir", "file:/w/")])
    rendered.answer("select distinct cast(previous_event_date as string)", [("2024-01-05",), ("2024-01-03",)])
    return rendered, calls


def incremental_sql(
    rendered: Rendered, strategy: str = "merge", unique_key: Any = ("event_id", "source_system")
) -> str:
    return rendered.call(
        "dbt_spark_get_incremental_sql",
        strategy,
        Relation("silver_events__dbt_tmp"),
        TARGET,
        Relation("silver_events"),
        unique_key if isinstance(unique_key, str) else list(unique_key),
        None,
    ).strip()


def test_a_merge_spills_its_rows_once_then_counts_then_merges_only_their_partitions() -> None:
    rendered, calls = write_path(Memo())
    rendered.answer("select count(*) from silver_events__dbt_tmp__spilled", [(2,)])
    merge = incremental_sql(rendered)
    assert rendered.statements == [
        ("query", None, "set spark.sql.warehouse.dir"),
        (
            "statement",
            "spill_rows",
            f"insert overwrite directory '{SPILL}' using parquet select * from silver_events__dbt_tmp",
        ),
        (
            "statement",
            "read_spilled_rows",
            f"create or replace temporary view silver_events__dbt_tmp__spilled using parquet options (path '{SPILL}')",
        ),
        ("query", None, "select count(*) from silver_events__dbt_tmp__spilled"),
        (
            "query",
            None,
            "select distinct cast(previous_event_date as string) from silver_events__dbt_tmp__spilled"
            " where previous_event_date is not null",
        ),
    ]
    # the merge reads the spilled rows, and only the partitions their matches live in
    assert merge == (
        f"merge into {TARGET} using silver_events__dbt_tmp__spilled on (DBT_INTERNAL_DEST.event_date ="
        " cast('2024-01-05' as date) or DBT_INTERNAL_DEST.event_date = cast('2024-01-03' as date))"
    )
    assert calls == [f"partitions of silver_events__dbt_tmp__spilled in {TARGET}"]


def test_a_staged_model_stages_its_table_before_the_merge() -> None:
    rendered, calls = write_path(Memo(), staged=True)
    rendered.answer("select count(*)", [(1,)])
    assert incremental_sql(rendered).startswith(f"merge into {TARGET}")
    assert calls == [f"partitions of silver_events__dbt_tmp__spilled in {TARGET}", f"{TARGET} staged for publication"]


@dataclass
class SchemaTable:
    database: str | None
    schema: str
    identifier: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}"


class LogAdapter(Memo):
    """The memo, and the change log's relation when it exists."""

    def __init__(self, log_exists: bool) -> None:
        super().__init__()
        self.log_exists = log_exists

    def get_relation(self, database: str | None, schema: str, identifier: str) -> SchemaTable | None:
        return SchemaTable(database, schema, identifier) if self.log_exists else None


@pytest.mark.parametrize(
    ("log_exists", "logged_until"),
    [(True, "cast('2024-01-09 10:00:00' as timestamp)"), (False, "cast('1900-01-01' as timestamp)")],
)
def test_with_unlogged_the_merge_also_reads_the_partitions_its_log_has_not_taken(
    log_exists: bool, logged_until: str
) -> None:
    rendered, _ = write_path(LogAdapter(log_exists))
    asked: list[tuple[str, str]] = []
    prune = {"target_column": "event_date", "source_column": "previous_event_date"}
    unlogged = {"column": "changed_run_at", "log": "silver_event_changes"}
    rendered.namespace.update(
        config=Config({"merge_prune": {**prune, "unlogged": unlogged}}),
        this=SchemaTable(None, "s_silver", "silver_events"),
        latecomer__high_water_mark=lambda column, relation: (
            asked.append((column, str(relation))) or "cast('2024-01-09 10:00:00' as timestamp)"
        ),
        latecomer__high_water_mark_floor=lambda: "cast('1900-01-01' as timestamp)",
    )
    rendered.answer("select count(*)", [(2,)])
    rendered.answer("select distinct cast(event_date as string)", [("2024-01-03",), ("2024-01-09",)])
    predicates = incremental_sql(rendered).split(" on ", 1)[1]
    # the stored rows changed after the log's high-water mark (every row's without a log)
    assert rendered.statements[-1] == (
        "query",
        None,
        f"select distinct cast(event_date as string) from s_silver.silver_events where changed_run_at > {logged_until}",
    )
    assert asked == ([("changed_run_at", "s_silver.silver_event_changes")] if log_exists else [])
    # their partitions are read beside the new rows' (2024-01-03 named by both, once)
    assert sorted(predicates.count(day) for day in ("2024-01-03", "2024-01-05", "2024-01-09")) == [1, 1, 1]


def test_without_unlogged_the_merge_reads_only_the_new_rows_partitions() -> None:
    rendered, _ = write_path(LogAdapter(True))
    rendered.answer("select count(*)", [(2,)])
    predicates = incremental_sql(rendered).split(" on ", 1)[1]
    assert "2024-01-09" not in predicates
    assert not any("changed_run_at" in sql for _, _, sql in rendered.statements)


@pytest.mark.parametrize("strategy", ["merge", "append"])
def test_no_new_row_writes_nothing_and_says_so(strategy: str) -> None:
    rendered, calls = write_path(Memo())
    rendered.answer("select count(*)", [(0,)])
    assert incremental_sql(rendered, strategy) == "select 'nothing new' as status"
    assert [kind for kind, _, _ in rendered.statements] == ["query", "statement", "statement", "query"]
    assert calls == [f"no rows written to {TARGET}"]


def test_an_empty_merge_still_fails_on_a_unique_key_its_table_lacks() -> None:
    rendered, _ = write_path(Memo())
    rendered.answer("select count(*)", [(0,)])
    raised: list[str] = []
    rendered.namespace["exceptions"] = type(
        "Exceptions", (), {"raise_compiler_error": staticmethod(lambda message: raised.append(message) or "")}
    )
    # the key named differently in case is found, as Spark finds it
    incremental_sql(rendered)
    assert raised == []
    incremental_sql(rendered, unique_key="not_a_column")
    assert raised == [
        f"silver_events: unique_key column(s) not_a_column not found in {TARGET}"
        " (its columns: event_id, source_system, event_date)"
    ]


def test_a_model_that_skips_its_write_runs_no_statement_at_all() -> None:
    memo = Memo()
    rendered, calls = write_path(memo)
    rendered.namespace["model"] = Model()
    # what silver_events does while rendering when nothing arrived (latecomer__skip_write)
    rendered.call("latecomer__skip_write", "no new arrival or release since the last run")
    assert memo.values == {"skip_write:model.latecomer.silver_events": "no new arrival or release since the last run"}
    assert incremental_sql(rendered) == "select 'nothing new' as status"
    assert rendered.statements == []
    assert calls == [f"no rows written to {TARGET}"]


# ------------------------------------------------------------------ restated
GOLD = "s_gold.gold_daily_revenue"
SPILLED = "gold_daily_revenue__restated"
COLUMNS = ["event_date", "source_system", "net_revenue"]


@dataclass
class Table:
    name: str
    is_iceberg: bool = True

    @property
    def identifier(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def incorporate(self, **_: Any) -> Table:
        return self

    def __str__(self) -> str:
        return self.name


@dataclass
class Column:
    name: str


@dataclass
class RestatedAdapter(Memo):
    """What the restated write path asks of the adapter: the memo, columns, the status epoch, Delta's commit notes."""

    steps: list[str] = field(default_factory=list)

    def get_columns_in_relation(self, relation: Any) -> list[Column]:
        return [Column(name) for name in COLUMNS]

    def status_epoch(self, as_of: str, boundaries: list[int]) -> str:
        return f"epoch of {as_of}"

    def note_delta_commits(self, relation: Any, fingerprint: str) -> bool:
        self.steps.append(f"note {fingerprint}")
        return True

    def end_delta_commit_note(self, relation: Any) -> str:
        self.steps.append("end note")
        return ""


def restated(
    table_format: str = "iceberg", stored: str | None = None, exists: bool = True
) -> tuple[Rendered, list[str]]:
    """The restated materialization, every step outside restated.sql a recorded stub."""
    steps: list[str] = []
    versions = iter(["5", "6"])

    def step(name: str, value: Any = "") -> Any:
        steps.append(name)
        return value

    rendered = load(
        f"{PLATFORM}/materializations/restated.sql",
        model=Model(name="gold_daily_revenue", unique_id="model.latecomer.gold_daily_revenue"),
        this=Table(GOLD),
        load_relation=lambda relation: Table(GOLD) if exists else None,
        should_full_refresh=lambda: False,
        config=Config(
            {
                "unique_key": ["event_date", "source_system"],
                "partition_by": ["event_date"],
                "publication_gate": {"measure": "net_revenue"},
                "contract": type("Contract", (), {"enforced": False}),
            }
        ),
        latecomer__partition_column=lambda column: column,
        adapter=RestatedAdapter(steps=steps),
        api=type("Api", (), {"Relation": type("R", (), {"create": staticmethod(lambda **kw: kw["identifier"])})}),
        latecomer__table_properties=lambda relation: {"latecomer.inputs": stored} if stored else {},
        latecomer__current_version=lambda relation, properties=None: next(versions),
        latecomer__versions_table_format=lambda: table_format,
        latecomer__stored_inputs_fingerprint=lambda relation, properties: properties.get("latecomer.inputs"),
        latecomer__inputs_fingerprint=lambda with_as_of=True: "inputs",
        watermark_tier_hours=lambda tier: {"daily_close": 24, "month_end": 168}[tier],
        var=lambda name, default=None: {"live_until_tier": "daily_close", "preliminary_until_tier": "month_end"}[name],
        as_of_given=lambda: "2024-01-21",
        run_started_at="2024-01-21",
        local_md5=lambda text: f"md5({text})",
        backfill_window=lambda: None,
        run_hooks=lambda hooks: "",
        pre_hooks=[],
        post_hooks=[],
        persist_docs=lambda relation, model: "",
        latecomer__record_no_rows_written=lambda relation: step("no rows written"),
        latecomer__spill_rows=lambda relation, sql, view: step("spill", view),
        latecomer__open_holds=lambda: type("Holds", (), {"rows": []}),
        latecomer__publication_gate=lambda rows, target, layout, holds: step("gate", []),
        latecomer__follows_holds=lambda: False,
        latecomer__staged_model=lambda: True,
        latecomer__stage_for_publication=lambda target, properties: step("staged for publication"),
        latecomer__record_written_partitions=lambda target, rows: step("partitions recorded"),
        latecomer__record_change_manifest=lambda rows, target, layout, columns, before, after: step(
            f"manifest {before}->{after}"
        ),
        create_table_as=lambda temporary, relation, sql: f"create table {relation} as {sql}",
    )
    return rendered, steps


def fingerprint(own: str) -> str:
    return f"md5(inputs|self={own}|status_epoch=epoch of 2024-01-21)"


def run_restated(rendered: Rendered) -> Any:
    return rendered.call("materialization_restated_latecomer")


def test_a_restated_model_whose_inputs_did_not_move_runs_no_query() -> None:
    rendered, steps = restated(stored=fingerprint("5"))
    assert run_restated(rendered) == {"relations": [Table(GOLD)]}
    assert rendered.statements == [("result", "main", "inputs unchanged")]
    assert steps == ["no rows written"]


def test_a_restated_write_spills_counts_gates_merges_then_records_what_it_evaluated() -> None:
    rendered, steps = restated(stored=fingerprint("4"))
    rendered.answer(f"select count(*) from {SPILLED}", [(3,)])
    run_restated(rendered)
    assert steps == ["spill", "gate", "staged for publication", "partitions recorded", "manifest 5->6"]
    kinds = [(kind, name) for kind, name, _ in rendered.statements]
    assert kinds == [("query", None), ("statement", "main"), ("statement", "record_inputs_fingerprint")]
    merge, record = rendered.sql("statement")
    assert merge.startswith(f"merge into {GOLD} as target using {SPILLED} as source on target.event_date")
    assert "published_before" not in merge
    # the version the merge made is part of what the next build compares
    assert record == f"alter table {GOLD} set tblproperties ('latecomer.inputs' = '{fingerprint('6')}')"


def test_nothing_to_restate_writes_nothing_but_records_the_evaluation() -> None:
    rendered, steps = restated(stored=fingerprint("4"))
    rendered.answer(f"select count(*) from {SPILLED}", [(0,)])
    run_restated(rendered)
    assert steps == ["spill", "no rows written"]
    assert rendered.names() == ["record_inputs_fingerprint"]
    assert rendered.sql("result") == ["nothing to restate"]


def test_on_delta_the_fingerprint_rides_on_the_write_commit_and_no_property_is_set() -> None:
    delta = "md5(inputs|self=the last commit|status_epoch=epoch of 2024-01-21)"
    rendered, steps = restated("delta")
    rendered.namespace["latecomer__restated_recorded_fingerprint"] = lambda relation, properties: None
    rendered.answer(f"select count(*) from {SPILLED}", [(3,)])
    run_restated(rendered)
    # the note is in flight exactly while the merge commits
    assert steps == ["spill", "gate", f"note {delta}", "staged for publication", "end note", "partitions recorded",
                     "manifest 5->6"]  # fmt: skip
    assert rendered.names() == ["main"]
    # and a build that finds it on the table's last commit skips the model
    rendered, steps = restated("delta")
    rendered.namespace["latecomer__restated_recorded_fingerprint"] = lambda relation, properties: delta
    run_restated(rendered)
    assert steps == ["no rows written"] and rendered.statements == [("result", "main", "inputs unchanged")]


def node(materialized: str, depends_on: tuple[str, ...] = (), checksum: str = "", relation: str = "") -> Any:
    return SimpleNamespace(
        resource_type="model",
        config=SimpleNamespace(materialized=materialized),
        depends_on=SimpleNamespace(nodes=list(depends_on)),
        checksum=SimpleNamespace(checksum=checksum),
        relation_name=relation,
    )


def inputs_fingerprint(view_code: str) -> str:
    """latecomer__inputs_fingerprint of a snapshot reading a view over a source
    and an ephemeral model over a table (local_md5 shows what it hashes)."""
    source = SimpleNamespace(resource_type="source", relation_name="s_bronze.changes")
    graph = SimpleNamespace(
        nodes={
            "model.p.stg_changes": node("view", ("source.p.crm.changes",), view_code, "s_bronze.stg_changes"),
            "model.p.recent": node("ephemeral", ("model.p.silver",), "recent-code"),
            "model.p.silver": node("incremental", relation="s_silver.silver"),
        },
        sources={"source.p.crm.changes": source},
    )
    rendered = load(
        f"{PLATFORM}/materializations/recomputed.sql",
        model=SimpleNamespace(
            name="customer_history",
            checksum=SimpleNamespace(checksum="own-code"),
            config=SimpleNamespace(meta={}),
            depends_on=SimpleNamespace(nodes=["model.p.stg_changes", "model.p.recent"]),
        ),
        graph=graph,
        adapter=SimpleNamespace(project_fingerprint=lambda: "project"),
        tojson=json.dumps,
        current_table_version=lambda relation: {"s_bronze.changes": "7", "s_silver.silver": "3"}[relation],
        local_md5=lambda text: text,
    )
    return rendered.call("latecomer__inputs_fingerprint", with_as_of=False)


def test_an_inputs_fingerprint_holds_the_code_between_a_node_and_its_tables() -> None:
    """The versions of the tables read, and the SQL of the view and ephemeral
    models in between: a view whose SQL changed is not read as before."""
    assert inputs_fingerprint("view-code").split("|") == [
        "code=own-code",
        "vars={}",
        "project=project",
        "model.p.recent=recent-code",
        "model.p.stg_changes=view-code",
        "s_bronze.changes=7",
        "s_silver.silver=3",
    ]
    assert inputs_fingerprint("view-code") != inputs_fingerprint("view-code, edited")


@dataclass
class CatalogReads:
    """The adapter's catalog reads: the answer for each (relation, branch), None where it cannot read."""

    heads: dict[tuple[str, str | None], str | None] = field(default_factory=dict)
    properties: dict[str, dict[str, str] | None] = field(default_factory=dict)
    staged: bool = False

    def iceberg_current_snapshot(self, relation: Any, branch: str | None = None) -> str | None:
        return self.heads.get((str(relation), branch))

    def table_properties(self, relation: Any) -> dict[str, str] | None:
        return self.properties.get(str(relation))

    def is_staged(self, relation: Any) -> bool:
        return self.staged

    def run_branch(self) -> str:
        return "run_x"


def catalog_reads(reads: CatalogReads) -> Rendered:
    """The version and property macros, on Iceberg, with ``reads`` as the adapter."""
    rendered = load(
        f"{PLATFORM}/formats/versions.sql",
        f"{PLATFORM}/materializations/recomputed.sql",
        f"{PLATFORM}/publication/staged_publication.sql",
        f"{PLATFORM}/sql_helpers.sql",
        adapter=reads,
        modules=SimpleNamespace(re=__import__("re")),
        latecomer__versions_table_format=lambda: "iceberg",
    )
    return rendered


def test_a_version_the_catalog_answers_runs_no_statement() -> None:
    rendered = catalog_reads(CatalogReads(heads={("t", None): "123"}))
    assert rendered.call("latecomer__current_version", "t") == "123"
    # a table without a snapshot has no version, as `show tblproperties` said with 'none'
    rendered = catalog_reads(CatalogReads(heads={("t", None): ""}))
    assert rendered.call("latecomer__current_version", "t") is None
    assert rendered.statements == []


def test_a_version_the_catalog_cannot_answer_is_asked_by_statement() -> None:
    rendered = catalog_reads(CatalogReads())
    rendered.answer("show tblproperties t ('current-snapshot-id')", [("current-snapshot-id", "456")])
    assert rendered.call("latecomer__current_version", "t") == "456"
    assert rendered.sql() == ["show tblproperties t ('current-snapshot-id')"]


def test_a_staged_table_reads_its_run_branch_then_main() -> None:
    on_branch = catalog_reads(CatalogReads(heads={("t", "run_x"): "789", ("t", None): "123"}, staged=True))
    assert on_branch.call("latecomer__current_version", "t") == "789"
    # no branch yet (the write was recorded, not committed): main's head
    no_branch = catalog_reads(CatalogReads(heads={("t", "run_x"): "", ("t", None): "123"}, staged=True))
    assert no_branch.call("latecomer__current_version", "t") == "123"
    assert on_branch.statements == no_branch.statements == []
    # the catalog cannot answer: the refs table, then main by statement
    unread = catalog_reads(CatalogReads(staged=True))
    unread.answer("select cast(snapshot_id as string) from t.refs", [])
    unread.answer("show tblproperties t", [("current-snapshot-id", "123")])
    assert unread.call("latecomer__current_version", "t") == "123"
    assert unread.sql() == [
        "select cast(snapshot_id as string) from t.refs where name = 'run_x'",
        "show tblproperties t ('current-snapshot-id')",
    ]


def test_properties_come_from_the_catalog_and_else_by_statement() -> None:
    read = catalog_reads(CatalogReads(properties={"t": {"latecomer.inputs": "f1", "empty": ""}}))
    assert read.call("latecomer__table_property", "t", "latecomer.inputs") == "f1"
    assert read.call("latecomer__table_property", "t", "empty") is None
    assert read.call("latecomer__table_property", "t", "absent") is None
    assert read.call("latecomer__table_properties", "t") == {"latecomer.inputs": "f1", "empty": ""}
    assert read.statements == []
    unread = catalog_reads(CatalogReads())
    unread.answer("show tblproperties t ('absent')", [("absent", "Table t does not have property: absent")])
    unread.answer("show tblproperties t ('latecomer.inputs')", [("latecomer.inputs", "f1")])
    unread.answer("show tblproperties t", [("latecomer.inputs", "f1"), ("format", "iceberg/parquet")])
    assert unread.call("latecomer__table_property", "t", "absent") is None
    assert unread.call("latecomer__table_property", "t", "latecomer.inputs") == "f1"
    assert unread.call("latecomer__table_properties", "t") == {"latecomer.inputs": "f1", "format": "iceberg/parquet"}


@dataclass
class LogTablesAdapter:
    """The adapter as the on-run-start hooks that ensure the logs see it:
    ``cached`` are the tables dbt's relation cache holds."""

    cached: set[str] = field(default_factory=set)
    schemas_created: list[str] = field(default_factory=list)

    def cached_table_exists(self, name: str) -> bool:
        return name in self.cached

    def create_schema(self, relation: Any) -> None:
        self.schemas_created.append(relation.schema)

    def get_relation(self, **kwargs: Any) -> Any:
        return object()  # bronze's tables were landed


# The logs the on-run-start hooks ensure (macros/landing_tables.sql), as their relations render.
LOG_TABLES = {
    "s_bronze.steward_decisions",
    "s_bronze.hold_decisions",
    "s_audit.table_restores",
    "s_audit.publication_gate_log",
    "s_audit.gold_change_manifest",
    "s_audit.publication_hold_log",
}


class LogRelation:
    """api.Relation as the hooks use it: a schema, and a table in it."""

    def __init__(self, schema: str, identifier: str | None = None) -> None:
        self.schema, self.identifier = schema, identifier

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}" if self.identifier else self.schema

    @classmethod
    def create(cls, schema: str, identifier: str | None = None, type: str | None = None) -> LogRelation:
        return cls(schema, identifier)


def log_tables(adapter: LogTablesAdapter) -> Rendered:
    return load(
        "macros/landing_tables.sql",
        f"{PLATFORM}/versions/versioned_tables.sql",
        f"{PLATFORM}/publication/gate.sql",
        f"{PLATFORM}/publication/holds.sql",
        f"{PLATFORM}/publication/change_manifest.sql",
        adapter=adapter,
        api=SimpleNamespace(Relation=LogRelation),
        target=SimpleNamespace(schema="s", table_format="iceberg"),
        flags=SimpleNamespace(WHICH="build"),
        generate_schema_name=lambda name, node: f"s_{name}",
        latecomer__retention_tblproperties=lambda: {},
    )


def created_tables(rendered: Rendered) -> set[str]:
    return {sql.split(" (")[0].removeprefix("create table if not exists ") for _, _, sql in rendered.statements}


def test_the_logs_the_cache_holds_are_not_created_again() -> None:
    """Every build's on-run-start ensured six logs and their schemas, a
    statement each; a log dbt's relation cache holds is now left alone."""
    adapter = LogTablesAdapter()
    rendered = log_tables(adapter)
    rendered.call("ensure_landing_tables")
    rendered.call("ensure_audit_tables")
    assert created_tables(rendered) == LOG_TABLES
    assert all(kind == "statement" for kind, _, _ in rendered.statements)

    adapter = LogTablesAdapter(cached=set(LOG_TABLES))
    rendered = log_tables(adapter)
    rendered.call("ensure_landing_tables")
    rendered.call("ensure_audit_tables")
    assert rendered.statements == []

    # one log dropped since: only it is created
    adapter = LogTablesAdapter(cached=LOG_TABLES - {"s_audit.publication_hold_log"})
    rendered = log_tables(adapter)
    rendered.call("ensure_audit_tables")
    assert created_tables(rendered) == {"s_audit.publication_hold_log"}
