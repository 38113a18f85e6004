"""Sessions by event time per user (python_jobs.core.sessionize), kept exact incrementally.

Each run re-sessionizes only the users and times touched by silver changes
since the last run and merges the new and changed sessions on session_id;
sessions that merged into another, split or lost their events come back as
tombstones (event_count 0), which the post-hook deletes.
"""

from python_jobs.core.sessionize import update_sessions


def model(dbt, session):
    # A session keeps its id only with its start: its match lies on the same day.
    dbt.config(
        materialized="incremental",
        incremental_strategy="merge",
        unique_key="session_id",
        merge_prune={"target_column": "session_start_ts", "source_column": "session_start_ts", "type": "timestamp"},
        # No Python at all when silver_events and silver_event_changes are at the
        # versions the last run read (adapter/.../materializations/incremental.sql).
        skip_if_inputs_unchanged=True,
        as_of_dependent=False,
    )
    current = session.table(str(dbt.this)) if dbt.is_incremental else None
    return update_sessions(
        current,
        dbt.ref("silver_events"),
        dbt.ref("silver_event_changes"),
        float(dbt.config.meta_get("session_gap_minutes")),
    )
