"""What a build asks the session's catalog about a table, answered without a statement.

A build asks about the tables behind its models and tests many times: every
data test's fingerprint names the version of each table it reads
(adapter/dbt/include/latecomer/macros/data_tests/passed_inputs.sql), and the
restated and recomputed models read their tables' properties to decide
whether anything they read moved. Asked as ``show tblproperties``, each is a
statement that Spark parses, plans and runs: a build with nothing new on the
sample ran 138 of them among its 198 statements. The catalog those
statements ask is in the driver: loading the table through it answers the
same question, with the same view of the table (Iceberg's table cache when
the session keeps one, fresh metadata when it does not:
python_jobs/core/spark_config.py), in a few calls to the JVM.

Each function returns None when it cannot answer so; the caller then runs
the statement, whose error, if any, names the problem. Delta's last commit,
read from its log, is :func:`python_jobs.core.commit_metadata.last_commit`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

# The properties SHOW TBLPROPERTIES leaves out, as Spark 3.5 does
# (CatalogV2Util.TABLE_RESERVED_PROPERTIES): DESCRIBE shows them.
RESERVED_PROPERTIES = frozenset({"comment", "location", "owner", "provider", "external", "is_managed_location"})
SPARK_SESSION = "org.apache.spark.sql.SparkSession"
# JVM classes and static methods, looked up once per gateway (java_class, java_static).
_LOOKED_UP: dict[tuple[Any, ...], Any] = {}


def java_class(spark: Any, name: str) -> Any:
    """The JVM class ``name`` (fully qualified), found once per gateway.

    py4j resolves ``spark._jvm.org.apache...Class`` with a round trip to the
    JVM for each dotted part, and the reads here run dozens of times a build:
    a table's properties took 47 ms warm on Iceberg, 4 ms with the lookups
    kept and the map read in one call (docs/benchmark.md).
    """
    client = spark._jvm._gateway_client
    key = (client, name)
    if key not in _LOOKED_UP:
        _LOOKED_UP[key] = JavaClass(name, client)
    return _LOOKED_UP[key]


def java_static(spark: Any, class_name: str, method: str) -> Any:
    """The static method ``method`` of the JVM class ``class_name``, found once
    per gateway (py4j asks the JVM what a class's member is at each lookup)."""
    key = (spark._jvm._gateway_client, class_name, method)
    if key not in _LOOKED_UP:
        _LOOKED_UP[key] = getattr(java_class(spark, class_name), method)
    return _LOOKED_UP[key]


def _as_json(spark: Any, value: Any) -> Any:
    """A JVM map (or list) as Python values, in one call to the JVM: py4j
    fetches a map's keys and values one round trip each."""
    key = (spark._jvm._gateway_client, "json")
    if key not in _LOOKED_UP:
        _LOOKED_UP[key] = java_class(spark, "com.fasterxml.jackson.databind.ObjectMapper")()
    return json.loads(_LOOKED_UP[key].writeValueAsString(value))


@contextlib.contextmanager
def _active(spark: Any) -> Iterator[Any]:
    """The session's JVM object, the calling thread's active session meanwhile.

    On a thread without an active session (dbt's worker threads between
    statements), Iceberg's catalog answered that a table was not an Iceberg
    table; with the session made active for the call it answers as the
    statement does (tests/pytest/test_versions.py). The thread's active
    session is put back afterwards.
    """
    before = java_static(spark, SPARK_SESSION, "getActiveSession")()
    java_static(spark, SPARK_SESSION, "setActiveSession")(spark._jsparkSession)
    try:
        yield spark._jsparkSession
    finally:
        if before.isDefined():
            java_static(spark, SPARK_SESSION, "setActiveSession")(before.get())
        else:
            java_static(spark, SPARK_SESSION, "clearActiveSession")()


def iceberg_current_snapshot(spark: Any, table: str, branch: str | None = None) -> str | None:
    """The id of the snapshot at the head of ``table``'s ``branch`` (``main`` when None), as ``show
    tblproperties`` (main) or the ``refs`` metadata table (a branch) gives it; ``""`` when there is none
    (a table without a snapshot yet, a branch it does not have).

    None when the table cannot be read this way (not in the session's catalog,
    not an Iceberg table, Iceberg's classes absent).
    """
    try:
        with _active(spark) as session:
            loaded = java_static(spark, "org.apache.iceberg.spark.Spark3Util", "loadIcebergTable")(session, table)
            snapshot = loaded.currentSnapshot() if branch is None else loaded.snapshot(branch)
    except (Py4JError, PySparkException):
        # PySpark turns the JVM's errors into its own (IllegalArgumentException:
        # not an Iceberg table); py4j's own are left as they are.
        return None
    return "" if snapshot is None else str(snapshot.snapshotId())


def table_properties(spark: Any, table: str) -> dict[str, str] | None:
    """``table``'s properties as ``show tblproperties`` lists them, for a table of the session's catalog
    that a table format serves (``<schema>.<table>``: an Iceberg or Delta table).

    The name is looked up in ``spark_catalog``, the project's only catalog.
    Values come as stored: the statement masks one whose key or value
    matches Spark's redaction patterns (``url``, ``secret``, ``password``,
    ...), and the macros want the value. None for anything else (a view, a
    Hive table, a name with a catalog or without a schema, a table that does
    not exist): SHOW TBLPROPERTIES reads those through Spark's own catalog,
    with its own rules.
    """
    parts = table.replace("`", "").split(".")
    if len(parts) != 2:
        return None
    try:
        with _active(spark) as session:
            namespace = spark.sparkContext._gateway.new_array(java_class(spark, "java.lang.String"), 1)
            namespace[0] = parts[0]
            identifier_of = java_static(spark, "org.apache.spark.sql.connector.catalog.Identifier", "of")
            identifier = identifier_of(namespace, parts[1])
            loaded = session.sessionState().catalogManager().v2SessionCatalog().loadTable(identifier)
            if loaded.getClass().getName() == "org.apache.spark.sql.connector.catalog.V1Table":
                return None
            properties = _as_json(spark, loaded.properties())
    except (Py4JError, PySparkException):
        return None
    return {str(key): str(value) for key, value in properties.items() if key not in RESERVED_PROPERTIES}
