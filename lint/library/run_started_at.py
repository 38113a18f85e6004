"""Stand-in for dbt's `run_started_at` when sqlfluff renders Jinja."""

from datetime import UTC, datetime


def strftime(fmt: str) -> str:
    return datetime(2024, 1, 1, tzinfo=UTC).strftime(fmt)
