"""What the macros hand the adapter's methods, as plain Python, and the error those methods raise.

The methods exposed to Jinja receive ``run_query`` results (agate tables),
their rows, or lists of dicts, and answer a request they cannot serve with a
dbt error whose message is shown as written. These helpers are shared by the
adapter's modules (``versioning``, ``publishing``, ``reporting``,
``run_context``) and are private to this package.
"""

from __future__ import annotations

from typing import Any

from dbt_common.exceptions import DbtRuntimeError


def _records(rows: Any) -> list[dict[str, Any]]:
    """Plain dicts from an agate table (a run_query result), its rows, or a list of dicts."""
    if rows is None:
        return []
    return [dict(row.items()) for row in getattr(rows, "rows", rows)]


def _failed(error: Exception) -> DbtRuntimeError:
    return DbtRuntimeError(str(error))
