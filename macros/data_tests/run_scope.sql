{#- What a data test reads: in a `dbt build`, the partitions the build wrote;
    in `dbt test`, or with --vars '{data_tests: all}', the whole table.

    A model or source opts in with meta test_scope:
      {partition: <column>, run_column: <column>}: its generic tests read only
        the partitions (values of `partition`) holding rows whose `run_column`
        is this run's start;
      {partition: arrival_date, pending_for: <model>}: a landing table, whose
        tests run before the model that consumes it: the arrival dates of the
        files landed since that model last read (stg_bronze_ingestions). Properties that are local to what a run writes (a key unique
    within its partitions, a column not null, a value accepted) hold for the
    table when they hold for every run's partitions. Checks that need the whole
    table (row conservation across layers) run on a schedule with `dbt test`. -#}
{% macro latecomer__get_where_subquery(relation) -%}
    {%- set predicates = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- do predicates.append('(' ~ where ~ ')') -%}
    {%- endif -%}
    {%- set scope = run_scope_predicate(tested_node_meta(relation).get('test_scope'), relation) -%}
    {%- if scope -%}
        {%- do predicates.append(scope) -%}
    {%- endif -%}
    {%- if predicates -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ predicates | join(' and ') ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
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
    {%- set key = 'test_scope:' ~ relation -%}
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
