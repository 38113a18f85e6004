{#- What a data test reads: in a `dbt build`, the partitions the build wrote;
    in `dbt test`, or with --vars '{data_tests: all}', the whole table.

    A model or source opts in with meta test_scope:
      {partition: <column>, run_column: <column>}: its generic tests read only
        the partitions (values of `partition`) holding rows whose `run_column`
        is this run's start, and row-by-row tests (not_null, accepted_values)
        only those rows;
      {partition: arrival_date, pending_for: <model>}: a landing table, whose
        tests run before the model that consumes it: the arrival dates of the
        files landed since that model last read (stg_bronze_ingestions).
    Properties that are local to what a run writes (a key unique within its
    partitions, a column not null, a value accepted) hold for the table when
    they hold for every run's partitions. A test whose scope is empty (the run
    wrote nothing there) passes without a query over the table. Checks that
    need the whole table (row conservation across layers) run on a schedule
    with `dbt test`. -#}
{% macro latecomer__get_where_subquery(relation) -%}
    {%- set predicates = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- do predicates.append('(' ~ where ~ ')') -%}
    {%- endif -%}
    {%- set test_scope = tested_node_meta(relation).get('test_scope') -%}
    {%- set scope = run_scope_predicate(test_scope, relation) -%}
    {%- if scope == 'false' -%}
        {#- Nothing of the relation to test this run: latecomer__get_test_sql
            answers without reading it. -#}
        {%- do adapter.memo_set(empty_scope_key(), true) -%}
    {%- endif -%}
    {%- if scope -%}
        {%- do predicates.append(scope) -%}
        {%- if test_scope.get('run_column') and tested_property() in row_local_tests() -%}
            {#- A property of each row on its own: the rows this run wrote. -#}
            {%- do predicates.append(test_scope['run_column'] ~ ' = ' ~ run_ts()) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if predicates -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ predicates | join(' and ') ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}


{#- Generic tests whose property holds row by row: in a build they read only
    the rows the run wrote (run_column), not whole partitions. Uniqueness
    needs the partitions, where a new key may meet an old one. -#}
{% macro row_local_tests() -%}
    {{ return(['not_null', 'accepted_values']) }}
{%- endmacro %}


{#- The generic test being compiled (not_null, unique, ...), or none for a
    singular test. -#}
{% macro tested_property() -%}
    {{ return((model.get('test_metadata') or {}).get('name')) }}
{%- endmacro %}


{#- Memo key: the current test reads nothing this run (its relation's scope is
    empty). -#}
{% macro empty_scope_key() -%}
    {{ return('empty_test_scope:' ~ model.unique_id) }}
{%- endmacro %}


{#- A generic test whose relation holds nothing this build wrote has no rows
    to fail: it is answered without reading the table (a Spark query over a
    table costs its metadata and planning even when it reads no file). -#}
{% macro latecomer__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) -%}
    {%- if adapter.memo_get(empty_scope_key()) -%}
        {{ log(model.name ~ ': nothing written this run in the tested table; passes without reading it') }}
        select 0 as failures, false as should_warn, false as should_error
    {%- else -%}
        {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
    {%- endif -%}
{%- endmacro %}


{#- 'run' (only what this build wrote) or 'all'. -#}
{% macro data_tests_scope() -%}
    {%- set command = flags.WHICH if flags is defined else none -%}
    {%- set scope = var('data_tests', none) or ('run' if command == 'build' else 'all') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error("var data_tests is 'run' or 'all', got '" ~ scope ~ "'") }}
    {%- endif -%}
    {{ return(scope) }}
{%- endmacro %}


{#- SQL predicate restricting `relation` to the partitions this run wrote, or
    none when tests read everything. -#}
{% macro run_scope_predicate(test_scope, relation) -%}
    {%- if not test_scope or not execute or data_tests_scope() == 'all' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set partition = test_scope['partition'] -%}
    {%- if test_scope.get('pending_for') -%}
        {#- A landing table, tested before the model that consumes it: the
            partitions of the files that model has not read yet (all of them
            before its first run). -#}
        {%- set consumer = node_relation(test_scope['pending_for']) -%}
        {%- if consumer is none -%}
            {{ return(none) }}
        {%- endif -%}
        {%- set partitions_sql -%}
            select distinct cast({{ partition }} as string) from {{ ingestion_log_relation() }}
            where ingested_at > (select coalesce(max(ingested_at), timestamp'1900-01-01') from {{ consumer }})
        {%- endset -%}
    {%- else -%}
        {%- set partitions_sql -%}
            select distinct cast({{ partition }} as string) from {{ relation }}
            where {{ test_scope['run_column'] }} = {{ run_ts() }}
        {%- endset -%}
    {%- endif -%}
    {#- Every test of the relation reads the same partitions: found once per
        invocation, then given as literals so the scan is pruned when planned. -#}
    {%- set key = written_partitions_key(relation) -%}
    {%- if not adapter.memo_has(key) -%}
        {%- do adapter.memo_set(key, run_query(partitions_sql).columns[0].values() | list) -%}
    {%- endif -%}
    {%- set values = adapter.memo_get(key) -%}
    {%- if values | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for value in values -%}
        {%- do literals.append('cast(' ~ sql_string(value) ~ ' as ' ~ test_scope.get('type', 'date') ~ ')') -%}
    {%- endfor -%}
    {{ return(partition ~ ' in (' ~ literals | join(', ') ~ ')') }}
{%- endmacro %}


{#- The meta of the model, snapshot or source a generic test reads
    (`relation`), found among the test's dependencies. -#}
{% macro tested_node_meta(relation) -%}
    {%- if not execute -%}{{ return({}) }}{%- endif -%}
    {%- for unique_id in model.depends_on.nodes -%}
        {%- set node = graph.nodes.get(unique_id) or graph.sources.get(unique_id) -%}
        {%- if node and (node.identifier or node.alias) | lower == relation.identifier | lower
                and node.schema | lower == relation.schema | lower -%}
            {{ return(node.config.meta or node.meta or {}) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return({}) }}
{%- endmacro %}


{#- The ingestion log (source bronze.bronze_ingestions), named from the graph
    rather than the relation cache: a test may run while a view over it is
    being replaced in another thread. -#}
{% macro ingestion_log_relation() -%}
    {%- for source_node in graph.sources.values()
            if source_node.source_name == 'bronze' and source_node.name == 'bronze_ingestions' -%}
        {{ return(api.Relation.create(database=source_node.database, schema=source_node.schema,
                                      identifier=source_node.identifier)) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("No source bronze.bronze_ingestions in the project") }}
{%- endmacro %}


{#- The relation of a model of this project, by name, from the graph; none
    while it does not exist yet. -#}
{% macro node_relation(name) -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == name -%}
        {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("No model named '" ~ name ~ "' in the project") }}
{%- endmacro %}


{#- Memo key of the partitions a build wrote in `relation`, found by the
    first test that reads it, or told by the model's materialization when it
    wrote nothing (nothing_written), so its tests need no query to learn it. -#}
{% macro written_partitions_key(relation) -%}
    {{ return('test_scope:' ~ (relation.schema ~ '.' ~ relation.identifier) | lower) }}
{%- endmacro %}


{#- Called by a materialization that wrote no row in `relation` this run. -#}
{% macro nothing_written(relation) -%}
    {%- do adapter.memo_set(written_partitions_key(relation), []) -%}
{%- endmacro %}
