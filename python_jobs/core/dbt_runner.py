"""dbt in this process, the one way the sample run, the benchmark and the tests invoke it.

In-process dbt shares the process's Spark session with the caller (session
targets reuse it), so the data a caller lands and the tables dbt builds are
seen by both. ``LATECOMER_STATE_DIR`` must be set before Spark starts, so
callers set it themselves, before they first call Spark; the runner only
exports the schema (``LATECOMER_SCHEMA``), which ``profiles.yml`` reads on
each invocation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Imported here, not on first use: a caller timing invoke() (the benchmark)
# must not count dbt's import in its first build.
from dbt.cli.main import dbtRunner, dbtRunnerResult

if TYPE_CHECKING:
    from dbt.contracts.graph.manifest import Manifest
    from dbt_common.events.base_types import EventMsg

SCHEMA_ENV = "LATECOMER_SCHEMA"
# The run's as_of, read by macros/watermarks/processing_time.sql (as_of_given).
AS_OF_ENV = "LATECOMER_AS_OF"


class DbtRunError(RuntimeError):
    """A dbt invocation failed; ``failures`` lists the failing nodes (or dbt's exception)."""

    def __init__(self, args: Sequence[str], failures: list[str]) -> None:
        super().__init__(f"dbt {' '.join(args)} failed: {failures}")
        self.failures = failures


def failures(result: dbtRunnerResult) -> list[str]:
    """``name: message`` of every node that errored or failed; dbt's exception when
    there are no node results."""
    if result.exception is not None or not hasattr(result.result, "__iter__"):
        return [str(result.exception)]
    return [
        f"{r.node.name}: {r.message}"
        for r in result.result  # type: ignore[union-attr]
        if r.status in ("error", "fail")
    ]


@dataclass(frozen=True)
class DbtRunner:
    """A dbt project with its profile, target and output folders.

    ``profiles_dir`` defaults to ``<project_dir>/profiles``; ``target``,
    ``target_path`` and ``log_path`` to dbt's own defaults. ``schema``, when
    set, is exported as ``LATECOMER_SCHEMA`` before every invocation.
    """

    project_dir: Path
    profiles_dir: Path | None = None
    target: str | None = None
    target_path: Path | None = None
    log_path: Path | None = None
    schema: str | None = None

    def command(self, *args: str, vars: dict[str, Any] | None = None) -> list[str]:
        """The dbt command line: ``args``, then the project's flags, then ``--vars``."""
        cli = [
            *args,
            "--project-dir",
            str(self.project_dir),
            "--profiles-dir",
            str(self.profiles_dir or self.project_dir / "profiles"),
        ]
        if self.target:
            cli += ["--target", self.target]
        if self.target_path:
            cli += ["--target-path", str(self.target_path)]
        if self.log_path:
            cli += ["--log-path", str(self.log_path)]
        if vars:
            cli += ["--vars", json.dumps(vars)]
        return cli

    def invoke(
        self,
        *args: str,
        vars: dict[str, Any] | None = None,
        callbacks: Sequence[Callable[[EventMsg], None]] = (),
        check: bool = True,
        manifest: Manifest | None = None,
    ) -> dbtRunnerResult:
        """Run ``dbt *args`` in this process and return dbt's result.

        ``callbacks`` receive every dbt event. With ``check``, a failed
        invocation raises :class:`DbtRunError` naming the failing nodes.

        An ``as_of`` in ``vars`` reaches dbt as ``LATECOMER_AS_OF``, set for
        this invocation only: the same clock, but dbt's vars stay the same from
        one build to the next, so it keeps its partial parse instead of parsing
        the whole project again.

        With ``manifest`` (a parsed project, ``dbt parse``'s result), dbt
        neither parses nor reads its partial parse, and writes no
        manifest.json: the caller answers for the manifest being that of
        this project, target, schema and environment.
        """
        if self.schema is not None:
            os.environ[SCHEMA_ENV] = self.schema
        other_vars = dict(vars or {})
        as_of = other_vars.pop("as_of", None)
        saved = os.environ.get(AS_OF_ENV)
        if as_of is not None:
            os.environ[AS_OF_ENV] = str(as_of)
        try:
            runner = dbtRunner(manifest=manifest, callbacks=list(callbacks))
            result = runner.invoke(self.command(*args, vars=other_vars))
        finally:
            if saved is None:
                os.environ.pop(AS_OF_ENV, None)
            else:
                os.environ[AS_OF_ENV] = saved
        if check and not result.success:
            raise DbtRunError(args, failures(result))
        return result
