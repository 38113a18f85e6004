"""The driver JVM's options by how long its process lives (spark_config.JVM_PROFILES)."""

from __future__ import annotations

import os

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
    monkeypatch.setenv("LATECOMER_JVM_PROFILE", "fast")
    with pytest.raises(spark_config.SparkConfigError, match="'fast'; choose one of job, server"):
        driver_options()


def test_the_session_jvm_runs_with_its_profile(spark: SparkSession) -> None:
    profile = os.environ.get("LATECOMER_JVM_PROFILE") or "job"
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    for option in spark_config.JVM_PROFILES[profile]:
        assert option in arguments
