"""Value first arrived per source, metric, event date and first arrival, kept incrementally
(python_jobs.core.completeness.update_arrival_values): the completeness models read this
small table instead of silver_events."""

from python_jobs.core.completeness import update_arrival_values


def model(dbt, session):
    dbt.config(
        materialized="incremental",
        incremental_strategy="merge",
        unique_key=["source_system", "metric", "event_date", "first_arrival_ts"],
        partition_by=["event_date"],
        merge_prune={"target_column": "event_date", "source_column": "event_date"},
        # No Python at all when silver_events and silver_event_changes are at the
        # versions the last run read (adapter/.../materializations/incremental.sql).
        skip_if_inputs_unchanged=True,
        as_of_dependent=False,
    )
    current = session.table(str(dbt.this)) if dbt.is_incremental else None
    return update_arrival_values(current, dbt.ref("silver_events"), dbt.ref("silver_event_changes"))
