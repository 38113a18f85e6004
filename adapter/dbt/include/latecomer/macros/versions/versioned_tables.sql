{#- Which tables keep versions, and how runs, times and version ids map onto
    each other. Format-agnostic: the format-specific SQL is in
    macros/formats/versions.sql. -#}

{#- dbt-spark's tblproperties clause, with latecomer__retention_tblproperties() added for
    models whose config has meta.retain_versions (silver, gold and audit, set
    in dbt_project.yml). Properties of the model's own `tblproperties` config
    win. Applies when dbt creates or replaces the table; maintain_tables sets
    the same properties on tables that already exist. -#}
{% macro latecomer__tblproperties_clause() -%}
    {%- set properties = {} -%}
    {%- if (config.get('meta') or {}).get('retain_versions') -%}
        {%- do properties.update(latecomer__retention_tblproperties()) -%}
    {%- endif -%}
    {%- do properties.update(config.get('tblproperties') or {}) -%}
    {%- if properties %}
    tblproperties ({{ latecomer__tblproperties_assignments(properties) }})
    {%- endif %}
{%- endmacro %}

{#- 'key' = 'value', ... for a tblproperties clause. -#}
{% macro latecomer__tblproperties_assignments(properties) -%}
    {%- set assignments = [] -%}
    {%- for key, value in properties.items() -%}
        {%- do assignments.append("'" ~ key ~ "' = '" ~ value ~ "'") -%}
    {%- endfor -%}
    {{ return(assignments | join(', ')) }}
{%- endmacro %}

{#- The relation of audit table `table_restores` (append-only log of
    restore_table), created if missing when `create` is true. -#}
{% macro latecomer__table_restores_relation(create=false) -%}
    {%- set relation = api.Relation.create(
        schema=generate_schema_name('audit', none) | trim, identifier='table_restores', type='table') -%}
    {%- if create and not adapter.cached_table_exists(relation | string) -%}
        {%- do adapter.create_schema(relation) -%}
        {#- statement, not run_query: a DDL returns no result set on Thrift. -#}
        {%- call statement('create_table_restores') -%}
            {{ "create table if not exists " ~ relation ~ " (
                restored_at timestamp,
                model string,
                relation string,
                from_version string,
                to_version string,
                to_version_committed_at timestamp,
                selector string,
                reason string,
                actor string,
                invocation_id string
            ) using " ~ target.table_format ~ "
            comment 'Append-only log of table restores (dbt run-operation restore_table)'
            tblproperties (" ~ latecomer__tblproperties_assignments(latecomer__retention_tblproperties()) ~ ")" }}
        {%- endcall -%}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#- The table of a model, by name; fails with the fix when the model is
    unknown, not built yet, or a view. -#}
{% macro latecomer__versioned_model_relation(model_name) -%}
    {%- set nodes = graph.nodes.values()
        | selectattr('resource_type', 'equalto', 'model')
        | selectattr('name', 'equalto', model_name | string) | list -%}
    {%- if nodes | length == 0 -%}
        {{ exceptions.raise_compiler_error("Unknown model '" ~ model_name ~ "'; pass a model name such as gold_daily_revenue.") }}
    {%- endif -%}
    {%- set node = nodes[0] -%}
    {%- set relation = adapter.get_relation(database=none, schema=node.schema, identifier=node.alias) -%}
    {%- if relation is none -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model_name ~ " has no table yet (" ~ node.schema ~ "." ~ node.alias ~ "): build it first.") }}
    {%- endif -%}
    {%- if relation.type != 'table' -%}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model_name ~ " is a " ~ relation.type ~ "; only tables have versions.") }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#- Every existing table that keeps versions: each table in the schemas of
    models with meta.retain_versions (silver, gold, audit: their models and
    the logs macros write there, table_restores included), optionally only
    those named in `models`. A list of {name, relation}, by schema and name. -#}
{% macro latecomer__versioned_tables(models=none) -%}
    {%- set schemas = [latecomer__table_restores_relation().schema] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and (node.config.meta or {}).get('retain_versions')
            and node.schema not in schemas -%}
            {%- do schemas.append(node.schema) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set tables = [] -%}
    {%- for schema in schemas | sort if run_query("show schemas like '" ~ schema ~ "'").rows | length > 0 -%}
        {%- for row in run_query('show tables in ' ~ schema).rows | sort(attribute='tableName')
            if not row['isTemporary'] and (models is none or row['tableName'] in models) -%}
            {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=row['tableName']) -%}
            {%- if relation is not none and relation.type == 'table' -%}
                {%- do tables.append({'name': relation.identifier, 'relation': relation}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(tables) }}
{%- endmacro %}

{#- A point in time as a UTC string in the format of latecomer__table_versions(). -#}
{% macro latecomer__version_time_string(timestamp) -%}
    {%- set sql = "select date_format(" ~ latecomer__checked_version_timestamp(timestamp) ~ ", 'yyyy-MM-dd HH:mm:ss.SSSSSS') as ts" -%}
    {%- set value = run_query(sql).rows[0]['ts'] -%}
    {%- if value is none -%}
        {{ exceptions.raise_compiler_error("Cannot read '" ~ timestamp ~ "' as a point in time.") }}
    {%- endif -%}
    {{ return(value) }}
{%- endmacro %}

{#- The entry of `versions` (from table_versions) that was current at a UTC
    time string, or none when the table had no version yet: the last one
    committed at or before it (python_jobs/core/versions/records.py). -#}
{% macro latecomer__version_current_at(versions, time_string) -%}
    {{ return(adapter.version_current_at(versions, time_string)) }}
{%- endmacro %}

{#- The version a dbt run left the table in: the newest version whose newest
    rows (max changed_run_at) are that run's rows. The run is found by its
    rows' invocation_id, in any retained version (its rows may since have been
    rewritten). Needs columns invocation_id and changed_run_at (gold models).
    Returns the entry of table_versions, or none. The SQL reads each version's
    newest run; python_jobs/core/versions/records.py checks the id and picks the version. -#}
{% macro latecomer__version_of_invocation(relation, invocation_id, versions=none) -%}
    {%- set lookup = adapter.invocation_lookup(relation | string, invocation_id,
        adapter.get_columns_in_relation(relation) | map(attribute='name') | list) -%}
    {%- if lookup.error -%}{{ exceptions.raise_compiler_error(lookup.error) }}{%- endif -%}
    {%- set versions = versions if versions is not none else latecomer__table_versions(relation) -%}
    {%- set ids = versions | map(attribute='version') | unique | list -%}
    {%- if ids | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set sql -%}
        {%- for version in ids %}
            select
                '{{ version }}' as version,
                max(changed_run_at) as newest_run_at,
                max(case when invocation_id = '{{ lookup.invocation_id }}' then changed_run_at end) as run_at
            from {{ latecomer__relation_at_version(relation, version) }}
            {% if not loop.last %}union all{% endif %}
        {%- endfor %}
    {%- endset -%}
    {{ return(adapter.version_left_by_invocation(versions, run_query(sql))) }}
{%- endmacro %}

{#- Which versions the retention horizon protects. `cutoff` is the horizon's
    start (UTC time string). Protected: the version current at the cutoff and
    every later one. Returns {expire_before, protected}: expire_before is the
    earliest time a protected version was created (at most the cutoff), so
    expiring what was created before it never touches a protected version
    (python_jobs/core/versions/retention.py). -#}
{% macro latecomer__retention_boundary(versions, cutoff) -%}
    {{ return(adapter.retention_boundary(versions, cutoff)) }}
{%- endmacro %}

{#- The running invocation's id (macros with an `invocation_id` argument shadow
    dbt's global of that name). -#}
{% macro latecomer__current_invocation_id() -%}
    {{ return(invocation_id) }}
{%- endmacro %}
