"""The driver JVM's options by how long its process lives (spark_config.JVM_PROFILES), and its local file system."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from python_jobs.core import spark_config


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
        return {
            str(found.relative_to(root)): stat.S_IMODE(found.stat().st_mode) for found in sorted(root.rglob("*"))
        }

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
