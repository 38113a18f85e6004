{#- dbt run-operation maintain_tables [--args '{dry_run: true}']

    Maintenance of every table in the silver, gold and audit schemas (models,
    the logs macros write there, table_restores) within the retention horizon
    (latecomer__version_retention_hours(): the longest watermark tier plus a margin). Per
    table: set missing retention properties, drop the run branches of builds
    killed before their end (staged_publication.sql), compact data files, expire
    versions created before the horizon, delete orphan files older than it.
    The version that was current when the horizon began and every later one
    stay readable, so time travel to any time inside the horizon keeps
    working; after expiry this is checked, and a table that lost a protected
    version fails the command.

    Arguments: dry_run (report what would change, change nothing), models (only
    these table names), now (the time the horizon is measured back from,
    default the current time; a later time simulates its passing).

    A shim: this macro runs the SQL (macros/formats/versions.sql); which
    versions are protected, what expiry lost, the totals and every line
    printed come from python_jobs/core/versions/retention.py (adapter.retention_boundary,
    table_maintenance, maintenance_header, maintenance_summary). -#}
{% macro maintain_tables(dry_run=false, models=none, now=none) %}
    {%- set dry_run = (dry_run | string | lower) in ('true', '1', 'yes') -%}
    {%- set models = [models] if models is string else models -%}
    {%- if not dry_run -%}
        {%- do acquire_run_lock('dbt run-operation maintain_tables', 'maintain') -%}
    {%- endif -%}
    {%- set hours = latecomer__version_retention_hours() -%}
    {%- set now_sql = latecomer__checked_version_timestamp(now) if now is not none else 'current_timestamp()' -%}
    {%- set horizon_sql = now_sql ~ ' - make_dt_interval(0, ' ~ hours ~ ', 0, 0)' -%}
    {%- set times = run_query(
        "select date_format(" ~ horizon_sql ~ ", 'yyyy-MM-dd HH:mm:ss.SSSSSS') as cutoff, "
        ~ "date_format(least(" ~ horizon_sql ~ ", current_timestamp() - make_dt_interval(0, 25, 0, 0)), "
        ~ "'yyyy-MM-dd HH:mm:ss.SSSSSS') as orphan_cutoff").rows[0] -%}
    {%- set cutoff = times['cutoff'] -%}
    {%- set tables = latecomer__versioned_tables(models) -%}
    {%- set totals = {} -%}
    {{ log(adapter.maintenance_header(dry_run, tables | length, target.table_format, hours, cutoff, now), info=true) }}
    {%- for table in tables -%}
        {%- set relation = table.relation -%}
        {{ log('maintain_tables [' ~ loop.index ~ '/' ~ loop.length ~ '] ' ~ relation ~ ' ...', info=true) }}
        {%- set changed_properties = latecomer__ensure_retention_tblproperties(relation, dry_run) -%}
        {%- if latecomer__current_version(relation) is none -%}
            {%- set done = adapter.table_maintenance(totals, relation | string, dry_run, changed_properties) -%}
        {%- else -%}
            {%- do latecomer__drop_stale_run_branches(relation, dry_run) -%}
            {%- set compaction = latecomer__compact_table(relation, dry_run) -%}
            {%- set versions = latecomer__table_versions(relation) -%}
            {%- set boundary = latecomer__retention_boundary(versions, cutoff) -%}
            {%- set expiry = latecomer__expire_versions(relation, boundary.expire_before, dry_run) -%}
            {%- set orphans = latecomer__remove_orphan_files(relation, times['orphan_cutoff'], dry_run) -%}
            {%- set versions_after = none if dry_run else latecomer__table_versions(relation) -%}
            {%- set done = adapter.table_maintenance(totals, relation | string, dry_run, changed_properties,
                compaction, versions, boundary, expiry, orphans, versions_after) -%}
        {%- endif -%}
        {%- if done.error -%}{{ exceptions.raise_compiler_error(done.error) }}{%- endif -%}
        {%- do totals.update(done.totals) -%}
        {{ log(done.line, info=true) }}
    {%- endfor -%}
    {{ log(adapter.maintenance_summary(totals, dry_run, tables | length, cutoff), info=true) }}
    {%- do release_run_lock() -%}
{% endmacro %}

{#- Sets latecomer__retention_tblproperties() on an existing table where they differ.
    Returns the keys set (or that would be, on a dry run). -#}
{% macro latecomer__ensure_retention_tblproperties(relation, dry_run=false) -%}
    {%- set changed = adapter.retention_properties_to_set(
        latecomer__retention_tblproperties(), run_query('show tblproperties ' ~ relation)) -%}
    {%- if changed and not dry_run -%}
        {#- statement, not run_query: an ALTER returns no result set on Thrift. -#}
        {%- call statement('set_retention_tblproperties') -%}
            alter table {{ relation }} set tblproperties ({{ latecomer__tblproperties_assignments(changed) }})
        {%- endcall -%}
    {%- endif -%}
    {{ return(changed.keys() | list) }}
{%- endmacro %}
