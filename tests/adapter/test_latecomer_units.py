"""The adapter's own pieces that make the conformance suites pass, without Spark."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import dbt.adapters.latecomer
import pytest
from dbt.adapters.cache import RelationsCache
from dbt.adapters.latecomer import commit_notes, template_cache
from dbt.adapters.latecomer.connections import (
    NO_COLUMNS,
    SessionConnectionWrapper,
    ThriftConnectionWrapper,
    spark_string_literal,
)
from dbt.adapters.latecomer.impl import LatecomerAdapter, default_file_format
from dbt.adapters.latecomer.python_submissions import spark_frame
from dbt.adapters.latecomer.relations import RelationsMixin
from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from dbt.adapters.spark.impl import SparkAdapter
from dbt.adapters.spark.relation import SparkRelation
from dbt_common.exceptions import DbtRuntimeError
from spark_dialect import to_spark

from python_jobs.core import commit_metadata


class NodeConfig(dict):
    """The two things default_file_format reads and writes of a node's config."""


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("web", "'web'"),
        ("it's", "'it\\'s'"),
        ("'69.135.206.194'", "'\\'69.135.206.194\\''"),
        ("back\\slash", "'back\\\\slash'"),
    ],
)
def test_strings_are_spark_string_literals(value: str, literal: str) -> None:
    assert spark_string_literal(value) == literal


def test_a_null_binding_is_null_and_numbers_stay_dbt_sparks() -> None:
    assert SessionConnectionWrapper._fix_binding(None) == "NULL"
    assert SessionConnectionWrapper._fix_binding(2) == 2.0


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"materialized": "table"}, "delta"),
        ({"materialized": "incremental", "file_format": "parquet"}, "parquet"),
        ({"materialized": "view"}, None),
        ({"materialized": "ephemeral"}, None),
        ({"materialized": "seed"}, "delta"),
    ],
)
def test_nodes_writing_tables_default_to_the_targets_format(config: dict[str, Any], expected: str | None) -> None:
    node_config = NodeConfig(config)
    default_file_format(node_config, "delta")
    assert node_config.get("file_format") == expected


def test_a_model_returning_something_else_fails_naming_it() -> None:
    with pytest.raises(DbtRuntimeError, match="returned list"):
        spark_frame(None, [1, 2], "my_model")


def test_postgres_fixture_sql_becomes_spark_statements() -> None:
    statements = to_spark(
        """
        create table {database}.{schema}.seed (id INTEGER, name VARCHAR(50), at TIMESTAMP WITHOUT TIME ZONE, t TEXT);
        -- a comment
        insert into {schema}.seed (id, name, at) values (1, 'x', '2016-04-19 19:30:48'), (2, null, '2016-04-19');
        select md5(id || '-' || updated_at::text), null::timestamp from None.{schema}.seed;
        """,
        "iceberg",
    )
    assert [" ".join(statement.split()) for statement in statements] == [
        "create table {schema}.seed (id INTEGER, name string, at timestamp, t string) using iceberg",
        "-- a comment insert into {schema}.seed (id, name, at) values "
        "(1, 'x', timestamp'2016-04-19 19:30:48'), (2, null, date'2016-04-19')",
        "select md5(id || '-' || cast(updated_at as string)), cast(null as timestamp) from {schema}.seed",
    ]


def test_a_create_as_select_gets_the_table_format() -> None:
    assert to_spark("create table s.fact as select * from s.seed", "delta") == [
        "create table s.fact using delta as select * from s.seed"
    ]


class FakeHiveCursor:
    """A PyHive cursor whose fetch fails as PyHive does on a result without columns, or otherwise."""

    def __init__(self, error: TypeError) -> None:
        self.error = error

    def fetchall(self) -> list[Any]:
        raise self.error


class FakeHiveConnection:
    def __init__(self, error: TypeError) -> None:
        self.error = error

    def cursor(self) -> FakeHiveCursor:
        return FakeHiveCursor(self.error)


def test_a_thrift_statement_without_columns_fetches_no_rows() -> None:
    wrapper = ThriftConnectionWrapper(PyhiveConnectionWrapper(FakeHiveConnection(TypeError(NO_COLUMNS))))
    assert wrapper.cursor().fetchall() == []


def test_other_thrift_fetch_errors_are_raised() -> None:
    wrapper = ThriftConnectionWrapper(PyhiveConnectionWrapper(FakeHiveConnection(TypeError("unsupported operand"))))
    with pytest.raises(TypeError, match="unsupported operand"):
        wrapper.cursor().fetchall()


class SessionConf:
    """The part of a Spark session's ``conf`` commit_notes uses."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class Session:
    def __init__(self) -> None:
        self.conf = SessionConf()


def _carried(spark: Session) -> str | None:
    return spark.conf.values.get(commit_metadata.USER_METADATA)


def test_every_commit_carries_the_run_and_every_note_in_flight() -> None:
    spark = Session()
    commit_notes.clear(spark)
    commit_notes.set_run(spark, "latecomer_run_a")
    assert _carried(spark) == "latecomer_run_a"
    # two models' writes in flight on two threads: a commit of either carries both
    commit_notes.add(spark, "`s_gold`.`gold_daily_revenue`", "f1")
    commit_notes.add(spark, "s_gold.gold_weekly_revenue", "f2")
    carried = _carried(spark)
    assert commit_metadata.run_of_commit(carried) == "latecomer_run_a"
    for table, note in (("s_gold.gold_daily_revenue", "f1"), ("s_gold.gold_weekly_revenue", "f2")):
        assert commit_metadata.note_of_last_commit([{"operation": "MERGE", "userMetadata": carried}], table) == note
    commit_notes.drop(spark, "s_gold.gold_daily_revenue")
    commit_notes.drop(spark, "s_gold.gold_weekly_revenue")
    assert _carried(spark) == "latecomer_run_a"
    # a write that failed leaves its note; the run's end clears it and stops tagging
    commit_notes.add(spark, "s_gold.gold_daily_revenue", "f3")
    commit_notes.clear(spark)
    commit_notes.set_run(spark, None)
    assert _carried(spark) is None


def _available_in_package() -> set[str]:
    """The methods decorated ``@available`` in any class the adapter package defines."""
    names = set()
    for module_info in pkgutil.iter_modules(dbt.adapters.latecomer.__path__):
        module = importlib.import_module(f"{dbt.adapters.latecomer.__name__}.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                names.update(name for name, member in vars(value).items() if getattr(member, "_is_available_", False))
    return names


def test_every_available_method_reaches_jinja() -> None:
    # dbt's adapter wrapper in Jinja answers only the names in _available_,
    # which AdapterMeta collects from the class and its bases' _available_: a
    # mixin that is not of AdapterMeta would lose its methods silently.
    ours = _available_in_package()
    assert ours, "no @available method found in the adapter package"
    assert ours <= LatecomerAdapter._available_, sorted(ours - LatecomerAdapter._available_)
    assert LatecomerAdapter._available_ == SparkAdapter._available_ | ours


class CountingCompile:
    """jinja2.Environment.compile as the cache found it, counting the texts it compiles."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.sources: list[str] = []

    def __call__(self, environment: Any, source: Any, *args: Any) -> Any:
        self.sources.append(source)
        return self.original(environment, source, *args)


@pytest.fixture
def counted_compile(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingCompile]:
    counting = CountingCompile(template_cache._original)
    monkeypatch.setattr(template_cache, "_original", counting)
    template_cache.clear()
    yield counting
    template_cache.clear()


def test_dbt_templates_are_compiled_once_per_text_and_kind(counted_compile: CountingCompile) -> None:
    import jinja2
    from dbt_common.clients.jinja import get_template

    assert jinja2.Environment.compile is template_cache._compile
    text = "{{ a + 1 }}"
    rendered = [get_template(text, {"a": a}).render({"a": a}) for a in (1, 2)]
    native = [get_template(text, {"a": a}, native=True).render({"a": a}) for a in (1, 2)]
    get_template("{{ a | upper }}", {}).render({"a": "x"})
    # Text and native environments generate different code: one compile each.
    assert counted_compile.sources == [text, text, "{{ a | upper }}"]
    assert rendered == ["2", "3"]
    assert native == [2, 3]


def test_a_template_error_is_raised_every_time_and_not_kept(counted_compile: CountingCompile) -> None:
    from dbt_common.clients.jinja import get_template
    from dbt_common.exceptions import CompilationError

    for _ in range(2):
        with pytest.raises(CompilationError, match="unexpected"):
            get_template("{{ a + }}", {})
    assert len(counted_compile.sources) == 2


def test_templates_past_the_limit_go_least_recently_used_first(
    counted_compile: CountingCompile, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dbt_common.clients.jinja import get_template

    monkeypatch.setattr(template_cache, "MAX_ENTRIES", 2)
    for text in ("{{ 1 }}", "{{ 2 }}", "{{ 1 }}", "{{ 3 }}", "{{ 1 }}", "{{ 2 }}"):
        get_template(text, {}).render({})
    # {{ 2 }} went when {{ 3 }} came ({{ 1 }} had been used since).
    assert counted_compile.sources == ["{{ 1 }}", "{{ 2 }}", "{{ 3 }}", "{{ 2 }}"]


def test_a_table_in_the_relation_cache_is_known_without_a_statement() -> None:
    cache = RelationsCache()
    cache.add_schema(None, "s_audit")
    cache.add(SparkRelation.create(schema="s_audit", identifier="gate_log", type="table"))
    cache.add(SparkRelation.create(schema="s_audit", identifier="a_view", type="view"))
    adapter = SimpleNamespace(cache=cache)
    exists = RelationsMixin.cached_table_exists
    assert exists(adapter, "s_audit.gate_log")
    assert exists(adapter, "S_Audit.Gate_Log")  # names as Spark compares them
    assert not exists(adapter, "s_audit.hold_log")  # listed, and not there
    assert not exists(adapter, "s_audit.a_view")  # a view is not the table
    assert not exists(adapter, "s_bronze.gate_log")  # a schema the cache never listed
    assert not exists(adapter, "gate_log")
    assert not exists(adapter, "spark_catalog.s_audit.gate_log")
