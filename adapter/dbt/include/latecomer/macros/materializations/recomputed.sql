{#- A table recomputed from its inputs, and left alone when none of them changed.

    Summaries that are cheap to state but costly to derive incrementally (the
    completeness estimates, sessions per day) are rebuilt whole, like dbt's
    `table`, but only when something they read moved:
    1. fingerprint  the current version of every table the model reads
                    (through views), the as_of var and the model's code;
    2. compare      with the fingerprint the table was built from (its table
                    property latecomer.inputs); equal: stop, nothing written;
    3. build        spill a SQL model's rows, then create or replace the
                    table from them (SQL or Python);
    4. record       the fingerprint as the table's property.
    A version is Iceberg's current snapshot id, or the version of a Delta
    table's last commit (DESCRIBE HISTORY); where none can be read (a table
    of another provider) the model is rebuilt every run, as a `table` would
    be. Config as_of_dependent=false
    leaves as_of out of the fingerprint, for a model whose rows do not depend
    on it.

    Also for a small summary that several data tests read: as a view, each
    test would compute it again. -#}
{% materialization recomputed, adapter='latecomer', supported_languages=['sql', 'python'] %}
    {%- set language = model['language'] -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set existing_relation = load_relation(this) -%}
    {%- set decision = latecomer__recomputed_decision() -%}
    {%- set unchanged = decision['unchanged'] -%}

    {{ run_hooks(pre_hooks) }}
    {%- if unchanged -%}
        {{ log(model.name ~ ': inputs unchanged since the last build, ' ~ target_relation ~ ' left as it is', info=true) }}
        {%- do latecomer__record_no_rows_written(target_relation) -%}
        {#- dbt's result of the node, without a Spark statement to make it -#}
        {%- do store_result('main', response='inputs unchanged') -%}
    {%- else -%}
        {%- if existing_relation is not none and not existing_relation.is_iceberg and not existing_relation.is_delta -%}
            {%- do adapter.drop_relation(existing_relation) -%}
        {%- endif -%}
        {#- A SQL model's rows are spilled first (latecomer__spill_rows, no lock), so
            the create, which holds the embedded metastore's write lock, only
            copies them: a long query never holds up other models' writes. -#}
        {%- set spilled_rows = none if language == 'python'
            else latecomer__spill_rows(this, sql=compiled_code, view=this.identifier ~ '__recomputed') -%}
        {%- set sql = compiled_code if language == 'python' else 'select * from ' ~ spilled_rows -%}
        {%- if decision['staged'] and language == 'python' -%}
            {#- python_submissions.py overwrites the table on the run branch
                (or replaces it on main when its columns changed). -#}
            {%- do latecomer__stage_for_publication(target_relation, decision['properties']) -%}
        {%- endif -%}
        {%- if decision['staged'] and language == 'sql' and latecomer__recomputed_columns_kept(spilled_rows, existing_relation) -%}
            {#- Every row replaced on the run branch (published at the run's end). -#}
            {%- do latecomer__stage_for_publication(target_relation, decision['properties']) -%}
            {%- call statement('clear_staged_table') -%}
                delete from {{ target_relation }}
            {%- endcall -%}
            {%- call statement('main') -%}
                insert into {{ target_relation }} {{ sql }}
            {%- endcall -%}
        {%- else -%}
            {%- call statement('main', language=language) -%}
                {{ create_table_as(false, target_relation, sql, language) }}
            {%- endcall -%}
        {%- endif -%}
        {%- do latecomer__record_decided_inputs(target_relation) -%}
        {%- do persist_docs(target_relation, model) -%}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- Whether the current node is left as it is in this build: a recomputed
    model, an incremental model with skip_if_inputs_unchanged (SQL or
    Python) or a late_arriving snapshot ({'unchanged': bool, 'fingerprint':
    its latecomer__inputs_fingerprint}), decided once per node and
    invocation: the model's own SQL may ask first, at compile time
    (latecomer__recomputed_rebuilds, the causes models), to do work only a
    rebuild needs. -#}
{% macro latecomer__recomputed_decision() %}
    {%- set key = 'recomputed_decision:' ~ model.unique_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- set existing_relation = load_relation(this) -%}
        {%- set properties = latecomer__table_properties(existing_relation) if existing_relation is not none else {} -%}
        {%- set inputs = latecomer__inputs_fingerprint(with_as_of=config.get('as_of_dependent', true)) -%}
        {%- set fingerprint = inputs -%}
        {#- A staged model's table may be left as main holds it by a run that
            was not published, after its fingerprint was recorded: its own
            version is part of the fingerprint. -#}
        {%- set staged = latecomer__staged_model() and existing_relation is not none and existing_relation.is_iceberg
            and not should_full_refresh() -%}
        {%- if staged and inputs is not none -%}
            {%- set fingerprint = latecomer__own_version_fingerprint(inputs, latecomer__current_version(existing_relation, properties)) -%}
        {%- endif -%}
        {%- set unchanged = fingerprint is not none and existing_relation is not none and not should_full_refresh()
            and latecomer__stored_inputs_fingerprint(existing_relation, properties) == fingerprint -%}
        {%- do adapter.memo_set(key, {'unchanged': unchanged, 'fingerprint': fingerprint, 'inputs': inputs, 'staged': staged,
                                      'properties': properties}) -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
{% endmacro %}


{#- A fingerprint that also names the table's own version. -#}
{% macro latecomer__own_version_fingerprint(fingerprint, own_version) %}
    {{ return(local_md5(fingerprint ~ '|self=' ~ own_version)) }}
{% endmacro %}


{#- After the current node wrote `relation` (a recomputed model or a
    late_arriving snapshot, or an incremental model with
    skip_if_inputs_unchanged, run or skipped):
    the fingerprint of its latecomer__recomputed_decision set as the table's
    property latecomer.inputs, unless the table holds it already and kept
    it (on Delta, setting a property is a commit). Where the run stages
    publication, the fingerprint names the version just written (the run
    branch's head, or main's after a first build or --full-refresh created
    the table there), as the next run's decision will read it. -#}
{% macro latecomer__record_decided_inputs(relation) %}
    {%- set decision = latecomer__recomputed_decision() -%}
    {%- set fingerprint = decision['fingerprint'] -%}
    {%- if latecomer__staged_model() and decision['inputs'] is not none -%}
        {%- set fingerprint = latecomer__own_version_fingerprint(decision['inputs'], latecomer__current_version(relation)) -%}
    {%- endif -%}
    {#- (a --full-refresh replaced the table, and its properties with it) -#}
    {%- if fingerprint is not none
            and (should_full_refresh() or fingerprint != latecomer__stored_inputs_fingerprint(relation, decision['properties'])) -%}
        {%- call statement('record_inputs_fingerprint') -%}
            alter table {{ relation }} set tblproperties ('latecomer.inputs' = '{{ fingerprint }}')
        {%- endcall -%}
    {%- endif -%}
{% endmacro %}


{#- Whether the spilled rows (temporary view `spilled_rows`) have the columns,
    names and types, that `relation` holds, so they can replace its rows
    without replacing the table. -#}
{% macro latecomer__recomputed_columns_kept(spilled_rows, relation) %}
    {%- set columns = adapter.get_columns_in_relation(api.Relation.create(identifier=spilled_rows, type='view')) -%}
    {%- set stored = adapter.get_columns_in_relation(relation) -%}
    {{ return(columns | map(attribute='name') | map('lower') | list == stored | map(attribute='name') | map('lower') | list
        and columns | map(attribute='data_type') | list == stored | map(attribute='data_type') | list) }}
{% endmacro %}


{#- Whether the model being compiled is a recomputed model that this build
    rebuilds: false while parsing, in a dbt unit test (whose inputs are
    fixtures, not tables) and when its inputs are unchanged. -#}
{% macro latecomer__recomputed_rebuilds() %}
    {{ return(execute and model.resource_type == 'model' and config.get('materialized') == 'recomputed'
        and not latecomer__recomputed_decision()['unchanged']) }}
{% endmacro %}


{#- A hash of what the current model's output depends on, or none when a
    version cannot be read: its code and meta, the project's
    (adapter.project_fingerprint), the versions of the tables it reads and
    the code of every view or ephemeral model between it and them (their SQL
    is part of what it reads). with_as_of=false leaves the as_of var out,
    for a node whose output does not depend on it. -#}
{% macro latecomer__inputs_fingerprint(with_as_of=true) %}
    {%- set parts = ['code=' ~ model.checksum.checksum, 'vars=' ~ tojson(model.config.meta),
                     'project=' ~ adapter.project_fingerprint()] -%}
    {%- if with_as_of -%}
        {%- do parts.append('as_of=' ~ (as_of_given() or run_started_at)) -%}
    {%- endif -%}
    {%- set passed = [] -%}
    {%- set versions = latecomer__upstream_versions(model.depends_on.nodes, passed=passed) -%}
    {%- if versions is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for unique_id in passed | sort -%}
        {%- do parts.append(unique_id ~ '=' ~ graph.nodes[unique_id].checksum.checksum) -%}
    {%- endfor -%}
    {{ log(model.name ~ ': inputs ' ~ (parts + versions) | join('|')) }}
    {{ return(local_md5((parts + versions) | join('|'))) }}
{% endmacro %}


{#- 'relation=version' for each table behind `unique_ids`
    (latecomer__upstream_tables), in order, then, with_views, 'unique
    id=definition' for each view model on the way
    (latecomer__current_view_definition); none when one cannot be read.
    `passed`, when given, receives the view and ephemeral models on the way. -#}
{% macro latecomer__upstream_versions(unique_ids, with_views=false, passed=none) %}
    {%- set views = [] -%}
    {%- set named = [] -%}
    {%- for relation in latecomer__upstream_tables(unique_ids, views, passed) | sort -%}
        {%- do named.append((relation, current_table_version(relation))) -%}
    {%- endfor -%}
    {%- for unique_id in (views if with_views else []) | sort -%}
        {%- do named.append((unique_id, latecomer__current_view_definition(unique_id))) -%}
    {%- endfor -%}
    {%- set parts = [] -%}
    {%- for name, value in named -%}
        {%- if value is none -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do parts.append(name ~ '=' ~ value) -%}
    {%- endfor -%}
    {{ return(parts) }}
{% endmacro %}


{#- The tables behind `unique_ids` (models, snapshots, seeds, sources),
    following views and ephemeral models to the tables they read; the unique
    ids of the view models passed on the way are added to `views`, and those
    of the view and ephemeral models to `passed`, when given. -#}
{% macro latecomer__upstream_tables(unique_ids, views=none, passed=none) %}
    {%- set tables = [] -%}
    {%- set pending = unique_ids | list -%}
    {%- set seen = [] -%}
    {%- for _ in range(200) if pending -%}
        {%- set unique_id = pending.pop() -%}
        {%- if unique_id not in seen -%}
            {%- do seen.append(unique_id) -%}
            {%- set node = graph.nodes.get(unique_id) or graph.sources.get(unique_id) -%}
            {%- if node and node.resource_type in ('model', 'snapshot', 'seed')
                    and node.config.materialized in ('view', 'ephemeral') -%}
                {%- do pending.extend(node.depends_on.nodes) -%}
                {%- if passed is not none -%}
                    {%- do passed.append(unique_id) -%}
                {%- endif -%}
                {%- if views is not none and node.config.materialized == 'view' -%}
                    {%- do views.append(unique_id) -%}
                {%- endif -%}
            {%- elif node and node.resource_type in ('model', 'snapshot', 'seed', 'source') -%}
                {%- do tables.append(node.relation_name) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(tables) }}
{% endmacro %}


{#- The fingerprint a table was last built from, or none. -#}
{% macro latecomer__stored_inputs_fingerprint(relation, properties=none) %}
    {%- if properties is not none -%}
        {{ return(properties.get('latecomer.inputs')) }}
    {%- endif -%}
    {{ return(latecomer__table_property(relation, 'latecomer.inputs')) }}
{% endmacro %}


{#- A table property's value, or none when the table does not have it
    (from the session's catalog on a session target, as
    latecomer__table_properties). -#}
{% macro latecomer__table_property(relation, key) %}
    {%- set properties = adapter.table_properties(relation) -%}
    {%- if properties is not none -%}
        {{ return(properties.get(key) or none) }}
    {%- endif -%}
    {%- set rows = run_query("show tblproperties " ~ relation ~ " (" ~ latecomer__sql_string(key) ~ ")").rows -%}
    {%- set value = rows[0][1] if rows and rows[0] | length > 1 else rows[0][0] if rows else none -%}
    {{ return(value if value and 'does not have property' not in value else none) }}
{% endmacro %}


{#- The table's current version id (Iceberg's snapshot id, Delta's last
    commit version); 'empty' for a table that holds no row by construction:
    one not created yet, an Iceberg table with no snapshot, a Delta table
    whose only commit is its CREATE TABLE (a landing table before its first
    file: a fingerprint then changes when rows land). A reader sees no row in
    either, so a model evaluated before such a table was created is not
    evaluated again once it exists. None where the table has no version to
    read. -#}
{% macro current_table_version(relation) %}
    {{ return(adapter.dispatch('current_table_version')(relation)) }}
{% endmacro %}

{% macro default__current_table_version(relation) %}
    {%- set parts = (relation | string | replace('`', '')).split('.') -%}
    {%- set found = adapter.get_relation(database=none, schema=parts[-2], identifier=parts[-1]) -%}
    {%- if found is none -%}
        {{ return('empty') }}
    {%- endif -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {#- Delta: the version of the table's last commit; none for a table
            of another provider, which has no history. -#}
        {%- if found.is_delta is false -%}
            {{ return(none) }}
        {%- endif -%}
        {%- set rows = latecomer__delta_last_commit(relation) -%}
        {%- if rows | length == 0 -%}
            {{ return(none) }}
        {%- endif -%}
        {{ return('empty' if rows[0]['version'] | int == 0 and rows[0]['operation'] == 'CREATE TABLE'
            else '%d' % (rows[0]['version'] | int)) }}
    {%- endif -%}
    {%- set version = latecomer__current_version(relation) -%}
    {%- if version is none and found.is_iceberg -%}
        {#- an Iceberg table with no snapshot holds no row yet -#}
        {{ return('empty') }}
    {%- endif -%}
    {{ return(version) }}
{% endmacro %}
