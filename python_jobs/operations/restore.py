"""Restore one restated gold table to an earlier version, for a re-run (``make restore``).

    python -m python_jobs.operations.restore --model gold_daily_revenue --version ID --reason "why"
    python -m python_jobs.operations.restore --model gold_daily_revenue --as-of-time 2024-01-22T00:00:00Z --reason "why"
    make restore MODEL=gold_daily_revenue VERSION=ID REASON="why"

Runs ``dbt run-operation restore_table`` (``adapter/dbt/include/latecomer/macros/versions/restore_table.sql``)
in this process through :mod:`python_jobs.operations.run_operation`. Each
option defaults to an environment variable (:data:`ENV`), which is how
``make restore`` hands over MODEL, VERSION, AS_OF_TIME, INVOCATION_ID and
REASON: the values never become shell or make text, and they reach dbt as
YAML double-quoted strings with every special character escaped, so a reason
holding quotes, ``$``, backticks or ``;`` is recorded as written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from python_jobs.operations import run_operation

ENV = run_operation.OPERATIONS["restore_table"]


def main(argv: Sequence[str] | None = None) -> int:
    return run_operation.run("restore_table", argv, tool="restore", description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
