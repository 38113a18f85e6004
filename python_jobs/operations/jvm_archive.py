"""Write the class data archive a command's driver JVM starts from.

    python -m python_jobs.operations.jvm_archive   (make install runs it)

A warm-up session runs the statements a build starts with (the embedded
metastore, an Iceberg table written, merged and read, rows staged to a
folder) in a process of its own, on a throwaway state dir, with
``-XX:ArchiveClassesAtExit``: when its JVM exits, the JVM writes every class
it loaded into the archive. ``spark_config`` then starts command JVMs with
``-XX:SharedArchiveFile`` (its docstring says when). The archive belongs to
this JDK, these jars and this class path: ``make install`` writes it again
when any of them changes, and a JVM that finds it does not match says so
and loads its classes as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from python_jobs.core.spark_config import JVM_ARCHIVE, REPO_ROOT, get_spark

# The JVM writes the archive after the Python process that started it ends.
EXIT_TIMEOUT_S = 300
WARM_UP = (
    "create database warm_up",
    "create table warm_up.events (id bigint, event_date date, amount decimal(18, 2))"
    " using iceberg partitioned by (event_date)",
    "insert into warm_up.events select id, date_add('2024-01-01', cast(id % 5 as int)), id * 1.5 from range(100)",
    "merge into warm_up.events as target using (select id, event_date, amount + 1 as amount"
    " from warm_up.events where id < 10) as source on target.id = source.id"
    " when matched then update set * when not matched then insert *",
    "create or replace temporary view staged as select event_date, sum(amount) as amount"
    " from warm_up.events group by event_date",
    "insert overwrite directory '{folder}' using parquet select * from staged",
    "select count(*) from warm_up.events",
    "show tblproperties warm_up.events",
    "describe table extended warm_up.events",
    "drop database warm_up cascade",
)


def warm_up(folder: Path) -> None:
    """Run :data:`WARM_UP` in this process's session; print the JVM's pid."""
    spark = get_spark("iceberg")
    print(f"JVM {spark.sparkContext._jvm.ProcessHandle.current().pid()}", flush=True)
    for statement in WARM_UP:
        spark.sql(statement.format(folder=(folder / "staged").as_uri())).collect()
    spark.stop()


def jvm_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def write_archive(archive: Path = JVM_ARCHIVE) -> Path:
    """Run the warm-up in a child process and keep what its JVM archives at exit."""
    archive.unlink(missing_ok=True)  # a JVM must not start from the old one
    part = archive.with_suffix(".part")
    part.unlink(missing_ok=True)
    archive.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="latecomer-jvm-archive-") as scratch:
        env = {
            **os.environ,
            "LATECOMER_STATE_DIR": str(Path(scratch) / "state"),
            # The archive's warnings (classes it cannot hold) are not the user's business.
            "LATECOMER_JAVA_OPTIONS": f"-XX:ArchiveClassesAtExit={part} -Xlog:cds=off -Xlog:cds+dynamic=off",
        }
        child = subprocess.run(
            [sys.executable, "-m", "python_jobs.operations.jvm_archive", "--warm-up", scratch],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        pids = [int(line.split()[1]) for line in child.stdout.splitlines() if line.startswith("JVM ")]
        if child.returncode != 0 or not pids:
            raise RuntimeError(f"the warm-up session failed ({child.returncode}):\n{child.stderr[-3000:]}")
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while jvm_running(pids[0]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm-up JVM (pid {pids[0]}) did not exit within {EXIT_TIMEOUT_S} s")
            time.sleep(0.2)
    if not part.exists() or part.stat().st_size == 0:
        raise RuntimeError(f"the warm-up JVM wrote no archive at {part}")
    part.rename(archive)
    print(
        f"Wrote {archive.relative_to(REPO_ROOT)} ({archive.stat().st_size / 2**20:.0f} MiB) in "
        f"{time.monotonic() - started:.0f} s: command JVMs on a local master start from it."
    )
    return archive


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--warm-up"]:
        warm_up(Path(argv[1]))
        return 0
    try:
        write_archive()
    except RuntimeError as error:
        # Not fatal: every JVM still starts, only without the archive.
        print(f"jvm_archive: {error}\nCommand JVMs will load their classes as usual.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
