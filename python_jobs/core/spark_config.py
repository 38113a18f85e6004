"""The one place latecomer's Spark configuration is defined.

The dbt adapter (session targets), the Thrift server command and every
``python_jobs`` entry point build their Spark configuration here, so they all
see the same catalog, warehouse and table format.

Environment variables (all optional):

``LATECOMER_STATE_DIR``
    Folder holding the embedded metastore, the warehouse, Hive's session
    folders and logs (default: ``<repo>/.latecomer``; git-ignored). Created
    with mode 0700, like a local warehouse and every missing parent folder.
``LATECOMER_SPARK_MASTER``
    Spark master URL (default ``local[2]``); point it at a cluster to run there.
``LATECOMER_WAREHOUSE``
    Warehouse location (default: ``<state dir>/warehouse``); use a shared
    file system or object store URL on a cluster.
``LATECOMER_METASTORE_URI``
    A remote Hive metastore (``thrift://host:9083``) instead of the embedded
    one, which several processes share (``python -m
    python_jobs.operations.metastore start`` runs one on PostgreSQL and
    prints the value; docs/shared-catalog.md).
``LATECOMER_DRIVER_MEMORY``
    Driver memory (default ``4g``).
``LATECOMER_JVM_PROFILE``
    The driver JVM's options (``JVM_PROFILES``): ``job`` for a command's
    session (a dbt build, an ingest), ``short`` for commands over little data
    that end within minutes (CI, the sample; the test suite's subprocesses
    use it), or ``server``, the default for the Thrift server. Unset, a
    command's session on a local master takes ``short`` while its local
    warehouse holds less than ``SHORT_STORE_BYTES``, else ``job``
    (:func:`command_profile`).
``LATECOMER_CODEGEN``
    How Spark evaluates expressions (``CODEGEN_MODES``): ``compiled``, the
    default, generates and compiles Java code for each query's stages and
    expressions; ``interpreted`` evaluates them as they are, quicker for a
    command's session over a few hundred rows. The Thrift server always
    compiles (:func:`codegen_mode`).
``LATECOMER_JAVA_OPTIONS``
    More options for the driver JVM, after the profile's (later options win).
``LATECOMER_EXECUTOR_MEMORY``, ``LATECOMER_EXECUTOR_CORES``, ``LATECOMER_EXECUTOR_INSTANCES``
    ``spark.executor.memory``, ``spark.executor.cores`` and
    ``spark.executor.instances`` on a cluster (unset: the cluster manager's
    defaults; instances apply to YARN and Kubernetes, not to a standalone master).
``LATECOMER_SHUFFLE_PARTITIONS``
    Shuffle partitions and default parallelism (default ``4``, for two local
    cores; raise it to a few times the cluster's executor cores).
``LATECOMER_JARS_DIR``
    The folder holding the table formats' jars (:data:`JARS`; default:
    ``<repo>/jvm/jars``, git-ignored), which ``make install`` fills from the
    Maven registry (``python -m python_jobs.operations.fetch_jars``); on a
    machine that cannot reach it, put the jars there by hand.

The jars Spark loads for a table format (Iceberg's Spark runtime; Delta's
``delta-spark`` and ``delta-storage``) are Maven artifacts of a pinned version
and sha256 (:data:`JARS`), fetched and checked once by ``make install``; a
session only finds them in the jar folder, by name, and fails at once,
naming the folder and the files, when one is missing. Their other runtime
dependencies (Scala's library, ANTLR 4's runtime) are among PySpark's jars.

On a local master, ``file:`` paths go through
``latecomer.hadoop.ForklessLocalFileSystem`` (``jvm/src``; ``make install``
builds its jar, and ``spark.driver.extraClassPath`` is set to it): Hadoop's
local file system, which sets a new file's mode inside the JVM instead of
starting a ``chmod`` process for it. Without the jar (no JDK at install),
Hadoop's own is used.

A command's driver JVM (a local master, the ``job`` or ``short`` profile) maps the classes
it loads at start-up from a class data archive (``-XX:SharedArchiveFile``),
which ``make install`` writes (``python -m python_jobs.operations.jvm_archive``)
from a short warm-up session with the same class path: the JVM then verifies
and parses none of them, and a session is ready to query about 5 s sooner.
Without the archive, or when the class path differs from the one it was
written with (the JVM then says so once), classes load as usual.

Any other Spark setting (a Kubernetes container image, a YARN queue, object
store credentials, event logs) goes in ``$SPARK_CONF_DIR/spark-defaults.conf``,
which ``spark-submit`` reads when the session starts; the settings made here
take precedence over it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark import SparkContext
from pyspark.sql import SparkSession

from python_jobs.core import warm_driver

# One thread starts (or attaches) the process's session; others wait for it.
_STARTING = threading.Lock()

REPO_ROOT = Path(__file__).resolve().parents[2]
# Cluster resources: set only when their variable is, so a cluster manager's
# own defaults (or spark-defaults.conf) apply otherwise.
EXECUTOR_SETTINGS = {
    "LATECOMER_EXECUTOR_MEMORY": "spark.executor.memory",
    "LATECOMER_EXECUTOR_CORES": "spark.executor.cores",
    "LATECOMER_EXECUTOR_INSTANCES": "spark.executor.instances",
}
TABLE_FORMATS = ("iceberg", "delta")
# Hive's session folders (local scratch space, downloaded resources) under the
# state dir, instead of /tmp, where Hive creates them readable by everyone:
# setting -> (folder in the state dir, what Hive adds below it).
HIVE_SESSION_DIRS = {
    "spark.hadoop.hive.exec.local.scratchdir": ("hive_scratch", ""),
    "spark.hadoop.hive.downloaded.resources.dir": ("hive_resources", "/${hive.session.id}_resources"),
}
# Driver JVM options by how long the process lives (LATECOMER_JVM_PROFILE).
#   job     a command's session (a dbt build, an ingest): the throughput
#           collector, whose pauses a batch job does not mind, instead of G1,
#           whose concurrent threads compete with the work for two cores (an
#           incremental build of the benchmark: JVM CPU 79 s instead of 100 s;
#           docs/benchmark.md, "Driver JVM options").
#   short   a command over little data that ends within a few minutes (CI,
#           the sample, fault drills): job's collector, and the JIT's quick
#           compiler only. C2, the optimising compiler, spends CPU on hot
#           methods that a short process ends before it repays: the three
#           faults of test_faults.py, four such processes, took 168 s instead
#           of 234 s. A long or large build runs slower with it (the
#           benchmark's full refresh 275 s instead of 150 s: docs/benchmark.md),
#           so it is never a default. C1 alone fills the JVM's default 48 MB
#           code cache, hence 512 MB.
#   server  a long-lived process serving queries (the Thrift server): the
#           JVM's defaults.
JVM_PROFILES = {
    "job": ("-XX:+UseParallelGC",),
    "short": ("-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=512m"),
    "server": (),
}
# How a session evaluates expressions (LATECOMER_CODEGEN, codegen_mode):
#   compiled     Spark's default: each stage of a query is generated as Java
#                code and compiled (whole-stage code generation), as is each
#                projection and predicate a task evaluates.
#   interpreted  neither: the stages run operator by operator and the
#                expressions are evaluated as trees. Over the sample's few
#                hundred rows a build spends more generating code than
#                running it: test_late_arrival_sample.py's builds took
#                17.6 s each compiled and 12.6 s interpreted on Iceberg,
#                29.9 s and 17.1 s on Delta (docs/table-formats.md). Not a
#                default: the 45-day schedule test's builds, over thousands
#                of events, were not faster, and a Dataset decoded into Java
#                objects fails in it (spark.catalog.listTables: "argument
#                type mismatch"). The suite runs its sessions with it but
#                for the test files over thousands of events; the Thrift
#                server always compiles.
# Each mode's settings (compiled: Spark's defaults). Both are read at each
# query, so a running session may switch (the test suite does, per file).
CODEGEN_SETTINGS = {
    "compiled": {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"},
    "interpreted": {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"},
}
CODEGEN_MODES = tuple(CODEGEN_SETTINGS)
# Profiles of a command's session, whose JVM has the class path the archive was written with.
COMMAND_PROFILES = ("job", "short")
# Below this many bytes in a local warehouse a command's session takes the
# `short` profile (command_profile). On the sample's store (12 MB) a `dbt
# build` from the shell with nothing new took 29.5 s with `short` and 39.9 s
# with `job`; at 60 days x 50,000 events a day (hundreds of MB) a full refresh
# took 275 s with `short` and 150 s with `job` (docs/benchmark.md).
SHORT_STORE_BYTES = 64 * 1024 * 1024
MAVEN_REPOSITORY = "https://repo1.maven.org/maven2"
DEFAULT_JARS_DIR = REPO_ROOT / "jvm" / "jars"
# Hadoop's local file system without a chmod process per file written (the
# module's docstring); built by `make install`.
FORKLESS_FS_JAR = REPO_ROOT / "jvm" / "build" / "latecomer-hadoop.jar"
FORKLESS_FS_CLASS = "latecomer.hadoop.ForklessLocalFileSystem"
# The class data archive of a command's driver JVM (the module's docstring).
JVM_ARCHIVE = REPO_ROOT / "jvm" / "build" / "latecomer-driver.jsa"


class SparkConfigError(RuntimeError):
    """A configuration problem the user can fix; its message says how."""


@dataclass(frozen=True)
class Jar:
    """A Maven artifact's jar, pinned to a version and to the sha256 of its bytes.

    ``used_by`` names what loads it: a table format (:data:`TABLE_FORMATS`) or
    a connector (:data:`CONNECTORS`), which only the sessions that ask for it load.
    """

    group: str
    artifact: str
    version: str
    sha256: str
    used_by: str

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    def url(self, repository: str = MAVEN_REPOSITORY) -> str:
        """The jar's address in a Maven repository (Maven Central by default)."""
        path = "/".join([*self.group.split("."), self.artifact, self.version, self.file_name])
        return f"{repository.rstrip('/')}/{path}"


# The table formats' jars for PySpark 3.5 (Scala 2.12), from the formats' own
# artifacts. Their sha256 were computed from the downloaded jars once, after
# checking them against the .sha1 files Maven Central publishes beside them.
# Other runtime dependencies of delta-spark's pom (scala-library 2.12.18,
# antlr4-runtime 4.9.3) are PySpark's own jars. A new version: change the
# version and the sha256 together. Delta 3.3.3, not 3.3.2: Spark 3.5.6+ refuses
# 3.3.2's overwrite of a table ("does not support truncate in batch mode",
# delta-io/delta#4671), which 3.3.3 fixes.
JARS = (
    Jar(
        "org.apache.iceberg",
        "iceberg-spark-runtime-3.5_2.12",
        "1.10.2",
        "c562d482dcd16b666e808b755469fbc4b2604284b41622c9d87e2c02b7cc6c5f",
        "iceberg",
    ),
    Jar(
        "io.delta",
        "delta-spark_2.12",
        "3.3.3",
        "4912bf902a1c453aba3bd838ff212dedd357155212f9bb37a6b47d97f2827ebc",
        "delta",
    ),
    Jar(
        "io.delta",
        "delta-storage",
        "3.3.3",
        "45ad193053fd30cebe6d9ab1889873cde39b223a0f210e00ebee8b6642476901",
        "delta",
    ),
    # Spark's Kafka source (python -m python_jobs.landing.stream) and what its
    # pom declares beside Spark's own jars: the Kafka client 3.4.1 it is built
    # against, commons-pool2 (its consumer pool), the token provider. No
    # 3.5.8 connector exists on Maven Central, so this is 3.5.7's under
    # PySpark 3.5.8 (a patch apart; the connector uses Spark's public source
    # API): tests/pytest/test_stream.py streams from a real broker through it.
    Jar(
        "org.apache.spark",
        "spark-sql-kafka-0-10_2.12",
        "3.5.7",
        "184f8bd4a3cd22299c49090d88b894f81fd7546b4ee64879519a0d76a685dbb8",
        "kafka",
    ),
    Jar(
        "org.apache.spark",
        "spark-token-provider-kafka-0-10_2.12",
        "3.5.7",
        "9701914db5c6d09628b58d2d2c1ccd2c9ea28f32f83dd6cb21f98b8237531ff4",
        "kafka",
    ),
    Jar(
        "org.apache.kafka",
        "kafka-clients",
        "3.4.1",
        "9d0a9058c8ede79db6e54ae378ed16fe8d1bead2894635a4aa6aa0b7981668c6",
        "kafka",
    ),
    Jar(
        "org.apache.commons",
        "commons-pool2",
        "2.11.1",
        "ea0505ee7515e58b1ac0e686e4d1a5d9f7d808e251a61bc371aa0595b9963f83",
        "kafka",
    ),
)
# Connectors a session loads only when asked (get_spark(connectors=...)).
CONNECTORS = ("kafka",)
JAR_USER_NAMES = {"iceberg": "Iceberg", "delta": "Delta Lake", "kafka": "Spark's Kafka connector"}
# Delta on a local master (a few cores, tables of a few files): a snapshot's
# state (the table's files, from its log) is rebuilt in snapshotPartitions
# tasks at every new version a query reads, and every scan is planned with a
# Spark job over that state in as many tasks. The default 50 is sized for
# tables of millions of files; on two cores those tasks took most of a small
# write's time. Delta's own test suite runs with 2 (its build.sbt); 1 made
# dbt's basic adapter suite on Delta a third faster again (176 and 163 s with
# 2, 112 and 124 s with 1, docs/table-formats.md).
DELTA_LOCAL_SETTINGS = {
    "spark.databricks.delta.snapshotPartitions": "1",
}


def state_dir() -> Path:
    """Folder for the embedded metastore, warehouse and logs."""
    return Path(os.environ.get("LATECOMER_STATE_DIR", REPO_ROOT / ".latecomer")).resolve()


def warehouse_location() -> str:
    """The warehouse: ``LATECOMER_WAREHOUSE`` or ``<state dir>/warehouse`` (sessions and the metastore service)."""
    return os.environ.get("LATECOMER_WAREHOUSE", str(state_dir() / "warehouse"))


def private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents with mode 0700 (owner only).

    Folders that already exist are left as they are; ``chmod`` after
    ``mkdir`` makes the mode exact whatever the umask.
    """
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by another process: not ours to change
        folder.chmod(0o700)
    return path


def local_folder(location: str) -> Path | None:
    """The local folder of a location: a path or ``file:`` URL; None for other schemes (hdfs://, s3a://)."""
    url = urlparse(location)
    if url.scheme == "file":
        return Path(unquote(url.path))
    return Path(location) if url.scheme == "" else None


def create_state_dirs(conf: dict[str, str]) -> None:
    """The folders ``conf`` (from :func:`spark_conf`) keeps state in, owner only (0700).

    The state dir (metastore, logs), Hive's session folders and a local
    warehouse; Spark and Hive would otherwise create them readable by everyone.
    """
    state = private_dir(state_dir())
    for folder, _ in HIVE_SESSION_DIRS.values():
        private_dir(state / folder)
    warehouse = local_folder(conf["spark.sql.warehouse.dir"])
    if warehouse is not None:
        private_dir(warehouse)


def jars_dir() -> Path:
    """The folder holding the table formats' jars: ``LATECOMER_JARS_DIR`` or ``<repo>/jvm/jars``."""
    return Path(os.environ.get("LATECOMER_JARS_DIR") or DEFAULT_JARS_DIR).resolve()


def jar_urls(jars: list[Jar], repository: str = MAVEN_REPOSITORY) -> str:
    """The jars' addresses in ``repository``, one an indented line (for messages)."""
    return "\n".join(f"  {jar.url(repository)}" for jar in jars)


def format_jars(used_by: str) -> list[str]:
    """Paths of the jars a table format or connector (``used_by``) needs, from :func:`jars_dir`.

    Fails at once, naming the folder and the files, when one is missing.
    """
    folder = jars_dir()
    needed = [jar for jar in JARS if jar.used_by == used_by]
    missing = [jar for jar in needed if not (folder / jar.file_name).is_file()]
    if missing:
        raise SparkConfigError(
            f"{JAR_USER_NAMES[used_by]} jars are missing from {folder}: "
            f"{', '.join(jar.file_name for jar in missing)}. `make install` fetches them from the Maven "
            "registry (python -m python_jobs.operations.fetch_jars); on a machine that cannot reach it, "
            "download them into that folder (or into one named by LATECOMER_JARS_DIR):\n" + jar_urls(missing)
        )
    return [str(folder / jar.file_name) for jar in needed]


def command_profile(master: str, warehouse: str, limit: int | None = None) -> str:
    """The profile of a command's session when ``LATECOMER_JVM_PROFILE`` is unset.

    ``short`` on a local master whose local warehouse holds less than
    ``limit`` bytes (:data:`SHORT_STORE_BYTES`): a build there reads little and
    ends before the optimising compiler repays its CPU. ``job`` otherwise, a
    cluster and a warehouse on another file system included. The walk stops
    as soon as ``limit`` is reached, so a large warehouse costs a few
    directory listings.
    """
    limit = SHORT_STORE_BYTES if limit is None else limit
    folder = local_folder(warehouse)
    if not master.startswith("local") or folder is None:
        return "job"
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue  # removed meanwhile by another process
            if total >= limit:
                return "job"
    return "short"


def codegen_mode(server: bool = False) -> str:
    """How a session evaluates expressions: ``LATECOMER_CODEGEN``, else
    ``compiled``, Spark's default. The Thrift server (``server``) compiles
    whatever the environment says: BI tools read through it, at any size,
    and some of their calls fail interpreted (``CODEGEN_MODES``).
    """
    mode = os.environ.get("LATECOMER_CODEGEN") or "compiled"
    if mode not in CODEGEN_MODES:
        raise SparkConfigError(f"Unknown LATECOMER_CODEGEN {mode!r}; choose one of {', '.join(CODEGEN_MODES)}.")
    return "compiled" if server else mode


def class_archive_options(master: str, jvm_profile: str) -> list[str]:
    """The driver JVM's option that maps :data:`JVM_ARCHIVE`, when it applies.

    Only a command's JVM on a local master has the class path the archive was
    written with; the Thrift server puts the table format's jars first, and a
    cluster's driver has no file system jar.
    """
    if master.startswith("local") and jvm_profile in COMMAND_PROFILES and JVM_ARCHIVE.exists():
        return [f"-XX:SharedArchiveFile={JVM_ARCHIVE}"]
    return []


def spark_conf(
    table_format: str = "iceberg",
    master: str | None = None,
    jvm_profile: str | None = None,
    connectors: tuple[str, ...] = (),
) -> dict[str, str]:
    """Full Spark configuration for a table format, and the ``connectors`` (:data:`CONNECTORS`) asked for.

    The same dictionary configures an in-process session and the Thrift server
    (``jvm_profile="server"``, unless ``LATECOMER_JVM_PROFILE`` says otherwise).
    Without either, a command's profile follows the store's size (:func:`command_profile`).
    A connector's jars are loaded only by the sessions that ask for them, so
    nothing else has Kafka's client on its class path.
    """
    unknown = [name for name in connectors if name not in CONNECTORS]
    if unknown:
        raise SparkConfigError(f"Unknown connector {unknown[0]!r}; choose among {', '.join(CONNECTORS)}.")
    if table_format not in TABLE_FORMATS:
        raise SparkConfigError(f"Unknown table format {table_format!r}; choose one of {', '.join(TABLE_FORMATS)}.")
    # The Thrift server asks for its profile: it is a server whatever JVM options the environment gives it.
    server = jvm_profile == "server"
    jvm_profile = os.environ.get("LATECOMER_JVM_PROFILE") or jvm_profile
    if jvm_profile is not None and jvm_profile not in JVM_PROFILES:
        raise SparkConfigError(
            f"Unknown LATECOMER_JVM_PROFILE {jvm_profile!r}; choose one of {', '.join(JVM_PROFILES)}."
        )
    state = state_dir()
    warehouse = warehouse_location()
    shuffle_partitions = os.environ.get("LATECOMER_SHUFFLE_PARTITIONS", "4")
    master = master or os.environ.get("LATECOMER_SPARK_MASTER", "local[2]")
    codegen = codegen_mode(server)
    jvm_profile = jvm_profile or command_profile(master, warehouse)
    conf = {
        "spark.master": master,
        "spark.app.name": "latecomer",
        "spark.driver.memory": os.environ.get("LATECOMER_DRIVER_MEMORY", "4g"),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": warehouse,
        "spark.sql.session.timeZone": "UTC",
        # Two local cores: a handful of shuffle partitions beats the default 200.
        "spark.sql.shuffle.partitions": shuffle_partitions,
        "spark.default.parallelism": shuffle_partitions,
        "spark.sql.adaptive.enabled": "true",
        # Classes Spark generates for a query are kept for the next query that
        # generates the same code; the default keeps 100, fewer than one build
        # compiles, so a process running build after build (the Thrift server,
        # the test suite) compiled them again each time.
        "spark.sql.codegen.cache.maxEntries": "2000",
        # Concurrent dbt nodes share the cores (each thread has its own pool:
        # dbt/adapters/latecomer/scheduling.py) instead of queueing job by job.
        "spark.scheduler.mode": "FAIR",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.legacy.timeParserPolicy": "CORRECTED",
        "spark.driver.extraJavaOptions": " ".join(
            [
                f"-Dderby.system.home={state}",
                "-Duser.timezone=UTC",
                *JVM_PROFILES[jvm_profile],
                *class_archive_options(master, jvm_profile),
                os.environ.get("LATECOMER_JAVA_OPTIONS", ""),
            ]
        ).strip(),
        # Executors on a cluster run in their machines' time zone otherwise.
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        **{key: f"{state / folder}{below}" for key, (folder, below) in HIVE_SESSION_DIRS.items()},
    }
    if codegen == "interpreted":
        conf.update(CODEGEN_SETTINGS["interpreted"])
    conf.update({key: os.environ[env] for env, key in EXECUTOR_SETTINGS.items() if os.environ.get(env)})
    if master.startswith("local") and FORKLESS_FS_JAR.exists():
        # Only the driver's class path holds the jar: on a cluster, executors
        # would not find the class.
        conf["spark.driver.extraClassPath"] = str(FORKLESS_FS_JAR)
        conf["spark.hadoop.fs.file.impl"] = FORKLESS_FS_CLASS
    metastore_uri = os.environ.get("LATECOMER_METASTORE_URI")
    if metastore_uri:
        # A metastore service keeps Iceberg's Hive commit locks (the default),
        # which guard commits from concurrent jobs. Spark's built-in Hive 2.3.9
        # client needs no other setting for a Hive 3.1 service (`python -m
        # python_jobs.operations.metastore`; docs/shared-catalog.md): both
        # formats create, read and append through it. A lock's holder
        # heartbeats every 20 s instead of every 4 minutes, well within the
        # minute after which that service releases the lock of a process that
        # died holding it (a service's default, 5 minutes, allows this too).
        conf["spark.hadoop.hive.metastore.uris"] = metastore_uri
        conf["spark.hadoop.iceberg.hive.lock-heartbeat-interval-ms"] = "20000"
    else:
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true"
        )
        # Without this every Iceberg commit on the embedded metastore waits
        # for a 3-minute Hive lock timeout; one process is its only writer.
        conf["spark.hadoop.iceberg.engine.hive.lock-enabled"] = "false"
        # An Iceberg commit that changes a column's type (a table model whose
        # column became a string, replaced by `create or replace table`) also
        # alters the metastore's copy of the schema, which Hive refuses by
        # default ("types incompatible with the existing columns"): the commit
        # then ends in CommitStateUnknownException. Iceberg's schema is the
        # table's; the metastore's copy only mirrors it. (A metastore service
        # takes this setting from its own configuration.)
        conf["spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes"] = "false"
    if table_format == "iceberg":
        conf.update(
            {
                "spark.jars": ",".join(format_jars("iceberg")),
                "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
                "spark.sql.catalog.spark_catalog.type": "hive",
            }
        )
        if metastore_uri or server:
            # Other processes commit to the tables too, or, in a Thrift
            # server, other sessions, each with a catalog of its own: every
            # query loads a table's current metadata. Iceberg's table cache
            # would keep it, branches and tags included, for 30 s: the
            # readers' views would read an older publication than their
            # pointer names (python_jobs/core/reader_views.py), and a build's
            # on-run-end, on a connection of its own, would not find the run
            # branch its models wrote ("Ref does not exist").
            conf["spark.sql.catalog.spark_catalog.cache-enabled"] = "false"
            # A commit that lost a race to another process's commit is
            # retried on the new metadata: 4 times by Iceberg's default, which
            # two landings appending to one table on a busy machine can use up
            # (each loss waits for the winner's metastore lock). Tables this
            # catalog creates retry 10 times.
            conf["spark.sql.catalog.spark_catalog.table-default.commit.retry.num-retries"] = "10"
    else:
        conf.update(
            {
                "spark.jars": ",".join(format_jars("delta")),
                "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            }
        )
        if master.startswith("local"):
            conf.update(DELTA_LOCAL_SETTINGS)
            # VACUUM lists a table's folders in this many tasks (Spark's
            # default, 10000, is meant for a cluster listing an object store).
            conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] = shuffle_partitions
    connector_jars = [path for name in connectors for path in format_jars(name)]
    if connector_jars:
        conf["spark.jars"] = ",".join([conf["spark.jars"], *connector_jars])
    return conf


def get_spark(
    table_format: str | None = None,
    master: str | None = None,
    connectors: tuple[str, ...] = (),
    jvm_profile: str | None = None,
    attach: bool = True,
) -> SparkSession:
    """The process's Spark session, created from :func:`spark_conf` if needed.

    With ``attach``, a new session in the warm driver of the state dir when
    one runs with the same settings (:mod:`python_jobs.core.warm_driver`).
    """
    with _STARTING:
        if SparkContext._active_spark_context is not None:
            # Reuse the running session (dbt runs models on worker threads, where
            # getActiveSession() may not see it).
            return SparkSession.builder.getOrCreate()
        return _start_session(table_format, master, connectors, jvm_profile, attach)


def _start_session(
    table_format: str | None, master: str | None, connectors: tuple[str, ...], jvm_profile: str | None, attach: bool
) -> SparkSession:
    table_format = table_format or os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg")
    conf = spark_conf(table_format, master, jvm_profile, connectors)
    create_state_dirs(conf)
    if attach:
        try:
            session = warm_driver.attach(state_dir(), table_format, conf, CODEGEN_SETTINGS[codegen_mode()])
        except warm_driver.WarmDriverError as exc:
            raise SparkConfigError(str(exc)) from None
        if session is not None:
            return session
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
