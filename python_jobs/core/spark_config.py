"""The one place latecomer's Spark configuration is defined.

The dbt adapter (session targets), the Thrift server command and every
``python_jobs`` entry point build their Spark configuration here, so they all
see the same catalog, warehouse and table format.

Environment variables (all optional):

``LATECOMER_STATE_DIR``
    Folder holding the embedded metastore, the warehouse and logs
    (default: ``<repo>/.latecomer``; git-ignored).
``LATECOMER_SPARK_MASTER``
    Spark master URL (default ``local[2]``); point it at a cluster to run there.
``LATECOMER_WAREHOUSE``
    Warehouse location (default: ``<state dir>/warehouse``); use a shared
    file system or object store URL on a cluster.
``LATECOMER_METASTORE_URI``
    A remote Hive metastore (``thrift://host:9083``) instead of the embedded one.
``LATECOMER_DRIVER_MEMORY``
    Driver memory (default ``4g``).
``LATECOMER_EXECUTOR_MEMORY``, ``LATECOMER_EXECUTOR_CORES``, ``LATECOMER_EXECUTOR_INSTANCES``
    ``spark.executor.memory``, ``spark.executor.cores`` and
    ``spark.executor.instances`` on a cluster (unset: the cluster manager's
    defaults; instances apply to YARN and Kubernetes, not to a standalone master).
``LATECOMER_SHUFFLE_PARTITIONS``
    Shuffle partitions and default parallelism (default ``4``, for two local
    cores; raise it to a few times the cluster's executor cores).
``LATECOMER_DELTA_JARS``
    A folder holding ``delta-spark_2.12`` and ``delta-storage`` jars, for the
    Delta format on machines that cannot reach Maven.

Any other Spark setting (a Kubernetes container image, a YARN queue, object
store credentials, event logs) goes in ``$SPARK_CONF_DIR/spark-defaults.conf``,
which ``spark-submit`` reads when the session starts; the settings made here
take precedence over it.
"""

from __future__ import annotations

import glob
import os
import socket
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[2]
# Cluster resources: set only when their variable is, so a cluster manager's
# own defaults (or spark-defaults.conf) apply otherwise.
EXECUTOR_SETTINGS = {
    "LATECOMER_EXECUTOR_MEMORY": "spark.executor.memory",
    "LATECOMER_EXECUTOR_CORES": "spark.executor.cores",
    "LATECOMER_EXECUTOR_INSTANCES": "spark.executor.instances",
}
TABLE_FORMATS = ("iceberg", "delta")
DELTA_VERSION = "3.3.2"
DELTA_PACKAGE = f"io.delta:delta-spark_2.12:{DELTA_VERSION}"
ICEBERG_RUNTIME_GLOB = "iceberg-spark-runtime-3.5_2.12-*.jar"


class SparkConfigError(RuntimeError):
    """A configuration problem the user can fix; its message says how."""


def state_dir() -> Path:
    """Folder for the embedded metastore, warehouse and logs."""
    return Path(os.environ.get("LATECOMER_STATE_DIR", REPO_ROOT / ".latecomer")).resolve()


def iceberg_runtime_jar() -> str:
    """Path of Iceberg's Spark 3.5 / Scala 2.12 runtime jar shipped on PyPI."""
    try:
        import snowpark_connect_deps_iceberg as iceberg_deps
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SparkConfigError(
            "Iceberg jars missing: install the pinned requirements "
            "(make install), which bring snowpark-connect-deps-iceberg==1.0.2."
        ) from exc
    jar_dir = Path(iceberg_deps.__file__).parent / "jars"
    jars = sorted(glob.glob(str(jar_dir / ICEBERG_RUNTIME_GLOB)))
    if not jars:
        raise SparkConfigError(f"No {ICEBERG_RUNTIME_GLOB} under {jar_dir}.")
    return jars[-1]


def _maven_reachable(timeout_s: float = 3.0) -> bool:
    try:
        with socket.create_connection(("repo1.maven.org", 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def delta_jars() -> dict[str, str]:
    """Spark settings that put Delta Lake's jars on the classpath.

    Fails at once, with the fix, when neither a local jar folder nor Maven
    is available (Spark would otherwise stall resolving packages).
    """
    jar_dir = os.environ.get("LATECOMER_DELTA_JARS")
    if jar_dir:
        jars = sorted(glob.glob(os.path.join(jar_dir, "delta-*.jar")))
        if not any("delta-spark" in Path(jar).name for jar in jars):
            raise SparkConfigError(
                f"LATECOMER_DELTA_JARS={jar_dir} holds no delta-spark_2.12-{DELTA_VERSION}.jar; "
                "copy delta-spark and delta-storage jars there."
            )
        return {"spark.jars": ",".join(jars)}
    ivy_jar = Path.home() / ".ivy2" / "jars" / f"io.delta_delta-spark_2.12-{DELTA_VERSION}.jar"
    if ivy_jar.exists() or _maven_reachable():
        return {"spark.jars.packages": DELTA_PACKAGE}
    raise SparkConfigError(
        "Delta Lake jars are unavailable: Maven Central cannot be reached and "
        "LATECOMER_DELTA_JARS is not set. Download delta-spark_2.12 and "
        f"delta-storage {DELTA_VERSION} jars into a folder and export "
        "LATECOMER_DELTA_JARS=/that/folder, or use the iceberg targets."
    )


def spark_conf(table_format: str = "iceberg", master: str | None = None) -> dict[str, str]:
    """Full Spark configuration for a table format.

    The same dictionary configures an in-process session and the Thrift server.
    """
    if table_format not in TABLE_FORMATS:
        raise SparkConfigError(
            f"Unknown table format {table_format!r}; choose one of {', '.join(TABLE_FORMATS)}."
        )
    state = state_dir()
    warehouse = os.environ.get("LATECOMER_WAREHOUSE", str(state / "warehouse"))
    shuffle_partitions = os.environ.get("LATECOMER_SHUFFLE_PARTITIONS", "4")
    conf = {
        "spark.master": master or os.environ.get("LATECOMER_SPARK_MASTER", "local[2]"),
        "spark.app.name": "latecomer",
        "spark.driver.memory": os.environ.get("LATECOMER_DRIVER_MEMORY", "4g"),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": warehouse,
        "spark.sql.session.timeZone": "UTC",
        # Two local cores: a handful of shuffle partitions beats the default 200.
        "spark.sql.shuffle.partitions": shuffle_partitions,
        "spark.default.parallelism": shuffle_partitions,
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.legacy.timeParserPolicy": "CORRECTED",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state} -Duser.timezone=UTC",
        # Executors on a cluster run in their machines' time zone otherwise.
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }
    conf.update({key: os.environ[env] for env, key in EXECUTOR_SETTINGS.items() if os.environ.get(env)})
    metastore_uri = os.environ.get("LATECOMER_METASTORE_URI")
    if metastore_uri:
        # A metastore service keeps Iceberg's Hive commit locks (the default),
        # which guard commits from concurrent jobs.
        conf["spark.hadoop.hive.metastore.uris"] = metastore_uri
    else:
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true"
        )
        # Without this every Iceberg commit on the embedded metastore waits
        # for a 3-minute Hive lock timeout; one process is its only writer.
        conf["spark.hadoop.iceberg.engine.hive.lock-enabled"] = "false"
    if table_format == "iceberg":
        conf.update(
            {
                "spark.jars": iceberg_runtime_jar(),
                "spark.sql.extensions": (
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
                ),
                "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
                "spark.sql.catalog.spark_catalog.type": "hive",
            }
        )
    else:
        conf.update(delta_jars())
        conf.update(
            {
                "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": (
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog"
                ),
            }
        )
    return conf


def get_spark(table_format: str | None = None, master: str | None = None) -> SparkSession:
    """The process's Spark session, created from :func:`spark_conf` if needed."""
    if SparkContext._active_spark_context is not None:
        # Reuse the running session (dbt runs models on worker threads, where
        # getActiveSession() may not see it).
        return SparkSession.builder.getOrCreate()
    table_format = table_format or os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg")
    state_dir().mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_conf(table_format, master).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
