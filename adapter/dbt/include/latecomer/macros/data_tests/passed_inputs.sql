{#- A data test that passed on exactly the inputs it would read now passes
    again without a query.

    A data test is a query over tables; its answer changes only when its SQL
    or a table it reads changes. Each test that runs records, when it passes,
    a fingerprint of both: the test's SQL (with its scope, thresholds and the
    literals of vars such as as_of rendered in), the version of every table
    behind it (Iceberg's snapshot id, Delta's commit version), and the
    definition of every view between them. A later build whose fingerprint for
    the test is the one recorded answers it as passed and runs no statement:
    in a build with nothing new, most of the tests that are not scoped to what
    the build wrote (latecomer__get_where_subquery) read whole tables only to
    pass again.

    A test is never answered so when a version cannot be read, when it stores
    its failures, or when its SQL holds this run's stamp (run_ts: it reads
    the rows this build wrote, a question no other build asks). A test that
    failed or warned is not recorded, so it runs until it passes. The last
    pass of each test is kept in <schema>_audit.data_test_passes, one row per
    test, rewritten by the on-run-end hook latecomer__record_passed_tests
    when it changed, and only after a run with no failed node. A test's
    tables are those of its depends_on: a test must read tables through ref()
    or source(), never by a name written out, or its fingerprint misses them. -#}


{#- The fingerprint of the data test being run (in the test
    materialization): its SQL, thresholds, and what it reads; none when a
    version or a view's definition cannot be read. -#}
{% macro latecomer__test_inputs_fingerprint(sql) -%}
    {%- set parts = ['sql=' ~ sql] -%}
    {%- for key in ['fail_calc', 'warn_if', 'error_if', 'limit', 'severity'] -%}
        {%- do parts.append(key ~ '=' ~ config.get(key)) -%}
    {%- endfor -%}
    {%- set inputs = latecomer__upstream_versions(model.depends_on.nodes, with_views=true) -%}
    {%- if inputs is none -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(local_md5((parts + inputs) | join('|'))) }}
{%- endmacro %}


{#- The definition of the view model `unique_id` as it stands in this
    invocation: the one its materialization found or made in this build
    (latecomer__view_definition), else the one the relation cache read from
    the view's properties; none when neither is known. -#}
{% macro latecomer__current_view_definition(unique_id) -%}
    {%- set key = 'view_definition:' ~ unique_id -%}
    {%- if adapter.memo_has(key) -%}
        {{ return(adapter.memo_get(key)) }}
    {%- endif -%}
    {%- set node = graph.nodes.get(unique_id) -%}
    {%- set found = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
    {{ return(latecomer__stored_view_definition(found) if found is not none and found.is_view else none) }}
{%- endmacro %}


{#- <schema>_audit.data_test_passes, from the relation cache: none before
    the first build that recorded a pass. -#}
{% macro latecomer__test_passes_table() -%}
    {{ return(adapter.get_relation(database=none, schema=target.schema ~ '_audit', identifier='data_test_passes')) }}
{%- endmacro %}


{#- The fingerprint each test last passed on, by unique id: read once per
    invocation however many threads ask (adapter.memo_query); empty before
    the first build that recorded one. -#}
{% macro latecomer__passed_test_fingerprints() -%}
    {%- set table = latecomer__test_passes_table() -%}
    {%- if table is none -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set rows = adapter.memo_query('passed_tests', 'select test_id, fingerprint from ' ~ table) -%}
    {{ return(dict(zip(rows | map(attribute='test_id'), rows | map(attribute='fingerprint')))) }}
{%- endmacro %}


{#- Whether the data test being run passed last on the inputs it reads now
    (in the test materialization). Keeps the fingerprint for
    latecomer__record_passed_tests either way. -#}
{% macro latecomer__test_passed_on_these_inputs(sql) -%}
    {%- if (adapter.run_stamp() or run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) in sql -%}
        {#- SQL of this run alone, naming its stamp (the project's run_ts():
            it reads the rows this build stamped): no other build asks the
            same question. -#}
        {{ return(false) }}
    {%- endif -%}
    {%- set fingerprint = latecomer__test_inputs_fingerprint(sql) -%}
    {%- if fingerprint is none -%}
        {{ return(false) }}
    {%- endif -%}
    {%- do adapter.memo_set('test_inputs:' ~ model.unique_id, fingerprint) -%}
    {{ return(latecomer__passed_test_fingerprints().get(model.unique_id) == fingerprint) }}
{%- endmacro %}


{#- on-run-end: the fingerprints of the tests that passed in this run are
    added to those recorded (a test's earlier record stays true of the
    versions it names). A run with a failed node records nothing: on Iceberg
    its staged versions are never published. SQL rewriting the table when
    anything changed, else nothing; no query at all in a run that passed no
    fingerprinted test. -#}
{% macro latecomer__record_passed_tests(results) -%}
    {%- if not execute or flags.WHICH not in ('build', 'test') -%}
        {{ return('') }}
    {%- endif -%}
    {%- set passes = {} -%}
    {%- for result in results -%}
        {%- if result.status in ('error', 'fail') -%}
            {{ return('') }}
        {%- endif -%}
        {%- set key = 'test_inputs:' ~ result.node.unique_id -%}
        {%- if result.node.resource_type == 'test' and result.status == 'pass' and adapter.memo_has(key) -%}
            {%- do passes.update({result.node.unique_id: adapter.memo_get(key)}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set recorded = latecomer__passed_test_fingerprints() if passes else {} -%}
    {%- set passed = dict(recorded) -%}
    {%- do passed.update(passes) -%}
    {%- if passed == recorded -%}
        {{ return('') }}
    {%- endif -%}
    {%- set table = latecomer__test_passes_table() -%}
    {%- set relation = target.schema ~ '_audit.data_test_passes' -%}
    {%- if table is none -%}
        {%- call statement('ensure_test_passes') -%}
            create table if not exists {{ relation }} (test_id string, fingerprint string) using {{ target.table_format }}
            comment 'The inputs each data test last passed on (latecomer__record_passed_tests)'
        {%- endcall -%}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for test_id, fingerprint in passed | dictsort -%}
        {%- do rows.append('(' ~ latecomer__sql_string(test_id) ~ ', ' ~ latecomer__sql_string(fingerprint) ~ ')') -%}
    {%- endfor -%}
    {{ return('insert overwrite table ' ~ relation ~ ' values ' ~ rows | join(', ')) }}
{%- endmacro %}
