"""Staged publication: the gold tables of a run become visible together, or not at all.

A build writes every table whose model has ``meta.staged_publication`` (the
gold and audit folders, and the change manifest) to a branch of its own, the
run branch (:func:`run_branch`), instead of the tables' ``main``:

* on-run-start sets the Spark session's ``spark.wap.branch`` to the run
  branch (Iceberg write-audit-publish). Such tables carry the table property
  ``write.wap.enabled``, so their writes (MERGE, INSERT, DELETE, a Python
  model's overwrite) commit to the branch, which the first write creates
  from ``main``. Every other table (bronze, silver, monitoring) is written
  as before;
* reads in the run see the branch wherever it exists: the rollups read the
  daily rows this run staged, and the publication gate and the dbt data
  tests judge the staged state;
* consumers (a Thrift client, a dashboard, another session) read ``main``
  and see nothing of the run until on-run-end;
* on-run-end decides (:func:`decide`) from the run's results: when every
  node succeeded (a test that only warns counts as passed), every staged
  table's ``main`` is fast-forwarded to the run branch, one table after the
  other in a few hundred milliseconds in all; otherwise the branches are
  dropped and ``main`` stays as it was everywhere;
* the branch is dropped in both cases. A run killed before its on-run-end
  leaves its branch behind: its name belongs to that run only, so no later
  run reads or publishes it, and ``maintain_tables`` removes it
  (:func:`stale_branches`).

What is not staged: a table's first build and ``--full-refresh`` create or
replace it on ``main`` (there is nothing published to protect, or the
operator asked for a rebuild).

Delta has no branches. On a Delta target a run tags every commit it makes
with its run name (Delta's ``commitInfo.userMetadata``, the same name as the
run branch, :mod:`python_jobs.core.commit_metadata`) and writes the tables in place; on-run-end, when the run is not
published, every staged table it wrote is put back with ``RESTORE`` to its
last version before the run's first commit (:func:`version_before_run`), so
the published state after a failed run is the same as on Iceberg. What
differs: a reader during the run sees each table as it is written, and a run
killed before its on-run-end leaves its writes in place until the next build
recomputes them (docs/staged-publication.md, format by format).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from python_jobs.core.commit_metadata import USER_METADATA, run_of_commit

# Every run branch's name starts with this; nothing else may.
BRANCH_PREFIX = "latecomer_run_"
# The Spark setting Delta copies into each commit's userMetadata: a run's name on Delta.
DELTA_RUN_TAG = USER_METADATA
# dbt result statuses of a node that did what it was asked (warn: a data test
# whose failures are below its error threshold; no-op: a node with nothing to
# run, such as an exposure in `dbt build`).
SUCCEEDED = frozenset({"success", "pass", "warn", "no-op"})
TABLE_PROPERTY = "write.wap.enabled"


def run_branch(invocation_id: str) -> str:
    """The branch one dbt invocation stages its writes on."""
    token = re.sub(r"[^0-9a-z]", "", str(invocation_id).lower())
    if not token:
        raise ValueError(f"an invocation id names the run branch, got {invocation_id!r}")
    return BRANCH_PREFIX + token


@dataclass(frozen=True)
class Decision:
    """Whether a run's staged tables are published, and why not."""

    publish: bool
    # The nodes that stopped it: "<name> (<status>)", in the run's order.
    holding_back: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if self.publish:
            return "every node succeeded"
        shown = ", ".join(self.holding_back[:5])
        more = len(self.holding_back) - 5
        return f"held back by {shown}" + (f" and {more} more" if more > 0 else "")


def decide(results: Iterable[tuple[str, str]]) -> Decision:
    """Publish when every ``(node name, status)`` of the run succeeded.

    A failing or erroring node (a model, a data test, a snapshot, a seed) and
    a node skipped because something before it failed all hold the whole run
    back: the tables would otherwise disagree with each other, or with a
    test that judged them.
    """
    holding_back = tuple(f"{name} ({status})" for name, status in results if str(status).lower() not in SUCCEEDED)
    return Decision(publish=not holding_back, holding_back=holding_back)


def stale_branches(ref_names: Iterable[str], current: str | None = None) -> list[str]:
    """Run branches among a table's refs that no run will publish: every one but ``current``."""
    return sorted(name for name in ref_names if name.startswith(BRANCH_PREFIX) and name != current)


def version_before_run(history: Iterable[tuple[int, str | None]], run: str) -> int | None:
    """The version a Delta table goes back to when run ``run`` is not published.

    ``history``: the table's ``(version, userMetadata)`` pairs (DESCRIBE
    HISTORY; a commit's run is read with
    :func:`~python_jobs.core.commit_metadata.run_of_commit`). The last version
    before the run's first commit to the table; None when the run made no
    commit to it, or created it (nothing was published before).
    """
    versions = sorted((int(version), run_of_commit(tag)) for version, tag in history)
    first = next((version for version, tag in versions if tag == run), None)
    if first is None:
        return None
    earlier = [version for version, _ in versions if version < first]
    return earlier[-1] if earlier else None
