{#- What a data test reads: in a `dbt build`, the partitions the build wrote;
    in `dbt test`, or with --vars '{data_tests: all}', the whole table.

    A model or source opts in with meta test_scope:
      {partition: <column>, run_column: <column>}: its generic tests read only
        the partitions (values of `partition`) holding rows whose `run_column`
        is this run's start (the rows the run wrote); row-by-row tests
        (not_null, accepted_values) only the written rows, and uniqueness
        tests (unique, primary_key) only the rows sharing a key with
        a written row;
      {run_column: <column>, run_value: latest}: a table without such
        partitions whose model stamps the rows it writes with the high-water
        mark of what it consumed: the written rows are those holding the
        column's largest value;
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
    {%- set test_scope = latecomer__tested_node_meta(relation).get('test_scope') -%}
    {%- set scope = latecomer__run_scope_predicate(test_scope, relation) -%}
    {%- if scope == 'false' -%}
        {#- Nothing of the relation to test this run: the test
            materialization passes it with no statement (or, storing its
            failures, latecomer__get_test_sql answers without reading it). -#}
        {%- do latecomer__note_empty_test_scope() -%}
        {%- do predicates.append(scope) -%}
    {%- elif scope -%}
        {%- do predicates.append(scope) -%}
        {%- set written = latecomer__written_rows_predicate(test_scope, relation) -%}
        {%- set keys = latecomer__tested_keys() -%}
        {%- if written and latecomer__tested_property() in latecomer__row_local_tests() -%}
            {#- A property of each row on its own: the rows this run wrote. -#}
            {%- do predicates.append(written) -%}
        {%- elif written and keys -%}
            {#- A key unique in the table stays so when every key a run
                writes is unique there: the rows holding a key this run
                wrote (a semi-join on the few written keys, rather than
                counting every key of the scanned partitions). -#}
            {%- set matches = [] -%}
            {%- for key in keys -%}
                {%- do matches.append('written_row.' ~ key ~ ' <=> dbt_scoped.' ~ key) -%}
            {%- endfor -%}
            {%- do predicates.append('exists (select 1 from ' ~ relation ~ ' as written_row where ' ~ scope
                ~ ' and ' ~ written ~ ' and ' ~ matches | join(' and ') ~ ')') -%}
        {%- endif -%}
    {%- endif -%}
    {%- if predicates -%}
        {{ return('(select * from ' ~ relation ~ ' as dbt_scoped where ' ~ predicates | join(' and ')
            ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}


{#- Generic tests whose property holds row by row: in a build they read only
    the rows the run wrote (run_column), not whole partitions. Uniqueness
    needs the partitions, where a new key may meet an old one. -#}
{% macro latecomer__row_local_tests() -%}
    {{ return(['not_null', 'not_null_columns', 'accepted_values']) }}
{%- endmacro %}


{#- The key columns of a uniqueness test being compiled (unique,
    primary_key), else none; none too when a key is an expression
    rather than a column name (the test then reads its whole scope). -#}
{% macro latecomer__tested_keys() -%}
    {%- set kwargs = (model.get('test_metadata') or {}).get('kwargs') or {} -%}
    {%- set keys = none -%}
    {%- if latecomer__tested_property() == 'unique' -%}
        {%- set keys = [kwargs.get('column_name')] -%}
    {%- elif latecomer__tested_property() == 'primary_key' -%}
        {%- set keys = kwargs.get('columns') -%}
    {%- endif -%}
    {%- for key in keys or [] if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', key | string) -%}
        {{ return(none) }}
    {%- endfor -%}
    {{ return(keys) }}
{%- endmacro %}


{#- SQL predicate: the rows of `relation` this run wrote (unqualified
    columns), from meta test_scope: run_column equal to the run's start
    (run_value 'run', the default), or to its latest value in the table
    (run_value 'latest', a timestamp: a model stamping its rows with the
    high-water mark of what it consumed). None without a run_column. -#}
{% macro latecomer__written_rows_predicate(test_scope, relation) -%}
    {%- set column = test_scope.get('run_column') -%}
    {%- if not column -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set run_value = test_scope.get('run_value', 'run') -%}
    {%- if run_value == 'run' -%}
        {{ return(column ~ ' = ' ~ run_ts()) }}
    {%- elif run_value == 'latest' -%}
        {#- Read once per invocation and given as a literal, so the scan
            skips the files whose statistics rule it out. -#}
        {%- set key = 'latest_run_value:' ~ latecomer__written_partitions_key(relation) -%}
        {%- if not adapter.memo_has(key) -%}
            {%- do adapter.memo_set(key, run_query('select cast(max(' ~ column ~ ') as string) from '
                ~ relation).columns[0].values()[0]) -%}
        {%- endif -%}
        {%- set latest = adapter.memo_get(key) -%}
        {{ return(column ~ ' = cast(' ~ latecomer__sql_string(latest) ~ ' as timestamp)' if latest is not none else 'false') }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error("meta test_scope run_value is 'run' or 'latest', got '" ~ run_value ~ "'") }}
{%- endmacro %}


{#- The generic test being compiled (not_null, unique, ...), or none for a
    singular test. -#}
{% macro latecomer__tested_property() -%}
    {{ return((model.get('test_metadata') or {}).get('name')) }}
{%- endmacro %}


{#- Notes that the test being compiled reads nothing this run (its
    relation's scope is empty). -#}
{% macro latecomer__note_empty_test_scope() -%}
    {%- do adapter.memo_set('empty_test_scope:' ~ model.unique_id, true) -%}
{%- endmacro %}

{#- Whether the test being run found nothing of its relation written this
    build (latecomer__note_empty_test_scope, while its SQL compiled): the
    test materialization then runs no statement, and latecomer__get_test_sql
    answers without reading the table. -#}
{% macro latecomer__test_scope_is_empty() -%}
    {{ return(adapter.memo_get('empty_test_scope:' ~ model.unique_id) or false) }}
{%- endmacro %}


{#- A generic test whose relation holds nothing this build wrote has no rows
    to fail: it is answered without reading the table (a Spark query over a
    table costs its metadata and planning even when it reads no file). The
    test materialization (macros/materializations/test.sql) runs no statement
    at all then; this answer serves a test that stores its failures. -#}
{% macro latecomer__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) -%}
    {%- if latecomer__test_scope_is_empty() -%}
        {{ log(model.name ~ ': nothing written this run in the tested table; passes without reading it') }}
        select 0 as failures, false as should_warn, false as should_error
    {%- else -%}
        {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
    {%- endif -%}
{%- endmacro %}


{#- 'run' (only what this build wrote) or 'all'. -#}
{% macro latecomer__data_tests_scope() -%}
    {%- set command = flags.WHICH if flags is defined else none -%}
    {%- set scope = var('data_tests', none) or ('run' if command == 'build' else 'all') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error("var data_tests is 'run' or 'all', got '" ~ scope ~ "'") }}
    {%- endif -%}
    {{ return(scope) }}
{%- endmacro %}


{#- SQL predicate restricting `relation` to the partitions this run wrote, or
    none when tests read everything. -#}
{% macro latecomer__run_scope_predicate(test_scope, relation) -%}
    {%- if not execute or latecomer__data_tests_scope() == 'all' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set key = latecomer__written_partitions_key(relation) -%}
    {%- if adapter.memo_has(key) and not adapter.memo_get(key) -%}
        {#- The model said it wrote nothing (latecomer__record_no_rows_written), scope or not. -#}
        {{ return('false') }}
    {%- endif -%}
    {%- if not test_scope -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set partition = test_scope.get('partition') -%}
    {%- if not partition -%}
        {#- No partitions to narrow to: the written rows alone
            (latecomer__written_rows_predicate). -#}
        {{ return('true') }}
    {%- endif -%}
    {%- if test_scope.get('pending_for') -%}
        {#- A landing table, tested before the model that consumes it: the
            partitions of the files that model has not read yet (all of them
            before its first run). -#}
        {%- set consumer = latecomer__node_relation(test_scope['pending_for']) -%}
        {%- if consumer is none -%}
            {{ return(none) }}
        {%- endif -%}
        {%- set values = unread_ingestions(consumer, 'events')
            | map(attribute='arrival_date') | unique | list -%}
        {%- do adapter.memo_set(key, values) -%}
    {%- elif not adapter.memo_has(key) -%}
        {#- Every test of the relation reads the same partitions: found once
            per invocation, then given as literals so the scan is pruned when
            planned. -#}
        {%- set partitions_sql -%}
            select distinct cast({{ partition }} as string) from {{ relation }}
            where {{ test_scope['run_column'] }} = {{ run_ts() }}
        {%- endset -%}
        {%- do adapter.memo_set(key, run_query(partitions_sql).columns[0].values() | list) -%}
    {%- endif -%}
    {%- set values = adapter.memo_get(key) -%}
    {%- if values | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for value in values -%}
        {%- do literals.append('cast(' ~ latecomer__sql_string(value) ~ ' as ' ~ test_scope.get('type', 'date') ~ ')') -%}
    {%- endfor -%}
    {{ return(partition ~ ' in (' ~ literals | join(', ') ~ ')') }}
{%- endmacro %}


{#- The meta of the model, snapshot or source a generic test reads
    (`relation`), found among the test's dependencies. -#}
{% macro latecomer__tested_node_meta(relation) -%}
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


{#- The relation of a model of this project, by name, from the graph; none
    while it does not exist yet. -#}
{% macro latecomer__node_relation(name) -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == name -%}
        {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("No model named '" ~ name ~ "' in the project") }}
{%- endmacro %}


{#- Memo key of the partitions a build wrote in `relation`, found by the
    first test that reads it, or told by the model's materialization when it
    wrote nothing (latecomer__record_no_rows_written), so its tests need no query to learn it. -#}
{% macro latecomer__written_partitions_key(relation) -%}
    {{ return('test_scope:' ~ (relation.schema ~ '.' ~ relation.identifier) | lower) }}
{%- endmacro %}


{#- Called by a materialization with the rows it is writing to `relation`
    (a staged view or table): the partitions its tests will read, found from
    those rows rather than by each tested relation's first test scanning the
    table. Only for a meta test_scope whose run_column holds the run's start. -#}
{% macro latecomer__record_written_partitions(relation, rows) -%}
    {%- set test_scope = (config.get('meta') or {}).get('test_scope') or {} -%}
    {%- if test_scope.get('partition') and test_scope.get('run_column') and not test_scope.get('pending_for')
            and test_scope.get('run_value', 'run') == 'run' -%}
        {%- set partitions = run_query('select distinct cast(' ~ test_scope['partition'] ~ ' as string) from '
            ~ rows ~ ' where ' ~ test_scope['run_column'] ~ ' = ' ~ run_ts()).columns[0].values() | list -%}
        {%- do adapter.memo_set(latecomer__written_partitions_key(relation), partitions) -%}
    {%- endif -%}
{%- endmacro %}


{#- Called by a materialization that wrote no row in `relation` this run. -#}
{% macro latecomer__record_no_rows_written(relation) -%}
    {%- do adapter.memo_set(latecomer__written_partitions_key(relation), []) -%}
{%- endmacro %}
