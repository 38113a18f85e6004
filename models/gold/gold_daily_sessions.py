"""Sessions, conversion and duration per session date and source (python_jobs.core.sessionize)."""

from python_jobs.core.sessionize import daily_sessions


def model(dbt, session):
    dbt.config(materialized="recomputed")
    return daily_sessions(dbt.ref("silver_sessions"))
