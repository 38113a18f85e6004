"""Write the class data archive a command's driver JVM starts from.

    python -m python_jobs.operations.jvm_archive   (make install runs it)

A warm-up session runs the warm driver's warm-up on Iceberg (the kinds of
statement a build runs: :mod:`python_jobs.operations.warm_up`), then stages
rows to a folder, in a process of its own, on a throwaway state dir, with
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

from python_jobs.core.processes import process_alive
from python_jobs.core.spark_config import JVM_ARCHIVE, REPO_ROOT, get_spark
from python_jobs.operations.warm_up import statements as warm_up_statements

# The JVM writes the archive after the Python process that started it ends.
EXIT_TIMEOUT_S = 300
# The warm driver's warm-up, on Iceberg, then rows staged to a folder.
WARM_UP = (
    *warm_up_statements("iceberg"),
    "create or replace temporary view staged as select id, id * 1.5 as amount from range(100)",
    "insert overwrite directory '{folder}' using parquet select * from staged",
)


def warm_up(folder: Path) -> None:
    """Run :data:`WARM_UP` in this process's session; print the JVM's pid."""
    spark = get_spark("iceberg")
    print(f"JVM {spark.sparkContext._jvm.ProcessHandle.current().pid()}", flush=True)
    for statement in WARM_UP:
        spark.sql(statement.format(folder=(folder / "staged").as_uri())).collect()
    spark.stop()


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
        while process_alive(pids[0]):
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
