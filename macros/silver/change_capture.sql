{#- Change capture that survives a crash between silver_events and its change log.

    silver_events keeps, on each row, the values its change log compares
    with (previous_*). A run can stop after its silver_events MERGE and
    before silver_event_changes takes the rows it changed. If the next run
    changed such a key again and took the previous values from the stored
    row, the change in between would never be logged, and gold would keep
    counting the key where it was before it.

    So silver_events reads how far the change log has taken it (its
    high-water mark, changed_run_at) and, for a stored row changed after it
    (unlogged), carries the row's own previous values and action over
    instead: the change log then compares with what it last saw. The MERGE
    also reads the partitions such rows live in, since their
    previous_event_date no longer names them: silver_events' config
    merge_prune says so (`unlogged`, latecomer__unlogged_partitions).

    change_log_high_water_mark()
        SQL timestamp literal up to which silver_event_changes has taken
        silver_events' changes; none on a first or full-refresh build of
        silver_events, where no row is stored (and in unit tests: override
        it there); latecomer__high_water_mark_floor() when silver_events is stored and
        its change log never was (the first build stopped between the two):
        no change is logged yet. -#}

{% macro change_log_high_water_mark() %}
    {%- if not execute or model.resource_type != 'model' or not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set change_log = adapter.get_relation(this.database, this.schema, 'silver_event_changes') -%}
    {%- if change_log is none -%}
        {{ return(latecomer__high_water_mark_floor()) }}
    {%- endif -%}
    {{ return(latecomer__high_water_mark('changed_run_at', change_log)) }}
{% endmacro %}
