"""The driver JVM's options by how long its process lives (spark_config.JVM_PROFILES), its local file system,
and the table formats' pinned jars (spark_config.JARS, python_jobs/operations/fetch_jars.py; no network)."""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import subprocess
import urllib.error
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from pyspark.sql import SparkSession

from python_jobs.core import spark_config
from python_jobs.operations import fetch_jars
from tests.pytest.conftest import expression_settings


def driver_options(**kwargs: str) -> list[str]:
    return spark_config.spark_conf("iceberg", **kwargs)["spark.driver.extraJavaOptions"].split()


def test_a_command_session_collects_for_throughput_and_a_server_keeps_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LATECOMER_JVM_PROFILE", raising=False)
    monkeypatch.setenv("LATECOMER_JAVA_OPTIONS", "-Xss4m")
    job = driver_options()
    assert "-XX:+UseParallelGC" in job
    assert job[-1] == "-Xss4m", "the user's options come last, so they win"
    server = driver_options(jvm_profile="server")
    assert not any(option.startswith("-XX:") for option in server)
    assert "-Duser.timezone=UTC" in server and server[-1] == "-Xss4m"


def pinned_jars_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty files named as the pinned jars, in the folder LATECOMER_JARS_DIR names:
    enough for spark_conf, which only checks that they are there."""
    monkeypatch.setenv("LATECOMER_JARS_DIR", str(folder))
    for jar in spark_config.JARS:
        (folder / jar.file_name).touch()


def test_the_environment_chooses_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "server")
    assert not any(option.startswith("-XX:") for option in driver_options())
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "job")
    assert "-XX:+UseParallelGC" in driver_options(jvm_profile="server")
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "short")
    short = driver_options()
    assert {"-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=512m"} <= set(short)
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "fast")
    with pytest.raises(spark_config.SparkConfigError, match="'fast'; choose one of job, short, server"):
        driver_options()


def test_without_a_choice_a_small_local_store_takes_the_short_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LATECOMER_JVM_PROFILE", raising=False)
    warehouse = tmp_path / "warehouse"
    (warehouse / "s_gold.db" / "t").mkdir(parents=True)
    (warehouse / "s_gold.db" / "t" / "part-0.parquet").write_bytes(b"x" * 600)
    (warehouse / "s_silver.db").mkdir()
    (warehouse / "s_silver.db" / "part-1.parquet").write_bytes(b"x" * 500)
    # 1,100 bytes in two folders: under a limit of 1,101, at or over one of 1,100.
    assert spark_config.command_profile("local[2]", str(warehouse), limit=1101) == "short"
    assert spark_config.command_profile("local[2]", str(warehouse), limit=1100) == "job"
    assert spark_config.command_profile("local[2]", f"file://{warehouse}", limit=1101) == "short"
    assert spark_config.command_profile("spark://127.0.0.1:7077", str(warehouse), limit=1101) == "job"
    assert spark_config.command_profile("local[2]", "s3a://bucket/warehouse", limit=1101) == "job"
    assert spark_config.command_profile("local[2]", str(tmp_path / "not-yet"), limit=1) == "short"
    monkeypatch.setenv("LATECOMER_WAREHOUSE", str(warehouse))
    monkeypatch.setattr(spark_config, "SHORT_STORE_BYTES", 1101)
    assert "-XX:TieredStopAtLevel=1" in driver_options(master="local[2]")
    monkeypatch.setattr(spark_config, "SHORT_STORE_BYTES", 1100)
    options = driver_options(master="local[2]")
    assert "-XX:+UseParallelGC" in options and "-XX:TieredStopAtLevel=1" not in options
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "job")
    monkeypatch.setattr(spark_config, "SHORT_STORE_BYTES", 1101)
    assert "-XX:TieredStopAtLevel=1" not in driver_options(master="local[2]"), "the environment's choice wins"


def test_the_environment_chooses_how_expressions_are_evaluated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LATECOMER_CODEGEN", raising=False)
    pinned_jars_in(tmp_path, monkeypatch)
    interpreted = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}

    def codegen(**kwargs: str) -> dict[str, str]:
        conf = spark_config.spark_conf("iceberg", master="local[2]", **kwargs)
        return {key: conf[key] for key in interpreted if key in conf}

    assert codegen() == {}, "Spark's default: compiled"
    monkeypatch.setenv("LATECOMER_CODEGEN", "interpreted")
    assert codegen() == interpreted
    assert codegen(jvm_profile="job") == interpreted
    assert codegen(jvm_profile="server") == {}, "the Thrift server compiles"
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "job")
    assert codegen(jvm_profile="server") == {}, "a server whatever its JVM"
    monkeypatch.setenv("LATECOMER_CODEGEN", "fast")
    with pytest.raises(spark_config.SparkConfigError, match="'fast'; choose one of compiled, interpreted"):
        codegen()


def test_iceberg_tables_are_cached_only_where_one_session_commits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pinned_jars_in(tmp_path, monkeypatch)
    monkeypatch.delenv("LATECOMER_METASTORE_URI", raising=False)
    key = "spark.sql.catalog.spark_catalog.cache-enabled"
    assert key not in spark_config.spark_conf("iceberg", jvm_profile="job")
    assert spark_config.spark_conf("iceberg", jvm_profile="server")[key] == "false"
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "job")
    assert spark_config.spark_conf("iceberg", jvm_profile="server")[key] == "false", "a server whatever its JVM"
    monkeypatch.delenv("LATECOMER_JVM_PROFILE")
    monkeypatch.setenv("LATECOMER_METASTORE_URI", "thrift://127.0.0.1:9083")
    assert spark_config.spark_conf("iceberg", jvm_profile="job")[key] == "false"


def test_the_session_evaluates_expressions_as_the_environment_chose(spark: SparkSession) -> None:
    interpreted = (os.environ.get("LATECOMER_CODEGEN") or "compiled") == "interpreted"
    assert expression_settings(spark) == (("NO_CODEGEN", "false") if interpreted else ("FALLBACK", "true"))


def test_the_session_jvm_runs_with_its_profile(spark: SparkSession) -> None:
    profile = os.environ.get("LATECOMER_JVM_PROFILE") or "job"
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    for option in spark_config.JVM_PROFILES[profile]:
        assert option in arguments


def test_local_masters_take_the_forkless_file_system_and_clusters_do_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jar = tmp_path / "latecomer-hadoop.jar"
    monkeypatch.setattr(spark_config, "FORKLESS_FS_JAR", jar)
    assert "spark.hadoop.fs.file.impl" not in spark_config.spark_conf("iceberg", master="local[2]"), "no jar built"
    jar.touch()
    local = spark_config.spark_conf("iceberg", master="local[2]")
    assert local["spark.hadoop.fs.file.impl"] == "latecomer.hadoop.ForklessLocalFileSystem"
    assert local["spark.driver.extraClassPath"] == str(jar)
    cluster = spark_config.spark_conf("iceberg", master="spark://127.0.0.1:7077")
    assert "spark.hadoop.fs.file.impl" not in cluster and "spark.driver.extraClassPath" not in cluster


def test_the_session_sets_modes_as_hadoops_own_does(spark: SparkSession, tmp_path: Path) -> None:
    """`make install` built the jar, and the suite's session writes local files
    through it: the same modes and checksum files as Hadoop's own local file
    system (which starts chmod for each), for the same calls."""
    jvm = spark.sparkContext._jvm
    hadoop = jvm.org.apache.hadoop
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    ours = hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert ours.getClass().getName() == "latecomer.hadoop.ForklessLocalFileSystem"
    hadoops = hadoop.fs.LocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)

    def write(fs: Any, root: Path) -> dict[str, int]:
        def path(relative: str) -> Any:
            return hadoop.fs.Path((root / relative).as_uri())

        def mode(text: str) -> Any:
            return hadoop.fs.permission.FsPermission.valueOf(text)

        assert fs.mkdirs(path("a/b"), mode("drwxr-x---"))
        stream = fs.create(path("a/b/rows.txt"))
        stream.write(bytearray(b"rows"))
        stream.close()
        fs.setPermission(path("a/b/rows.txt"), mode("-rw-r-----"))
        assert fs.mkdirs(path("a/shared"))
        fs.setPermission(path("a/shared"), mode("drwxrwxrwt"))  # the sticky bit: chmod in both
        assert (root / "a/b/rows.txt").read_bytes() == b"rows"
        return {str(found.relative_to(root)): stat.S_IMODE(found.stat().st_mode) for found in sorted(root.rglob("*"))}

    modes = write(ours, tmp_path / "ours")
    assert modes == write(hadoops, tmp_path / "hadoops")
    assert modes["a/b"] == 0o750 and modes["a/b/rows.txt"] == 0o640 and modes["a/shared"] == 0o1777
    assert "a/b/.rows.txt.crc" in modes, "checksums are kept"


def test_a_commands_local_jvm_starts_from_the_class_archive_and_no_other_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LATECOMER_JVM_PROFILE", raising=False)
    archive = tmp_path / "latecomer-driver.jsa"
    monkeypatch.setattr(spark_config, "JVM_ARCHIVE", archive)
    option = f"-XX:SharedArchiveFile={archive}"
    assert option not in driver_options(master="local[2]"), "no archive written"
    archive.touch()
    assert option in driver_options(master="local[2]")
    assert option in driver_options(master="local[2]", jvm_profile="short")
    # The Thrift server's class path starts with Iceberg's jar; a cluster driver's has no file system jar.
    assert option not in driver_options(master="local[2]", jvm_profile="server")
    assert option not in driver_options(master="spark://127.0.0.1:7077")


def test_the_session_jvm_maps_the_archive_make_install_wrote(spark: SparkSession) -> None:
    archive = spark_config.JVM_ARCHIVE
    assert archive.exists(), "make install writes it (python -m python_jobs.operations.jvm_archive)"
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    # The JVM says what it mapped: the JDK's own archive alone (about 12 MB)
    # when ours failed to load (another class path, JDK or jar), or both.
    info = subprocess.run(
        ["jcmd", str(jvm.ProcessHandle.current().pid()), "VM.info"], capture_output=True, text=True, check=True
    ).stdout
    mapped = re.search(r"CDS archive\(s\) mapped at: .*?size (\d+)", info)
    assert mapped, info[:2000]
    assert int(mapped.group(1)) > archive.stat().st_size


# The table formats' jars: pinned Maven artifacts in the project's jar folder.


def test_the_pins_name_each_formats_own_artifacts() -> None:
    pins = {(jar.used_by, jar.coordinates) for jar in spark_config.JARS}
    assert pins == {
        ("iceberg", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"),
        ("delta", "io.delta:delta-spark_2.12:3.3.3"),
        ("delta", "io.delta:delta-storage:3.3.3"),
        ("kafka", "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"),
        ("kafka", "org.apache.spark:spark-token-provider-kafka-0-10_2.12:3.5.7"),
        ("kafka", "org.apache.kafka:kafka-clients:3.4.1"),
        ("kafka", "org.apache.commons:commons-pool2:2.11.1"),
    }
    for jar in spark_config.JARS:
        assert re.fullmatch(r"[0-9a-f]{64}", jar.sha256), jar
    delta_spark = next(jar for jar in spark_config.JARS if jar.artifact == "delta-spark_2.12")
    assert delta_spark.url() == (
        "https://repo1.maven.org/maven2/io/delta/delta-spark_2.12/3.3.3/delta-spark_2.12-3.3.3.jar"
    )
    assert delta_spark.url("https://mirror.example/maven/").startswith("https://mirror.example/maven/io/delta/")


def test_make_install_fetched_the_pinned_jars() -> None:
    folder = spark_config.jars_dir()
    for jar in spark_config.JARS:
        fetch_jars.check(jar, folder / jar.file_name)


def test_sessions_take_each_formats_jars_from_the_jar_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pinned_jars_in(tmp_path, monkeypatch)
    iceberg = spark_config.spark_conf("iceberg")
    assert iceberg["spark.jars"] == str(tmp_path / "iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    assert "spark.jars.packages" not in iceberg
    delta = spark_config.spark_conf("delta")
    assert delta["spark.jars"].split(",") == [
        str(tmp_path / "delta-spark_2.12-3.3.3.jar"),
        str(tmp_path / "delta-storage-3.3.3.jar"),
    ]
    assert "spark.jars.packages" not in delta
    assert delta["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    monkeypatch.delenv("LATECOMER_JARS_DIR")
    assert spark_config.jars_dir() == spark_config.REPO_ROOT / "jvm" / "jars"


def test_a_missing_jar_fails_at_once_naming_the_folder_to_fill(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = tmp_path / "jars"
    monkeypatch.setenv("LATECOMER_JARS_DIR", str(folder))
    folder.mkdir()
    (folder / "delta-spark_2.12-3.3.3.jar").touch()
    with pytest.raises(spark_config.SparkConfigError) as delta:
        spark_config.spark_conf("delta")
    message = str(delta.value)
    assert message.startswith(f"Delta Lake jars are missing from {folder}: delta-storage-3.3.3.jar.")
    assert "LATECOMER_JARS_DIR" in message and "make install" in message
    assert message.endswith("\n  https://repo1.maven.org/maven2/io/delta/delta-storage/3.3.3/delta-storage-3.3.3.jar")
    with pytest.raises(spark_config.SparkConfigError, match="Iceberg jars are missing from .*iceberg-spark-runtime"):
        spark_config.spark_conf("iceberg")


class Registry:
    """A stand-in for the Maven registry: the bytes of each URL it holds, and the URLs asked for."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[str] = []

    def open(self, url: str) -> BinaryIO:
        self.asked.append(url)
        if url not in self.files:
            raise urllib.error.HTTPError(url, 404, "Not Found", None, None)  # type: ignore[arg-type]
        return io.BytesIO(self.files[url])


def pinned(artifact: str, content: bytes) -> spark_config.Jar:
    return spark_config.Jar("org.example", artifact, "1.0", hashlib.sha256(content).hexdigest(), "iceberg")


REPO = "https://registry.example/maven2"


def test_fetch_downloads_once_and_checks_what_is_there(tmp_path: Path) -> None:
    jars = [pinned("one", b"one's bytes"), pinned("two", b"two's bytes")]
    registry = Registry({jar.url(REPO): f"{jar.artifact}'s bytes".encode() for jar in jars})
    said: list[str] = []
    paths = fetch_jars.fetch(jars, tmp_path, REPO, registry.open, said.append)
    assert paths == [tmp_path / "one-1.0.jar", tmp_path / "two-1.0.jar"]
    assert [path.read_bytes() for path in paths] == [b"one's bytes", b"two's bytes"]
    assert registry.asked == [jar.url(REPO) for jar in jars]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["one-1.0.jar", "two-1.0.jar"], "no .part left"
    # Again: the jars are there with their pinned sha256, so nothing is fetched.
    assert fetch_jars.fetch(jars, tmp_path, REPO, registry.open, said.append) == paths
    assert len(registry.asked) == 2


def test_a_jar_with_another_checksum_is_an_error_naming_the_file(tmp_path: Path) -> None:
    jar = pinned("one", b"one's bytes")
    (tmp_path / jar.file_name).write_bytes(b"something else")
    registry = Registry({jar.url(REPO): b"one's bytes"})
    with pytest.raises(fetch_jars.FetchError, match=f"^{re.escape(str(tmp_path / jar.file_name))} has sha256 "):
        fetch_jars.fetch([jar], tmp_path, REPO, registry.open, print)
    assert registry.asked == [], "a jar that is there is checked, not replaced"
    assert (tmp_path / jar.file_name).read_bytes() == b"something else"


def test_a_download_with_another_checksum_leaves_no_jar(tmp_path: Path) -> None:
    jar = pinned("one", b"one's bytes")
    registry = Registry({jar.url(REPO): b"altered bytes"})
    with pytest.raises(fetch_jars.FetchError, match=f"{re.escape(jar.url(REPO))} sent a file with sha256"):
        fetch_jars.fetch([jar], tmp_path, REPO, registry.open, print)
    assert list(tmp_path.iterdir()) == []


class BrokenTransfer(io.BytesIO):
    """A response whose connection breaks after the first bytes."""

    def read(self, size: int | None = -1) -> bytes:
        if self.tell():
            raise ConnectionResetError(104, "Connection reset by peer")
        return super().read(4)


@pytest.mark.parametrize(
    "failure",
    [
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        TimeoutError("timed out"),
        urllib.error.HTTPError("https://registry.example", 403, "Forbidden", None, None),  # type: ignore[arg-type]
        None,  # the transfer breaks
    ],
)
def test_without_the_registry_the_message_names_the_folder_to_fill(tmp_path: Path, failure: OSError | None) -> None:
    there, missing = pinned("there", b"there"), pinned("missing", b"missing")
    (tmp_path / there.file_name).write_bytes(b"there")

    def unreachable(url: str) -> BinaryIO:
        if failure is None:
            return BrokenTransfer(b"missing")
        raise failure

    with pytest.raises(fetch_jars.FetchError) as error:
        fetch_jars.fetch([there, missing], tmp_path, REPO, unreachable, print)
    message = str(error.value)
    assert message.startswith("Cannot fetch org.example:missing:1.0 from the Maven registry")
    assert f"download these jars into {tmp_path} (or into a folder named by LATECOMER_JARS_DIR)" in message
    # The jars still to fetch, from Maven Central: the one there is not listed.
    assert message.endswith("\n  https://repo1.maven.org/maven2/org/example/missing/1.0/missing-1.0.jar")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["there-1.0.jar"], "no .part left"


def test_the_command_says_what_failed_in_one_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first pinned jar is there with other bytes: checked before anything is fetched.
    first = tmp_path / spark_config.JARS[0].file_name
    first.write_bytes(b"not the pinned jar")
    monkeypatch.setenv("LATECOMER_JARS_DIR", str(tmp_path))
    assert fetch_jars.main([]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"fetch_jars: {first} has sha256 ")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_delta_on_a_local_master_takes_small_store_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pinned_jars_in(tmp_path, monkeypatch)
    local = spark_config.spark_conf("delta", master="local[2]")
    assert local["spark.databricks.delta.snapshotPartitions"] == "1"
    assert local["spark.sql.sources.parallelPartitionDiscovery.parallelism"] == local["spark.sql.shuffle.partitions"]
    cluster = spark_config.spark_conf("delta", master="spark://127.0.0.1:7077")
    assert "spark.databricks.delta.snapshotPartitions" not in cluster
    assert "spark.databricks.delta.snapshotPartitions" not in spark_config.spark_conf("iceberg", master="local[2]")
