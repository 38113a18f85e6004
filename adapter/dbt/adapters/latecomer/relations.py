"""Relations, their columns and schemas: dbt-spark's catalog calls, corrected and kept per invocation.

Iceberg tables of a Hive catalog recognised in relation lists, columns kept
for the invocation and forgotten when a statement may change them, column
names compared case-insensitively as Spark does, the catalog's column types
and positions as ``dbt docs generate`` expects them, schemas listed once per
invocation, and the drops that Iceberg's catalog in the session must see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

ICEBERG_TABLE_PROPERTY = "table_type=iceberg"
# The staging columns of a snapshot with a unique key of several columns.
SNAPSHOT_KEY_COLUMN = re.compile(r"dbt_unique_key_\d+")
# Spark 3.5's error class for a schema that does not exist.
SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"
# Memo key prefix of the schemas a database holds (list_schemas).
SCHEMAS_MEMO = "adapter:list_schemas"
# Types `show table extended`'s schema tree names as Spark's internals do,
# by the names `describe` gives them.
TREE_TYPE_NAMES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
# A nested type as that tree names it: without its parts.
NESTED_WITHOUT_PARTS = re.compile(r" (array|map|struct)(,|$)")


def _signature(columns: list[Any]) -> str:
    """Columns as lower-case ``name type`` pairs, types by the names ``describe`` gives them."""
    return ", ".join(
        f"{column.name.lower()} {TREE_TYPE_NAMES.get(column.dtype.lower(), column.dtype.lower())}" for column in columns
    )


class RelationsMixin(metaclass=AdapterMeta):
    """LatecomerAdapter's overrides of dbt-spark's relation, column and schema calls.

    Uses the adapter's ``_columns`` (kept columns), ``_memo`` (``MemoMixin``)
    and ``_session`` (``PublicationMixin``).
    """

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Callable[[Any], Any]) -> list[Any]:
        """dbt-spark's relation list, with Iceberg tables of a Hive catalog recognised.

        Through Iceberg's SparkSessionCatalog, ``show table extended`` reports an
        Iceberg table as ``Provider: hive`` with the table property
        ``table_type=ICEBERG``; dbt-spark only looks for ``Provider: iceberg``.
        Unrecognised, every table-materialized model was dropped (without
        purge, so its files stayed behind) and recreated on each run instead
        of being replaced atomically with its history kept.

        ``show table extended in <schema>`` also lists the session's temporary
        views (namespace ``''``): the ``<model>__dbt_tmp`` views incremental
        runs leave in a long-lived session (the Thrift server, a process that
        runs dbt many times). They belong to no schema, so they are left out;
        cached, they appeared as relations of every schema listed.
        """
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        return [
            relation.incorporate(is_iceberg=True)
            if ICEBERG_TABLE_PROPERTY in (relation.information or "").lower()
            else relation
            for relation in relations
            if relation.schema
        ]

    def get_columns_in_relation(self, relation: Any) -> list[Any]:
        """dbt-spark's columns (a ``describe table extended``), kept for the invocation.

        dbt asks for a relation's columns several times per model (schema-change
        checks, merge column lists); each ask is a round trip to the metastore.
        The entry is dropped when a statement that can change the relation runs
        (see ``execute``).
        """
        key = (get_invocation_id(), relation.render().lower())
        # One get, never a check then a read: another thread may forget the
        # entry in between.
        columns = self._columns.get(key)
        if columns is None:
            columns = super().get_columns_in_relation(relation)
            if not columns:
                return columns
            self._columns[key] = columns
        return list(columns)

    @available
    def columns_signature(self, relation: Any) -> str:
        """``relation``'s columns as lower-case ``name type`` pairs, spelled the same whichever way they were read.

        From the relation cache's ``show table extended`` entry when it holds
        them (no statement), else from ``describe`` (kept for the invocation):
        a table created after the cache was filled, by an on-run-start hook,
        reads the same in that invocation as it will from the cache in the
        next. Empty for a table that does not exist.
        """
        if "\nSchema: " in (getattr(relation, "information", None) or ""):
            columns = self.parse_columns_from_information(relation)
        else:
            columns = self.get_columns_in_relation(relation)
        return _signature(columns)

    @available
    def query_has_columns_of(self, sql: str, relation: Any) -> bool:
        """Whether the query ``sql`` returns exactly ``relation``'s columns:
        the same names and types in the same order, as Spark's plan of the
        query gives them (nothing runs, nothing is created) and as
        ``columns_signature`` spells the relation's.

        A table with a nested column, whose type the relation cache's schema
        tree names without its parts (``array``), is described instead (one
        statement, kept for the invocation). False whenever it cannot tell: on
        a Thrift target (no session of this process), or for a query Spark
        cannot plan. The caller then checks as dbt does, through a staging
        view.
        """
        spark = self._session()
        if spark is None:
            return False
        try:
            # The schema in one call to the JVM, not three per column; PySpark's
            # type names are Spark's catalog names but for a nested field name
            # that needs quoting, which then compares unequal (False: checked as dbt does).
            fields = spark.sql(sql).schema.fields
        except Exception:  # noqa: BLE001 - any failure to plan: the caller's own check will say why
            return False
        planned = ", ".join(f"{field.name.lower()} {field.dataType.simpleString()}" for field in fields)
        cached = self.columns_signature(relation)
        if planned != cached and NESTED_WITHOUT_PARTS.search(cached):
            return planned == _signature(self.get_columns_in_relation(relation))
        return planned == cached

    def get_missing_columns(self, from_relation: Any, to_relation: Any) -> list[Any]:
        """The columns of ``from_relation`` that ``to_relation`` lacks, names compared as Spark does.

        dbt compares the names exactly; Spark's are case-insensitive
        (``spark.sql.caseSensitive`` is off), so a snapshot whose
        ``dbt_valid_to`` is configured as ``TEST_VALID_TO`` found its own
        column missing and failed adding it again (FIELDS_ALREADY_EXISTS). The
        ``dbt_unique_key_<n>`` columns of a snapshot's staging table (a unique
        key of several columns) are never missing: dbt-spark's snapshot
        materialization leaves out only ``dbt_unique_key``, where dbt's own
        leaves out both.
        """
        present = {column.name.lower() for column in self.get_columns_in_relation(to_relation)}
        return [
            column
            for column in self.get_columns_in_relation(from_relation)
            if column.name.lower() not in present and not SNAPSHOT_KEY_COLUMN.fullmatch(column.name.lower())
        ]

    def _get_columns_for_catalog(self, relation: Any) -> Iterator[dict[str, Any]]:
        """A relation's columns for ``dbt docs generate``: Spark SQL's type names, numbered from 1.

        dbt-spark reads them from ``show table extended``'s schema tree, whose
        types are Spark's internal names (``long``, ``integer``) rather than
        the SQL ones a reader writes and ``describe`` shows (``bigint``,
        ``int``), and numbers them from 0 where every other adapter's catalog
        gives the ordinal position (from 1).
        """
        for position, column in enumerate(self.get_columns_in_relation(relation), start=1):
            entry = column.to_column_dict()
            entry["column_name"] = entry.pop("column", None)
            entry["column_type"] = entry.pop("dtype")
            entry["column_index"] = position
            entry["table_database"] = None
            yield entry

    def list_schemas(self, database: str | None) -> list[str]:
        """dbt-spark's schemas (``show databases``), asked once per invocation.

        Before any model runs, dbt asks once for each schema the build writes
        to (seven in this project), each a round trip to the metastore; the
        answers are all the same. Creating or dropping a schema through the
        adapter forgets it.
        """
        ask = super().list_schemas
        return list(self._memo_once(f"{SCHEMAS_MEMO}:{database}", lambda: list(ask(database))))

    def create_schema(self, relation: Any) -> None:
        """dbt-spark's ``create schema if not exists``, unless the schema is among
        those listed in this invocation: the on-run-start hooks ensure the
        schemas of their logs at every build, and each was a statement."""
        schema = (relation.schema or "").lower()
        if schema and schema in {name.lower() for name in self.list_schemas(relation.database)}:
            return
        self._forget_schemas()
        super().create_schema(relation)

    @available
    def cached_table_exists(self, name: str) -> bool:
        """Whether dbt's relation cache holds the table ``<schema>.<table>``, no
        statement asked: false when it does not, or when the cache has not
        listed that schema (the caller then runs its ``create table if not
        exists``). The cache is filled before on-run-start and follows what
        dbt creates and drops."""
        schema, _, identifier = name.lower().rpartition(".")
        if not schema or "." in schema or (None, schema) not in self.cache:
            return False
        return any(
            relation.identifier.lower() == identifier and relation.type == "table"
            for relation in self.cache.get_relations(None, schema)
        )

    def drop_schema(self, relation: Any) -> None:
        """dbt-spark's ``drop schema ... cascade``, after dropping each of its relations on Iceberg.

        The cascade removes the schema's tables from the metastore only:
        Iceberg's catalog in the session goes on finding every table it has
        loaded (a new table of the same name then already exists). Dropped one
        by one (``drop_relation``), they are forgotten by Iceberg's catalog.
        """
        self._forget_schemas()
        if self.config.credentials.table_format == "iceberg":
            for member in self._relations_if_schema_exists(relation):
                self.drop_relation(member)
        super().drop_schema(relation)

    def _relations_if_schema_exists(self, schema_relation: Any) -> list[Any]:
        """The schema's relations; none when the schema does not exist (dbt-spark
        recognises Spark's SCHEMA_NOT_FOUND only in the error's ``msg``, which the
        macro call's error wraps)."""
        try:
            return self.list_relations_without_caching(schema_relation)
        except DbtRuntimeError as error:
            if SCHEMA_NOT_FOUND in str(error):
                return []
            raise

    def _forget_schemas(self) -> None:
        for key in [key for key in self._memo if key[1].startswith(SCHEMAS_MEMO + ":")]:
            self._memo.pop(key, None)

    def drop_relation(self, relation: Any) -> None:
        """dbt's drop, given the cached relation when ``relation`` says nothing of its provider.

        dbt forgets the relation in its cache before the ``drop_relation``
        macro runs, so the macro cannot look it up there; whether a table is
        purged (``latecomer__drop_relation``) depends on its provider, which
        only the cached relation (from ``show table extended``) knows.
        """
        self._columns.clear()
        if relation.information is None:
            relation = next(
                (
                    cached
                    for cached in self.cache.get_relations(relation.database, relation.schema)
                    if cached.identifier == relation.identifier and cached.type == relation.type
                ),
                relation,
            )
        super().drop_relation(relation)

    def rename_relation(self, from_relation: Any, to_relation: Any) -> None:
        self._columns.clear()
        super().rename_relation(from_relation, to_relation)

    def _forget_columns(self, sql: str) -> None:
        text = sql.lower()
        for key in list(self._columns):
            if re.search(r"(?<![\w.])" + re.escape(key[1]) + r"(?![\w])", text):
                self._columns.pop(key, None)
