"""Fetch the table formats' jars from the Maven registry and check their sha256.

    python -m python_jobs.operations.fetch_jars   (make install runs it)

Each jar of :data:`python_jobs.core.spark_config.JARS` (Iceberg's Spark
runtime, Delta's ``delta-spark`` and ``delta-storage``, Spark's Kafka
connector and its dependencies), at its pinned
version, goes into the jar folder (``LATECOMER_JARS_DIR``, default
``jvm/jars``, git-ignored), where the sessions, the Thrift server and the
cluster driver find it. A jar already there with its pinned sha256 is not
downloaded again; one with another sha256 is an error naming the file (it
is not replaced). A download goes to a ``.part`` file and is renamed only
once its sha256 matches, so an interrupted or altered download never leaves
a jar behind.

``LATECOMER_MAVEN_REPOSITORY`` names a mirror of Maven Central (default
https://repo1.maven.org/maven2); HTTPS proxies come from ``https_proxy``. A
machine that cannot reach the registry is told which files to put in which
folder by hand; running this again then checks them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from python_jobs.core.spark_config import JARS, MAVEN_REPOSITORY, Jar, jar_urls, jars_dir

TIMEOUT_S = 60
CHUNK = 1 << 20

# Opens a URL for reading; urllib's by default, a stand-in in the tests.
Opener = Callable[[str], BinaryIO]


class FetchError(RuntimeError):
    """A jar could not be fetched or checked; the message says which and what to do."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count / 2**10:.0f} KiB"


def repository() -> str:
    return os.environ.get("LATECOMER_MAVEN_REPOSITORY") or MAVEN_REPOSITORY


def open_url(url: str) -> BinaryIO:
    return urllib.request.urlopen(url, timeout=TIMEOUT_S)


class Unreachable(Exception):
    """The registry did not send a jar: no connection, a refusal (HTTP error) or a broken transfer."""


def reason(exc: OSError) -> str:
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return str(exc.reason)
    return str(exc)


def check(jar: Jar, path: Path) -> None:
    """Fail, naming the file, when ``path`` does not hold ``jar``'s pinned bytes."""
    found = sha256_of(path)
    if found != jar.sha256:
        raise FetchError(
            f"{path} has sha256 {found}, not the pinned {jar.sha256} of {jar.coordinates}: "
            "delete it and run `python -m python_jobs.operations.fetch_jars` again."
        )


def download(jar: Jar, path: Path, repo: str, opener: Opener) -> None:
    """Stream ``jar`` from ``repo`` to ``path`` through a ``.part`` file, checking its sha256.

    Raises :class:`Unreachable` when the registry does not send it.
    """
    url = jar.url(repo)
    part = path.with_name(path.name + ".part")
    digest = hashlib.sha256()
    try:
        with part.open("wb") as handle:
            try:
                response = opener(url)
            except OSError as exc:
                raise Unreachable(f"{url}: {reason(exc)}") from None
            with response:
                while True:
                    try:
                        chunk = response.read(CHUNK)
                    except OSError as exc:
                        raise Unreachable(f"{url}: {reason(exc)}") from None
                    if not chunk:
                        break
                    digest.update(chunk)
                    handle.write(chunk)
        if digest.hexdigest() != jar.sha256:
            raise FetchError(
                f"{url} sent a file with sha256 {digest.hexdigest()}, not the pinned {jar.sha256} "
                f"of {jar.coordinates}; nothing was written to {path}."
            )
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)


def fetch(
    jars: Iterable[Jar] = JARS,
    folder: Path | None = None,
    repo: str | None = None,
    opener: Opener = open_url,
    say: Callable[[str], None] = print,
) -> list[Path]:
    """Make ``folder`` hold every jar of ``jars``, checked; the paths of the jars."""
    folder = folder or jars_dir()
    repo = repo or repository()
    folder.mkdir(parents=True, exist_ok=True)
    jars = list(jars)
    for jar in jars:
        path = folder / jar.file_name
        if path.exists():
            check(jar, path)
            continue
        try:
            download(jar, path, repo, opener)
        except Unreachable as exc:
            missing = [other for other in jars if not (folder / other.file_name).exists()]
            raise FetchError(
                f"Cannot fetch {jar.coordinates} from the Maven registry ({exc}). On a machine that "
                f"cannot reach it, download these jars into {folder} (or into a folder named by "
                "LATECOMER_JARS_DIR), then run `python -m python_jobs.operations.fetch_jars` again "
                "to check their sha256:\n" + jar_urls(missing)
            ) from None
        say(f"fetch_jars: {jar.file_name} ({size(path.stat().st_size)}) fetched from {repo}")
    say(f"fetch_jars: {len(jars)} jars in {folder}, sha256 as pinned")
    return [folder / jar.file_name for jar in jars]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fetch_jars",
        description="Fetch the pinned Iceberg, Delta and Kafka connector jars into LATECOMER_JARS_DIR "
        "(default jvm/jars), checking their sha256; jars already there are checked, not fetched again.",
    )
    parser.parse_args(argv)
    try:
        fetch()
    except (FetchError, OSError) as error:
        print(f"fetch_jars: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
