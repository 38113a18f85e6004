{#- Staged publication: a run's gold tables become visible together, or not at all.

    The procedure and its rules are python_jobs/core/publication.py; these
    macros run its SQL. In order:
    - latecomer__begin_staged_publication   (on-run-start) points the session's writes
                                 of WAP tables at the run's own branch;
    - latecomer__stage_for_publication      (a materialization, before it writes a model
                                 with meta.staged_publication, or the change
                                 manifest) makes sure the table takes WAP
                                 writes and notes it;
    - latecomer__finish_staged_publication  (on-run-end) fast-forwards each staged
                                 table's main to the run branch when every
                                 node succeeded, and drops the branch;
    - latecomer__drop_stale_run_branches    (maintain_tables) drops the branches of
                                 runs killed before their end.
    On Delta (no branches) the run tags its commits with its name and writes
    in place; on-run-end puts back every staged table a run that is not
    published wrote (latecomer__finish_delta_publication). -#}

{% macro latecomer__begin_staged_publication() %}
    {%- if not execute or flags.WHICH not in ('build', 'run') -%}
        {{ return('') }}
    {%- endif -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {%- set run = adapter.begin_delta_publication() -%}
        {{ log('Staged publication: this run\'s Delta commits are tagged ' ~ run
            ~ ', and put back at the end of the run unless every node succeeds') }}
        {{ return('') }}
    {%- endif -%}
    {%- set branch = adapter.begin_staged_publication() -%}
    {{ log('Staged publication: gold is written on branch ' ~ branch ~ ' and published at the end of the run') }}
    {{ return('') }}
{% endmacro %}


{#- Whether the model being run writes through the run branch: a branch is
    active and the model has meta.staged_publication. -#}
{% macro latecomer__staged_model() %}
    {{ return(adapter.run_branch() is not none and (config.get('meta') or {}).get('staged_publication', false)) }}
{% endmacro %}


{#- Before the first write of this run to `relation` (an existing Iceberg
    table): WAP writes enabled on it (set once, on a table created before
    staged publication), and the table noted for latecomer__finish_staged_publication.
    `properties`: its latecomer__table_properties(), when already read. -#}
{% macro latecomer__stage_for_publication(relation, properties=none) %}
    {%- if adapter.run_branch() is none or adapter.is_staged(relation) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set properties = properties if properties is not none else latecomer__table_properties(relation) -%}
    {%- if properties.get('write.wap.enabled') != 'true' -%}
        {%- call statement('enable_staged_publication') -%}
            alter table {{ relation }} set tblproperties ('write.wap.enabled' = 'true')
        {%- endcall -%}
    {%- endif -%}
    {%- do adapter.record_staged_write(relation) -%}
    {{ return('') }}
{% endmacro %}


{#- on-run-end: publish every staged table, or none. Returns whether the
    run's gold was published (true also when nothing was staged). -#}
{% macro latecomer__finish_staged_publication(results) %}
    {%- if latecomer__versions_table_format() == 'delta' -%}{{ return(latecomer__finish_delta_publication(results)) }}{%- endif -%}
    {%- set branch = adapter.run_branch() -%}
    {%- if branch is none -%}{{ return(true) }}{%- endif -%}
    {%- set decision = adapter.publication_decision(results) -%}
    {%- set tables = adapter.staged_relations() -%}
    {#- Every staged table was written on the branch (a write that failed
        failed its node, and the run is then not published). -#}
    {%- for table in tables -%}
        {%- if decision['publish'] -%}
            {%- call statement('publish_run_branch') -%}
                call {{ latecomer__iceberg_catalog() }}.system.fast_forward('{{ table }}', 'main', '{{ branch }}')
            {%- endcall -%}
        {%- endif -%}
        {%- call statement('drop_run_branch') -%}
            alter table {{ table }} drop branch if exists {{ branch }}
        {%- endcall -%}
    {%- endfor -%}
    {%- do adapter.end_staged_publication() -%}
    {%- if tables | length > 0 -%}
        {{ log('Staged publication: ' ~ (tables | length) ~ ' table(s) '
            ~ ('published together' if decision['publish'] else 'left as published before this run ('
                ~ decision['summary'] ~ ')') ~ ': ' ~ tables | join(', '), info=true) }}
    {%- endif -%}
    {{ return(decision['publish'] or tables | length == 0) }}
{% endmacro %}


{#- on-run-end on Delta: when a node did not succeed, every staged table the
    run made a commit to goes back (RESTORE) to its last version before the
    run's first commit; a table the run created stays. Returns whether the
    run's writes stand. -#}
{% macro latecomer__finish_delta_publication(results) %}
    {%- set run = adapter.end_delta_publication() -%}
    {%- if run is none -%}{{ return(true) }}{%- endif -%}
    {%- set decision = adapter.publication_decision(results) -%}
    {%- if decision['publish'] -%}{{ return(true) }}{%- endif -%}
    {%- set restored = [] -%}
    {%- for relation in latecomer__staged_publication_relations() -%}
        {%- set version = adapter.version_before_run(run_query('describe history ' ~ relation), run) -%}
        {%- if version is not none -%}
            {%- call statement('restore_published_version') -%}
                restore table {{ relation }} to version as of {{ version }}
            {%- endcall -%}
            {%- do restored.append(relation ~ '') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if restored -%}
        {{ log('Staged publication: ' ~ (restored | length) ~ ' table(s) left as published before this run ('
            ~ decision['summary'] ~ '; put back with RESTORE): ' ~ restored | sort | join(', '), info=true) }}
    {%- endif -%}
    {{ return(false) }}
{% endmacro %}


{#- The existing tables of models with meta.staged_publication (views left out). -#}
{% macro latecomer__staged_model_relations() %}
    {%- set relations = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and (node.config.meta or {}).get('staged_publication', false) -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {%- if relation is not none and not relation.is_view -%}{%- do relations.append(relation) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(relations) }}
{% endmacro %}


{#- The existing tables whose writes a run stages: the staged models'
    (latecomer__staged_model_relations), the change manifest and the hold log. -#}
{% macro latecomer__staged_publication_relations() %}
    {%- set relations = latecomer__staged_model_relations() -%}
    {%- for name in [latecomer__manifest_relation(), latecomer__hold_log_relation()] -%}
        {%- set schema, identifier = name.split('.') -%}
        {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=identifier) -%}
        {%- if relation is not none -%}{%- do relations.append(relation) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(relations) }}
{% endmacro %}


{#- The run branches a build killed before its on-run-end left on an
    Iceberg table (never read or published by any other run, but they keep
    old versions from expiring): dropped, or with dry_run only listed. -#}
{% macro latecomer__drop_stale_run_branches(relation, dry_run=false) %}
    {%- if latecomer__versions_table_format() != 'iceberg' -%}{{ return([]) }}{%- endif -%}
    {%- set refs = run_query('select name from ' ~ relation ~ '.refs').columns[0].values() -%}
    {%- set stale = adapter.stale_run_branches(refs) -%}
    {%- for branch in stale if not dry_run -%}
        {%- call statement('drop_stale_run_branch') -%}
            alter table {{ relation }} drop branch if exists {{ branch }}
        {%- endcall -%}
    {%- endfor -%}
    {%- if stale -%}
        {{ log('maintain_tables: ' ~ relation ~ ': ' ~ ('would drop ' if dry_run else 'dropped ') ~ stale | length
            ~ ' run branch(es) of builds that stopped before publishing: ' ~ stale | join(', '), info=true) }}
    {%- endif -%}
    {{ return(stale) }}
{% endmacro %}


{#- on-run-end: publish the run's staged tables, then (when they were
    published) write the run's change manifest and digest, and on a shared
    catalog pin the readers' views to them (reader_views.sql). -#}
{% macro latecomer__publish_run(results) %}
    {%- if not execute or flags.WHICH not in ('build', 'run') -%}{{ return('') }}{%- endif -%}
    {%- set published = latecomer__finish_staged_publication(results) -%}
    {%- set holds = latecomer__run_holds() -%}
    {%- if published -%}
        {%- do latecomer__write_change_manifest(holds) -%}
        {%- do latecomer__publish_reader_views() -%}
    {%- endif -%}
    {%- do latecomer__report_publication_holds(holds) -%}
    {{ return('') }}
{% endmacro %}


{#- A table's properties as a dict: read from the session's catalog on a
    session target (adapter.table_properties), else one query. -#}
{% macro latecomer__table_properties(relation) %}
    {%- set properties = adapter.table_properties(relation) -%}
    {%- if properties is not none -%}
        {{ return(properties) }}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}


{#- dbt-spark's create_table_as, which creates or replaces the table on main:
    while a run branch is active, an existing table of a staged model loses
    its WAP property first, or Iceberg would commit the whole new table to the
    run branch and leave main empty. Its next staged write sets it again.
    (A Python model's table: python_submissions.py decides the same.) -#}
{% macro latecomer__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if not temporary and language == 'sql' and latecomer__staged_model() and load_relation(relation) is not none -%}
        {%- call statement('publish_directly') -%}
            alter table {{ relation }} unset tblproperties if exists ('write.wap.enabled')
        {%- endcall -%}
    {%- endif -%}
    {{ return(spark__create_table_as(temporary, relation, compiled_code, language)) }}
{%- endmacro %}
