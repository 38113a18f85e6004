"""Kill an ingest and builds with SIGKILL, run again, compare with the reference.

Three of the sample's batches, each with a fault (tests/pytest/faults.py):

1. web's on-time batch: its ingest kills itself between its bronze rows'
   commit and its log row's (failpoint ingest:after_rows) and runs again.
   No build follows before the next batch.
2. web's corrections and deletions land on top; the build is killed as soon
   as silver_events has merged them, before its change log runs. No build
   follows before the next batch.
3. web's re-delivery of older versions of the same events (they lose to the
   corrections): the build is killed once gold_daily_revenue has merged on
   the run's branch, before publication.

After 3, a complete `dbt build` must succeed (its data tests too) and
silver and gold must equal the plain-Python reference of everything landed:
the three faults, one on top of the other, converge together. `make faults`
recovers after each fault, at every model boundary and at random points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from python_jobs.core.failpoints import INGEST_AFTER_ROWS
from tests.pytest.faults import Deployment, Step, run_faults, summary

AS_OF = "2024-01-21T00:00:00+00:00"
# Its drivers take the suite's format (LATECOMER_TABLE_FORMAT, LATECOMER_TARGET).
pytestmark = pytest.mark.each_format


def test_each_fault_is_followed_by_a_build_that_converges(tmp_path: Path) -> None:
    deployment = Deployment(tmp_path / "state", "faults", tmp_path)
    steps = [
        Step(1, "ingest", INGEST_AFTER_ROWS, recover=False),
        Step(5, "build", "silver_events", recover=False),
        Step(7, "build", "gold_daily_revenue"),
    ]
    faults = run_faults(deployment, steps, AS_OF)
    report = summary(faults)
    assert [f.killed for f in faults] == [True, True, True], report
    assert [(f.converged, f.rows_lost) for f in faults] == [(True, 0)] * 3, report
