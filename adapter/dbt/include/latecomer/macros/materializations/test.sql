{#- dbt's test materialization, with two shortcuts that pass a test without a
    statement:
    - a generic test whose relation holds nothing this build wrote
      (latecomer__get_where_subquery, macros/data_tests/run_scope.sql): its
      query would read no row;
    - a test that passed last on exactly the inputs it reads now
      (macros/data_tests/passed_inputs.sql): its query would give the same
      answer.
    A Spark statement costs its planning and a job even when it reads
    nothing: in a build with nothing new, that was most of a build's data
    tests. A test storing its failures runs as dbt's: it still creates its
    failures table over the relation, and get_test_sql then answers without
    reading it when its scope is empty. -#}
{%- materialization test, adapter='latecomer' -%}
    {%- set reason = none -%}
    {%- if not should_store_failures() -%}
        {%- if latecomer__test_scope_is_empty() -%}
            {%- set reason = 'nothing written this run in the tested table' -%}
        {%- elif latecomer__test_passed_on_these_inputs(sql) -%}
            {%- set reason = 'passed last on the same SQL and table versions' -%}
        {%- endif -%}
    {%- endif -%}
    {%- if reason is not none -%}
        {{ log(model.name ~ ': ' ~ reason ~ '; passes without a query') }}
        {%- set passed = adapter.passing_test_result('passed without a query: ' ~ reason) -%}
        {%- do store_result('main', response=passed['response'], agate_table=passed['table']) -%}
        {{ return({'relations': []}) }}
    {%- endif -%}
    {{ return(dbt.materialization_test_default()) }}
{%- endmaterialization -%}
