{#- Views under Iceberg's SparkSessionCatalog.

    With the Iceberg extensions, an existing Hive view resolves as a V2 view of
    SparkSessionCatalog and `create or replace view` on it succeeds without
    replacing anything: the old definition stays (Iceberg 1.10.2, Spark 3.5;
    `alter view ... as` is refused). dbt-spark replaces views that way, so a
    view model whose SQL changed kept its old SQL. On Iceberg targets the
    existing view is dropped first; the replacement is then not atomic (a reader
    may briefly find no view).

    Each view records its definition (latecomer__view_definition) as its
    property latecomer.view_definition, so that a build whose definition is the
    same leaves the view as it is (materializations/view.sql). -#}
{% macro latecomer__create_view_as(relation, sql) -%}
    {%- if execute and target.table_format == 'iceberg' -%}
        {%- do adapter.drop_relation(relation.incorporate(type='view')) -%}
    {%- endif -%}
    {%- set statement = spark__create_view_as(relation, sql) -%}
    {#- The property goes after dbt-spark's clauses, before `as <sql>`; a
        statement of another shape is left as dbt-spark wrote it (the view is
        then made again by every build). -#}
    {%- set position = statement.rfind(sql) if execute and model is mapping else -1 -%}
    {%- set head = statement[:position].rstrip() if position > 0 else '' -%}
    {%- if head[-3:] | lower not in (' as', '\nas') -%}
        {{ return(statement) }}
    {%- endif -%}
    {{ return(head[:-2] ~ "tblproperties ('latecomer.view_definition' = '" ~ latecomer__view_definition(sql)
        ~ "')\n  as\n" ~ statement[position:]) }}
{%- endmacro %}


{#- A hash of what the current view model's view depends on: its SQL, the
    docs persisted with it, its contract, the project (its vars and macros:
    adapter.project_fingerprint), the code of every model, seed or snapshot
    it reads, and the columns of every source it reads (from the relation
    cache, or described when the cache lacks them: adapter.columns_signature).
    A `select *` view lists its columns when it is created, so it is made
    again when they may have changed: in the same build when an upstream
    model's code changed; for a source altered outside the project, in the
    build after. Hashed once per view and
    invocation: the view materialization, latecomer__create_view_as and the
    data tests reading the view (latecomer__current_view_definition) ask. -#}
{% macro latecomer__view_definition(sql) %}
    {%- set key = 'view_definition:' ~ model.unique_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- do adapter.memo_set(key, latecomer__hash_view_definition(sql)) -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
{% endmacro %}


{#- latecomer__view_definition's hash, computed. -#}
{% macro latecomer__hash_view_definition(sql) %}
    {%- set contract = config.get('contract') -%}
    {%- set parts = ['sql=' ~ sql, 'contract=' ~ (contract.enforced if contract else false),
                     'project=' ~ adapter.project_fingerprint()] -%}
    {%- if config.persist_relation_docs() -%}
        {%- do parts.append('description=' ~ model.description) -%}
    {%- endif -%}
    {%- if config.persist_column_docs() -%}
        {%- for name, column in model.columns.items() | sort -%}
            {%- do parts.append('column ' ~ name ~ '=' ~ column.description) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- for unique_id in model.depends_on.nodes | sort -%}
        {%- set node = graph.nodes.get(unique_id) -%}
        {%- set source = graph.sources.get(unique_id) -%}
        {%- if node -%}
            {%- do parts.append(unique_id ~ '=' ~ node.checksum.checksum) -%}
        {%- elif source -%}
            {%- set name = (source.relation_name | replace('`', '')).split('.') -%}
            {%- set found = adapter.get_relation(database=none, schema=name[-2], identifier=name[-1]) -%}
            {%- do parts.append(unique_id ~ '=' ~ adapter.columns_signature(
                found or api.Relation.create(schema=name[-2], identifier=name[-1]))) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(local_md5(parts | join('|'))) }}
{% endmacro %}


{#- The definition `relation` (a cached view) was created with, from its
    properties as the relation cache read them; none when it has none. -#}
{% macro latecomer__stored_view_definition(relation) %}
    {%- set found = modules.re.search('latecomer\\.view_definition=([0-9a-f]{32})', relation.information or '') -%}
    {{ return(found.group(1) if found else none) }}
{% endmacro %}
