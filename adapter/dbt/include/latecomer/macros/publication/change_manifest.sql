{#- Change manifest: what a run changed in published gold, row by row.

    latecomer__record_change_manifest (step 6 of the restated materialization) appends to
    <schema>_audit.gold_change_manifest one row per row of the model that this
    run wrote: its partition and key, the values before (the row's
    published_before, as restate read them) and after, the two table versions, the reason, the input high-water marks, the
    dbt invocation id and the code version (git commit). latecomer__write_change_manifest
    (on-run-end) writes the run's rows as JSON to
    target/change_manifests/<invocation_id>.json and target/change_manifest.json,
    and the run's restatement digest (adapter.restatement_digest,
    python_jobs/core/digest.py) to target/restatement_digest.{md,json}, POSTed
    to $LATECOMER_DIGEST_WEBHOOK when set. -#}

{#- Columns that describe a gold row's publication rather than its values. -#}
{% macro latecomer__publication_columns() -%}
    {{ return(['version', 'first_published_at', 'last_changed_at', 'restated_on', 'restatement_reason',
               'is_restated_after_final', 'source_changed_run_at', 'changed_run_at', 'invocation_id']) }}
{%- endmacro %}

{% macro latecomer__manifest_relation() -%}
    {{ return(target.schema ~ '_audit.gold_change_manifest') }}
{%- endmacro %}

{% macro latecomer__json_of(alias, columns) -%}
    to_json(named_struct({% for column in columns %}'{{ column }}', {{ alias }}.{{ column }}{% if not loop.last %}, {% endif %}{% endfor %}))
{%- endmacro %}

{% macro latecomer__record_change_manifest(restated, target, layout, columns, before_version, after_version) %}
    {%- set keys, partition = layout['keys'], layout['partition'] -%}
    {%- set values = [] -%}
    {%- for column in columns if column not in keys and column not in latecomer__publication_columns() -%}
        {%- do values.append(column) -%}
    {%- endfor -%}
    {%- set bronze_hwm = latecomer__bronze_high_water_mark() -%}
    {%- set code_version = adapter.code_version() -%}
    {{ log(model.name ~ ': change manifest, table version ' ~ before_version ~ ' -> ' ~ after_version, info=true) }}
    {#- Published with the gold rows it describes. -#}
    {%- do latecomer__stage_for_publication(latecomer__manifest_relation()) -%}
    {#- The run has manifest rows to report (latecomer__write_change_manifest). -#}
    {%- do adapter.memo_set('change_manifest_appended', true) -%}
    {%- call statement('record_change_manifest') -%}
    insert into {{ latecomer__manifest_relation() }}
    select
        '{{ invocation_id }}' as invocation_id,
        {{ run_ts() }} as run_started_at,
        {{ as_of_ts() }} as as_of,
        {{ latecomer__sql_string(code_version) if code_version else 'cast(null as string)' }} as code_version,
        '{{ model.name }}' as model,
        '{{ target }}' as relation,
        cast(after_rows.{{ partition }} as string) as partition_value,
        {{ latecomer__json_of('after_rows', keys) }} as row_key,
        case
            when after_rows.published_before is null then 'published'
            when {% for column in values %}after_rows.{{ column }} <=> after_rows.published_before.{{ column }}{% if not loop.last %} and {% endif %}{% endfor %}
                then 'unchanged'
            when {% for column in values if column != 'status' %}after_rows.{{ column }} <=> after_rows.published_before.{{ column }}{% if not loop.last %} and {% endif %}{% endfor %}
                then 'status'
            else 'restated'
        end as change,
        case when after_rows.published_before is not null then {{ latecomer__json_of('after_rows.published_before', values) }} end
            as before_values,
        {{ latecomer__json_of('after_rows', values) }} as after_values,
        after_rows.published_before.version as before_row_version,
        after_rows.version as after_row_version,
        {{ latecomer__sql_string(before_version) if before_version is not none else 'cast(null as string)' }} as before_table_version,
        {{ latecomer__sql_string(after_version) if after_version is not none else 'cast(null as string)' }} as after_table_version,
        after_rows.restatement_reason,
        to_json(named_struct(
            'silver_event_changes.changed_run_at', cast(after_rows.source_changed_run_at as string),
            'bronze_ingestions.ingested_at', {{ latecomer__sql_string(bronze_hwm) if bronze_hwm else 'cast(null as string)' }}
        )) as input_watermarks,
        {{ backfill_reason_sql() }} as backfill,
        {{ latecomer__sql_string(var('actor')) }} as actor
    from {{ restated }} as after_rows
    {%- endcall -%}
{% endmacro %}

{#- The newest ingestion time in bronze, read once per invocation. -#}
{% macro latecomer__bronze_high_water_mark() %}
    {%- set key = 'bronze_high_water_mark:' ~ invocation_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- do adapter.memo_set(key, run_query('select cast(max(ingested_at) as string) from '
            ~ target.schema ~ '_bronze.bronze_ingestions').columns[0].values()[0]) -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
{% endmacro %}

{#- on-run-end: the run's manifest rows as JSON under the target path. -#}
{% macro latecomer__write_change_manifest(holds=none) %}
    {%- if not execute or flags.WHICH not in ('build', 'run') -%}{{ return('') }}{%- endif -%}
    {%- if adapter.get_relation(database=none, schema=target.schema ~ '_audit', identifier='gold_change_manifest') is none -%}
        {{ return('') }}
    {%- endif -%}
    {#- Read unless no model appended to the manifest in this invocation. -#}
    {%- set table = run_query("select * from " ~ latecomer__manifest_relation() ~ " where invocation_id = '" ~ invocation_id
        ~ "' order by model, partition_value, row_key") if adapter.memo_has('change_manifest_appended') else none -%}
    {%- if table is none or table.rows | length == 0 -%}
        {%- if holds is not none and holds.rows | length > 0 -%}
            {%- do latecomer__write_restatement_digest([], holds, as_of_given() or run_started_at) -%}
        {%- endif -%}
        {{ return('') }}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- set models = {} -%}
    {%- for row in table.rows -%}
        {%- set record = {} -%}
        {%- for name in table.column_names -%}
            {%- do record.update({name: row[name]}) -%}
        {%- endfor -%}
        {%- for name in ['row_key', 'before_values', 'after_values', 'input_watermarks'] -%}
            {%- do record.update({name: fromjson(record[name]) if record[name] else none}) -%}
        {%- endfor -%}
        {%- do rows.append(record) -%}
        {%- set summary = models.setdefault(record['model'], {
            'relation': record['relation'], 'before_table_version': record['before_table_version'],
            'after_table_version': record['after_table_version'], 'partitions': [], 'rows': {}}) -%}
        {%- if record['partition_value'] not in summary['partitions'] -%}
            {%- do summary['partitions'].append(record['partition_value']) -%}
        {%- endif -%}
        {%- do summary['rows'].update({record['change']: summary['rows'].get(record['change'], 0) + 1}) -%}
    {%- endfor -%}
    {%- set first = rows[0] -%}
    {%- set manifest = {
        'invocation_id': invocation_id, 'run_started_at': first['run_started_at'], 'as_of': first['as_of'],
        'code_version': first['code_version'], 'backfill': first['backfill'], 'models': models, 'rows': rows} -%}
    {%- do adapter.write_json_artifact('change_manifests/' ~ invocation_id ~ '.json', manifest) -%}
    {%- set path = adapter.write_json_artifact('change_manifest.json', manifest) -%}
    {{ log('Change manifest: ' ~ rows | length ~ ' gold row(s) in ' ~ models | length ~ ' model(s) -> ' ~ path, info=true) }}
    {%- do latecomer__write_restatement_digest(table, holds, first['as_of']) -%}
    {{ return('') }}
{% endmacro %}

{#- The run's restatement digest (python_jobs/core/digest.py), from its
    manifest rows and its publication holds. -#}
{% macro latecomer__write_restatement_digest(manifest_rows, holds, as_of) %}
    {%- set digest = adapter.restatement_digest(manifest_rows, invocation_id, as_of | string, holds) -%}
    {{ log('Restatement digest: ' ~ digest.periods ~ ' published period(s) restated, ' ~ digest.holds
        ~ ' partition(s) held -> ' ~ digest.path ~ '; webhook ' ~ digest.webhook, info=true) }}
{% endmacro %}
