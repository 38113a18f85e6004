"""The metastore service's class path: resolved by Maven from
``jvm/metastore/pom.xml`` into the metastore home, and checked file by file
against the sha256 list ``jvm/metastore/jars.sha256`` before the service
starts.

Reading a sha256 list, checking a home against it and running Maven serve
every Maven-resolved home, the Kafka broker's
(:mod:`python_jobs.operations.kafka_broker`) too.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import TextIO

from python_jobs.core.spark_config import REPO_ROOT
from python_jobs.operations.metastore_state import PROG, MetastoreError, say

POM = REPO_ROOT / "jvm" / "metastore" / "pom.xml"
# Every file of the service's class path and the schema tool's scripts, with
# its sha256 (`sha256sum -c` reads it too, from the metastore home).
PINS = REPO_ROOT / "jvm" / "metastore" / "jars.sha256"
DEFAULT_HOME = REPO_ROOT / "jvm" / "build" / "metastore"
MAIN_CLASS_FILE = Path("classes") / "latecomer" / "metastore" / "MetastoreService.class"
SOURCE = REPO_ROOT / "jvm" / "metastore" / "src" / "main" / "java" / "latecomer" / "metastore" / "MetastoreService.java"
FETCH_COMMAND = f"{PROG} fetch"


def metastore_home() -> Path:
    return Path(os.environ.get("LATECOMER_METASTORE_HOME") or DEFAULT_HOME).resolve()


def pins(pins_file: Path = PINS) -> dict[str, str]:
    """The pinned files of a Maven-resolved home (the metastore's by default), by path relative to it: their sha256.

    ``pins_file`` is a ``sha256sum`` listing; the Kafka broker's
    (:mod:`python_jobs.operations.kafka_broker`) is read the same way.
    """
    pinned = {}
    for line in pins_file.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            pinned[name.strip()] = digest
    return pinned


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def pinned_problems(home: Path, pins_file: Path = PINS) -> list[str]:
    """Which files pinned in ``pins_file`` ``home`` lacks or holds with other bytes (empty when none)."""
    return [
        f"{name} is missing" if not (home / name).is_file() else f"{name} has other bytes than pinned"
        for name, digest in pins(pins_file).items()
        if not (home / name).is_file() or sha256_of(home / name) != digest
    ]


def maven_package(pom: Path, dir_property: str, home: Path) -> None:
    """Run ``mvn package`` on ``pom`` with its output folder property ``dir_property`` set to ``home``.

    -C: a download whose checksum differs from the registry's fails. Shared
    by every Maven-resolved home (the metastore's, the Kafka broker's).
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MetastoreError("Maven is missing: apt-get install maven (and a JDK, openjdk-17-jdk-headless)")
    command = [mvn, "-q", "-B", "-C", "-f", str(pom), "package", f"-D{dir_property}={home}"]
    result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        raise MetastoreError(f"Maven failed (exit {result.returncode}): {' '.join(command)}\n{result.stdout[-3000:]}")


def check_home(home: Path) -> list[str]:
    """What is wrong with ``home``: missing files, files of other bytes (empty when none)."""
    problems = pinned_problems(home)
    compiled = home / MAIN_CLASS_FILE
    if not compiled.is_file():
        problems.append(f"{MAIN_CLASS_FILE} is missing")
    elif SOURCE.is_file() and SOURCE.stat().st_mtime > compiled.stat().st_mtime:
        problems.append(f"{MAIN_CLASS_FILE} is older than {SOURCE.relative_to(REPO_ROOT)}")
    return problems


def class_path(home: Path, conf_dir: Path) -> str:
    """The service's class path: its configuration, its class, the pinned jars (nothing else in lib/)."""
    jars = [str(home / name) for name in pins() if name.endswith(".jar")]
    return ":".join([str(conf_dir), str(home / "classes"), *jars])


def verified_home() -> Path:
    home = metastore_home()
    problems = check_home(home)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise MetastoreError(
            f"The metastore service's files in {home} are not as pinned in {PINS.relative_to(REPO_ROOT)} "
            f"({shown}). `{FETCH_COMMAND}` resolves them with Maven (needs mvn and a JDK)."
        )
    return home


def fetch(out: TextIO) -> Path:
    """Resolve the service's class path with Maven into the metastore home, then check it."""
    home = metastore_home()
    if not check_home(home):
        say(out, f"metastore: {home} holds the pinned files")
        return home
    say(out, f"metastore: resolving the service's jars with Maven into {home}")
    started = time.monotonic()
    maven_package(POM, "metastore.dir", home)
    problems = check_home(home)
    if problems:
        raise MetastoreError(
            f"Maven resolved files that are not as pinned in {PINS}: {'; '.join(problems)}. "
            "If the pom changed on purpose, write the new sha256 list (see the pom's header)."
        )
    size = sum((home / name).stat().st_size for name in pins() if name.endswith(".jar"))
    say(
        out,
        f"metastore: {sum(name.endswith('.jar') for name in pins())} jars ({size / 2**20:.1f} MiB) in {home}, "
        f"sha256 as pinned, in {time.monotonic() - started:.1f}s",
    )
    return home
