"""The machine a run measured on: cores, memory, load and peak memory."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession


def machine_info(spark: SparkSession) -> dict[str, Any]:
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    conf = spark.sparkContext.getConf()
    return {
        "cpu_count": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "spark": spark.version,
        "spark_master": conf.get("spark.master"),
        "driver_memory": conf.get("spark.driver.memory"),
        "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "retained_executions": conf.get("spark.sql.ui.retainedExecutions", "1000"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def peak_memory(spark: SparkSession) -> dict[str, Any]:
    """Peak resident memory of this Python process and of the local JVM."""
    out: dict[str, Any] = {"python_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out["jvm_peak_rss_mib"] = round(int(line.split()[1]) / 1024)
    except Exception:
        pass
    return out
