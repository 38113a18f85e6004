{#- Table versions through the table format: the only place with format-specific
    SQL for version history, time travel, restore, retention and maintenance.
    Every public macro dispatches on target.table_format (iceberg | delta).

    Conventions shared by both formats:
    - a version id is a string of digits: an Iceberg snapshot id or a Delta
      table version; it goes into `version as of` unquoted (a quoted value is
      an Iceberg branch or tag name);
    - times are UTC strings 'yyyy-MM-dd HH:mm:ss.SSSSSS' (the session time zone
      is UTC), so they order as text like the instants they name;
    - latecomer__table_versions() lists the table's states in the order they became
      current, oldest first: `committed_at` is when the version became the
      table's state (what `timestamp as of` resolves against), `created_at`
      when its data was written (they differ for an Iceberg snapshot made
      current again by a restore). -#}

{% macro latecomer__versions_table_format() -%}
    {%- set table_format = target.table_format | default('iceberg', true) | lower -%}
    {%- if table_format not in ('iceberg', 'delta') -%}
        {{ exceptions.raise_compiler_error(
            "Table versions need target.table_format 'iceberg' or 'delta', got '" ~ table_format ~ "'") }}
    {%- endif -%}
    {{ return(table_format) }}
{%- endmacro %}

{#- Name of the Iceberg catalog holding the project's tables (procedures are
    called through it). -#}
{% macro latecomer__iceberg_catalog() -%}
    {{ return('spark_catalog') }}
{%- endmacro %}

{% macro latecomer__iceberg_table_name(relation) -%}
    {{ return(relation.schema ~ '.' ~ relation.identifier) }}
{%- endmacro %}

{% macro latecomer__version_ts_format() -%}
    {{ return("yyyy-MM-dd HH:mm:ss.SSSSSS") }}
{%- endmacro %}

{#- A version id, checked: digits only. -#}
{% macro latecomer__checked_version_id(version) -%}
    {%- set version = (version | string) | trim -%}
    {%- if not modules.re.match('^[0-9]+$', version) -%}
        {{ exceptions.raise_compiler_error(
            "A table version id is a number (Iceberg snapshot id or Delta version), got '" ~ version ~ "'") }}
    {%- endif -%}
    {{ return(version) }}
{%- endmacro %}

{#- A point in time, checked: ISO-8601 date or date-time, with an optional UTC
    offset (no offset: UTC). Returned as a SQL timestamp expression. -#}
{% macro latecomer__checked_version_timestamp(value) -%}
    {%- set value = (value | string) | trim -%}
    {%- set pattern = '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$' -%}
    {%- if not modules.re.match(pattern, value) -%}
        {{ exceptions.raise_compiler_error(
            "A point in time is ISO-8601 (2024-01-22T10:00:00+00:00; UTC without an offset), got '" ~ value ~ "'") }}
    {%- endif -%}
    {{ return("cast('" ~ value ~ "' as timestamp)") }}
{%- endmacro %}

{#- ---------------------------------------------------------------- history -#}

{% macro latecomer__table_versions(relation) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {{ return(latecomer__delta_table_versions(relation)) }}
    {%- endif -%}
    {{ return(latecomer__iceberg_table_versions(relation)) }}
{%- endmacro %}

{#- Iceberg: the snapshot log (`history`: what time travel by timestamp reads)
    joined to `snapshots` for the operation. A snapshot made current again by
    set_current_snapshot / rollback appears again, as operation 'restore'. -#}
{% macro latecomer__iceberg_table_versions(relation) -%}
    {%- set sql -%}
        with snapshot_log as (
            select
                snapshot_id,
                made_current_at,
                monotonically_increasing_id() as log_position
            from {{ relation }}.history
        )

        select
            cast(snapshot_log.snapshot_id as string) as version,
            date_format(snapshot_log.made_current_at, '{{ latecomer__version_ts_format() }}') as committed_at,
            date_format(coalesce(snapshots.committed_at, snapshot_log.made_current_at), '{{ latecomer__version_ts_format() }}')
                as created_at,
            coalesce(snapshots.operation, 'unknown') as operation
        from snapshot_log
        left join {{ relation }}.snapshots as snapshots
            on snapshot_log.snapshot_id = snapshots.snapshot_id
        order by snapshot_log.log_position
    {%- endset -%}
    {#- python_jobs/core/versions/records.py: iceberg_versions -#}
    {{ return(adapter.iceberg_versions(run_query(sql))) }}
{%- endmacro %}

{#- Delta: DESCRIBE HISTORY (newest first), reversed. Every commit, a RESTORE
    included, is a new version. DESCRIBE HISTORY cannot be a subquery, so its
    timestamps are formatted in Python: a session returns datetimes in the
    driver's local time (converted to UTC through the epoch), a Thrift server
    strings in its session time zone (UTC, python_jobs/core/spark_config.py). -#}
{% macro latecomer__delta_table_versions(relation) -%}
    {#- python_jobs/core/versions/records.py: delta_versions -#}
    {{ return(adapter.delta_versions(run_query('describe history ' ~ relation))) }}
{%- endmacro %}

{#- Delta: the table's last commit, as the rows of DESCRIBE HISTORY ... LIMIT 1
    (version, operation, userMetadata). On a session target the adapter reads
    it from the table's log, without a query (adapter.delta_last_commit);
    elsewhere, or when it cannot, DESCRIBE HISTORY answers. -#}
{% macro latecomer__delta_last_commit(relation) -%}
    {{ return(adapter.delta_last_commit(relation) or run_query('describe history ' ~ relation ~ ' limit 1').rows) }}
{%- endmacro %}

{#- The table's version as this run reads it: on Iceberg, the head of the
    run branch once this run staged a write to the table
    (macros/publication/staged_publication.sql), else main's current snapshot
    (from `properties`, the latecomer__table_properties() already read, when
    given; else from the session's catalog, on a session target, or from
    SHOW TBLPROPERTIES). -#}
{% macro latecomer__current_version(relation, properties=none) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {%- set rows = latecomer__delta_last_commit(relation) -%}
        {{ return('%d' % (rows[0]['version'] | int) if rows | length > 0 else none) }}
    {%- endif -%}
    {%- if adapter.is_staged(relation) -%}
        {%- set head = adapter.iceberg_current_snapshot(relation, adapter.run_branch()) -%}
        {%- if head is none -%}
            {%- set rows = run_query("select cast(snapshot_id as string) from " ~ relation ~ ".refs where name = '"
                ~ adapter.run_branch() ~ "'").rows -%}
            {%- set head = rows[0][0] if rows | length > 0 else '' -%}
        {%- endif -%}
        {%- if head -%}
            {{ return(head) }}
        {%- endif -%}
    {%- endif -%}
    {%- if properties is not none -%}
        {%- set value = properties.get('current-snapshot-id') | string -%}
    {%- else -%}
        {%- set value = adapter.iceberg_current_snapshot(relation) -%}
        {%- if value is none -%}
            {%- set rows = run_query("show tblproperties " ~ relation ~ " ('current-snapshot-id')").rows -%}
            {%- set value = (rows[0][1] | string) if rows | length > 0 else '' -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(value if modules.re.match('^[0-9]+$', value) else none) }}
{%- endmacro %}

{#- ------------------------------------------------------------ time travel -#}

{#- Spark 3.5 gives both formats the same time-travel syntax; the format is
    still checked, so an unsupported one fails here. -#}
{% macro latecomer__relation_at_version(relation, version) -%}
    {%- do latecomer__versions_table_format() -%}
    {{ return(relation ~ ' version as of ' ~ latecomer__checked_version_id(version)) }}
{%- endmacro %}

{% macro latecomer__relation_at_time(relation, timestamp) -%}
    {%- do latecomer__versions_table_format() -%}
    {{ return(relation ~ ' timestamp as of ' ~ latecomer__checked_version_timestamp(timestamp)) }}
{%- endmacro %}

{#- ---------------------------------------------------------------- restore -#}

{#- Makes `version` the table's current state. Iceberg: set_current_snapshot
    (unlike rollback_to_snapshot it also accepts a snapshot that is no longer
    an ancestor, i.e. undoing a restore); no data is rewritten and the snapshot
    log gets an entry. Delta: RESTORE, which commits a new version. -#}
{% macro latecomer__restore_relation(relation, version) -%}
    {%- set version = latecomer__checked_version_id(version) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {%- do run_query('restore table ' ~ relation ~ ' to version as of ' ~ version) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do run_query(
        'call ' ~ latecomer__iceberg_catalog() ~ ".system.set_current_snapshot(table => '" ~ latecomer__iceberg_table_name(relation)
        ~ "', snapshot_id => " ~ version ~ ")") -%}
{%- endmacro %}

{#- -------------------------------------------------------------- retention -#}

{#- Hours every version must stay readable: the longest watermark tier (the
    last of var watermark_tiers) plus var version_retention_margin_hours. -#}
{% macro latecomer__version_retention_hours() -%}
    {{ return((last_watermark_hours() | int) + (var('version_retention_margin_hours', 168) | int)) }}
{%- endmacro %}

{#- Table properties keeping every version inside the retention horizon. -#}
{% macro latecomer__retention_tblproperties() -%}
    {%- set hours = latecomer__version_retention_hours() -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {{ return({
            'delta.logRetentionDuration': 'interval ' ~ hours ~ ' hours',
            'delta.deletedFileRetentionDuration': 'interval ' ~ hours ~ ' hours',
        }) }}
    {%- endif -%}
    {{ return({
        'history.expire.max-snapshot-age-ms': (hours * 3600 * 1000) | string,
        'history.expire.min-snapshots-to-keep': '2',
    }) }}
{%- endmacro %}

{#- ------------------------------------------------------------ maintenance -#}

{#- Data-file compaction. Returns {rewritten_files, added_files} (none when the
    format does not say). -#}
{% macro latecomer__compact_table(relation, dry_run=false) -%}
    {%- if dry_run -%}
        {{ return({'rewritten_files': none, 'added_files': none}) }}
    {%- endif -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {%- do run_query('optimize ' ~ relation) -%}
        {{ return({'rewritten_files': none, 'added_files': none}) }}
    {%- endif -%}
    {%- set row = run_query(
        'call ' ~ latecomer__iceberg_catalog() ~ ".system.rewrite_data_files(table => '" ~ latecomer__iceberg_table_name(relation) ~ "')"
    ).rows[0] -%}
    {{ return({'rewritten_files': row['rewritten_data_files_count'] | int, 'added_files': row['added_data_files_count'] | int}) }}
{%- endmacro %}

{#- Expires versions created before `expire_before` (a UTC time string), the
    current one and the last history.expire.min-snapshots-to-keep excepted.
    Iceberg: expire_snapshots (dry run: counts the candidates). Delta: VACUUM
    RETAIN <horizon> HOURS, which deletes data files removed from the table
    before the horizon, so the version current when the horizon began keeps its
    files (old log entries go by delta.logRetentionDuration at checkpoints).
    Returns {candidates, deleted_files}. -#}
{% macro latecomer__expire_versions(relation, expire_before, dry_run=false) -%}
    {%- set before = "timestamp '" ~ expire_before ~ "'" -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {%- set rows = run_query(
            'vacuum ' ~ relation ~ ' retain ' ~ latecomer__version_retention_hours() ~ ' hours' ~ (' dry run' if dry_run else '')
        ).rows -%}
        {{ return({'candidates': none, 'deleted_files': rows | length if dry_run else none}) }}
    {%- endif -%}
    {%- set candidates = run_query(
        "select count(*) as n from " ~ relation ~ ".snapshots where committed_at < " ~ before
        ~ " and cast(snapshot_id as string) != '" ~ latecomer__current_version(relation) ~ "'").rows[0]['n'] | int -%}
    {%- if dry_run or candidates == 0 -%}
        {{ return({'candidates': candidates, 'deleted_files': 0}) }}
    {%- endif -%}
    {%- set row = run_query(
        'call ' ~ latecomer__iceberg_catalog() ~ ".system.expire_snapshots(table => '" ~ latecomer__iceberg_table_name(relation)
        ~ "', older_than => " ~ before
        ~ ', retain_last => ' ~ latecomer__retention_tblproperties()['history.expire.min-snapshots-to-keep'] ~ ')'
    ).rows[0] -%}
    {{ return({
        'candidates': candidates,
        'deleted_files': (row['deleted_data_files_count'] | int) + (row['deleted_manifest_files_count'] | int)
            + (row['deleted_manifest_lists_count'] | int),
    }) }}
{%- endmacro %}

{#- Deletes files under the table's location that no version references and
    that are older than `older_than` (a UTC time string). Iceberg:
    latecomer__remove_orphan_files (which itself refuses cutoffs younger than 24 h).
    Delta: VACUUM (latecomer__expire_versions) already does it. Returns {orphan_files}. -#}
{% macro latecomer__remove_orphan_files(relation, older_than, dry_run=false) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {{ return({'orphan_files': none}) }}
    {%- endif -%}
    {%- set rows = run_query(
        'call ' ~ latecomer__iceberg_catalog() ~ ".system.remove_orphan_files(table => '" ~ latecomer__iceberg_table_name(relation)
        ~ "', older_than => timestamp '" ~ older_than ~ "', dry_run => " ~ ('true' if dry_run else 'false') ~ ')'
    ).rows -%}
    {{ return({'orphan_files': rows | length}) }}
{%- endmacro %}
