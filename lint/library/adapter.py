"""Stand-in for dbt's `adapter` when sqlfluff renders Jinja: the latecomer
adapter's methods that models reach while rendering, from the same typed core
(python_jobs/core/run_vars.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from python_jobs.core import run_vars  # noqa: E402


def backfill_window(start, end, reason, mode):
    window = run_vars.backfill_window(start, end, reason, mode)
    return window.as_macro_value() if window else None


def backfill_mode(mode):
    return run_vars.backfill_mode(mode)


def as_of_problem(text, format_only=False):
    return (run_vars.as_of_format_problem if format_only else run_vars.as_of_problem)(str(text))
