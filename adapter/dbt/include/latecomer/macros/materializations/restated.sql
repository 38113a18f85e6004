{#- The write path of restated gold models, in the order it runs.

    A restated model's SQL returns only the rows this run must write (see the
    restate macro): rows whose values changed in the partitions touched since
    the model's last run, and rows whose status moved at as_of. Each row
    carries `published_before`, its values as published before this run (null
    for a new row), so nothing below reads the published table again.

    0. skip      when nothing the model reads moved since its last run (its
                 inputs' table versions, its own version, as_of, vars and
                 code: latecomer__restated_fingerprint, recorded at step 7), stop: no
                 query over any table;
    1. compute   the model's SQL, as a temporary view;
    2. spill     its rows once (latecomer__spill_rows): every later step reads them;
    3. count     the rows; none (and the table exists): stop here, no gate,
                 no merge, no manifest, no new table version;
    4. contract  with contract.enforced, the spilled columns and their types
                 must be the ones the model's YAML declares (latecomer__assert_restated_contract;
                 on a first build dbt-spark's create_table_as asserts it);
       gate      the judge (the model with a publication_gate) judges the
                 change (publication_gate) and resolves its open holds, even
                 with no row to write; a follower (a model reading
                 publication_holds) takes the judge's open holds;
       holds     the rows of held partitions are left out of the write: they
                 stay as published (macros/publication/holds.sql);
    5. merge     by unique_key, on the run branch when the model has
                 meta.staged_publication (published with the run's other gold
                 tables at its end: macros/publication/staged_publication.sql);
                 first build or --full-refresh: create or replace;
    6. manifest  append the rows written, with before and after values, to the
                 change manifest (latecomer__record_change_manifest);
    7. record    the fingerprint evaluated: on Iceberg the table's property
                 latecomer.inputs; on Delta, where setting a property is a
                 commit, a note on the write's own commit (step 5, none when
                 nothing was written: latecomer__restated_recorded_fingerprint).
    late_arrival_audit then reads what was written (restatement_after_final).

    Config: unique_key (list), partition_by (or restated_partition, the
    column of its partitions when the table is not partitioned), latecomer__publication_gate
    ({'measure': column[, 'count': column][, 'by': column][, 'partition':
    column]}; partition defaults to the first partition_by column; see
    macros/publication/gate.sql). -#}
{% materialization restated, adapter='latecomer' %}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set existing_relation = load_relation(this) -%}
    {%- set rebuild = existing_relation is none or should_full_refresh() -%}
    {%- set layout = latecomer__restated_layout() -%}
    {%- set decision = latecomer__restated_decision() -%}
    {%- set properties = decision['properties'] -%}
    {%- set before_version = decision['before_version'] -%}

    {{ run_hooks(pre_hooks) }}

    {#- 0. skip -#}
    {%- if decision['unchanged'] -%}
        {{ log(model.name ~ ': inputs unchanged since the last run, ' ~ target_relation ~ ' left as it is', info=true) }}
        {%- do latecomer__record_no_rows_written(target_relation) -%}
        {#- dbt's result of the node, without a Spark statement to make it -#}
        {%- do store_result('main', response='inputs unchanged') -%}
        {%- do persist_docs(target_relation, model) -%}
        {{ run_hooks(post_hooks) }}
        {{ return({'relations': [target_relation]}) }}
    {%- endif -%}

    {#- 1, 2. compute and spill -#}
    {%- set restated = latecomer__spill_rows(this, sql=compiled_code, view=this.identifier ~ '__restated') -%}

    {#- 3. count -#}
    {%- set row_count = run_query('select count(*) from ' ~ restated).columns[0].values()[0] -%}
    {%- set columns = none -%}

    {#- 4. contract, gate and holds: the judge judges (and resolves its open
        holds even when it has nothing to write); a follower leaves out the
        judge's open holds (macros/publication/holds.sql). -#}
    {%- set held = [] -%}
    {%- if not rebuild -%}
        {%- set judge_holds = latecomer__open_holds() if layout['measure'] else none -%}
        {%- if row_count > 0 or (judge_holds is not none and judge_holds.rows | length > 0) -%}
            {%- set columns = latecomer__restated_table_columns(restated) -%}
            {%- do latecomer__check_restated_columns(columns, existing_relation) -%}
            {%- do latecomer__assert_restated_contract(restated, columns) -%}
            {%- if judge_holds is not none -%}
                {%- set held = latecomer__publication_gate(restated, target_relation, layout, judge_holds) -%}
            {%- elif latecomer__follows_holds() -%}
                {%- set held = latecomer__followed_holds() -%}
            {%- endif -%}
        {%- endif -%}
        {%- if held and row_count > 0 -%}
            {%- set restated = latecomer__publishable_rows(restated, layout['partition'], held) -%}
            {%- set row_count = run_query('select count(*) from ' ~ restated).columns[0].values()[0] -%}
            {{ log(model.name ~ ': ' ~ held | length ~ ' held partition(s) left as published: ' ~ held | join(', '),
                info=true) }}
        {%- endif -%}
    {%- endif -%}

    {%- if row_count == 0 and not rebuild -%}
        {{ log(model.name ~ ': nothing to restate, ' ~ target_relation ~ ' left unchanged', info=true) }}
        {%- do latecomer__record_no_rows_written(target_relation) -%}
        {%- do store_result('main', response='nothing to restate') -%}
    {%- else -%}
        {%- set columns = columns or latecomer__restated_table_columns(restated) -%}
        {#- 5. merge -#}
        {{ log(model.name ~ ': ' ~ ('create' if rebuild else 'merge') ~ ' of ' ~ row_count ~ ' row(s) into '
            ~ target_relation, info=true) }}
        {#- 7, on Delta: the write's commit carries the fingerprint, read
            now, after the gate's own writes (the hold log is an input). -#}
        {%- set note = latecomer__restated_fingerprint() if latecomer__versions_table_format() == 'delta' else none -%}
        {%- set noted = note is not none and adapter.note_delta_commits(target_relation, note) -%}
        {%- call statement('main') -%}
            {%- if rebuild -%}
                {{ create_table_as(false, target_relation,
                    'select ' ~ columns | join(', ') ~ ' from ' ~ restated) }}
            {%- else -%}
                {%- if latecomer__staged_model() -%}{%- do latecomer__stage_for_publication(target_relation, properties) -%}{%- endif -%}
                {{ latecomer__restated_merge_sql(target_relation, restated, layout['keys'], columns) }}
            {%- endif -%}
        {%- endcall -%}
        {%- if noted -%}{%- do adapter.end_delta_commit_note(target_relation) -%}{%- endif -%}
        {%- set after_version = latecomer__current_version(target_relation) -%}
        {%- do latecomer__record_written_partitions(target_relation, restated) -%}
        {#- 6. manifest -#}
        {%- do latecomer__record_change_manifest(restated, target_relation, layout, columns, before_version, after_version) -%}
    {%- endif -%}

    {#- 7. What this run evaluated, for the next run's step 0 (after the
        write, so a run that failed before it is evaluated again). -#}
    {%- set evaluated = none if latecomer__versions_table_format() == 'delta'
        else latecomer__restated_fingerprint(own_version=after_version | default(none)) -%}
    {%- if evaluated is not none -%}
        {%- call statement('record_inputs_fingerprint') -%}
            alter table {{ target_relation }} set tblproperties ('latecomer.inputs' = '{{ evaluated }}')
        {%- endcall -%}
    {%- endif -%}

    {%- do persist_docs(target_relation, model) -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- Step 0 of the current restated model, decided once per invocation (the
    model's SQL asks it while rendering: latecomer__skips_unchanged_inputs):
    `properties` and `before_version`, the table's as this run found it (the
    manifest's version before the write), and `unchanged`, whether the
    fingerprint of what it reads equals the one its last evaluation recorded. -#}
{% macro latecomer__restated_decision() %}
    {%- set key = 'restated_decision:' ~ model.unique_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- set existing_relation = load_relation(this) -%}
        {%- set rebuild = existing_relation is none or should_full_refresh() -%}
        {%- set properties = {} if existing_relation is none
            else latecomer__table_properties(this.incorporate(type='table')) -%}
        {%- set before_version = none if existing_relation is none
            else latecomer__current_version(this.incorporate(type='table'), properties) -%}
        {%- set fingerprint = none if rebuild or backfill_window()
            else latecomer__restated_fingerprint(own_version=before_version) -%}
        {%- set unchanged = fingerprint is not none
            and latecomer__restated_recorded_fingerprint(existing_relation, properties) == fingerprint -%}
        {%- do adapter.memo_set(key, {'unchanged': unchanged, 'properties': properties,
                                      'before_version': before_version}) -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
{% endmacro %}


{#- What a restated model's rows depend on: latecomer__inputs_fingerprint without the
    as_of itself, the table's own current version (a restore, or any write
    but this model's, makes the next run evaluate it again) and the status
    epoch of as_of (the last instant before it at which some partition's
    status moves: python_jobs/core/status_clock.py), so a later as_of that
    moves no status keeps the fingerprint (own_version: that version, when
    the caller has just read it). None where versions cannot be read. -#}
{% macro latecomer__restated_fingerprint(own_version=none) %}
    {%- set inputs = latecomer__inputs_fingerprint(with_as_of=false) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {#- On Delta the fingerprint is a note on the commit of the write
            (step 7), which counts only while that commit is the table's
            last: its version goes without saying. -#}
        {%- set own = 'the last commit' -%}
    {%- else -%}
        {#- The table exists here (step 0 runs on an existing table, the
            record after the write), so its version is read without the
            relation cache, which learns of a table created in this run only
            once the model ends. -#}
        {%- set own = own_version or latecomer__current_version(this) -%}
    {%- endif -%}
    {%- if inputs is none or own is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set boundaries = [watermark_tier_hours(var('live_until_tier')),
                          watermark_tier_hours(var('preliminary_until_tier'))] -%}
    {%- set epoch = adapter.status_epoch(as_of_given() or run_started_at, boundaries) -%}
    {{ log(model.name ~ ': own version ' ~ own ~ ', status epoch ' ~ epoch) }}
    {{ return(local_md5(inputs ~ '|self=' ~ own ~ '|status_epoch=' ~ epoch)) }}
{% endmacro %}


{#- The fingerprint the table's last evaluation recorded (step 7): on Iceberg
    its property latecomer.inputs; on Delta the note its last commit carries,
    when that commit wrote the model's rows (python_jobs/core/commit_metadata.py). -#}
{% macro latecomer__restated_recorded_fingerprint(relation, properties) %}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {{ return(adapter.delta_commit_note(latecomer__delta_last_commit(relation), relation)) }}
    {%- endif -%}
    {{ return(latecomer__stored_inputs_fingerprint(relation, properties)) }}
{% endmacro %}


{#- The unique key (a list) and the partition column of a restated model: the
    gate's partition, else the column of the first partition_by entry (the
    date itself where the files are partitioned by its month). -#}
{% macro latecomer__restated_layout() %}
    {%- set keys = config.get('unique_key') -%}
    {%- set gate = config.get('publication_gate') or {} -%}
    {%- set partition = config.get('restated_partition') or gate.get('partition') or config.get('partition_by') -%}
    {%- if not keys or not partition -%}
        {{ exceptions.raise_compiler_error(model.name ~ ": a restated model needs config unique_key and "
            ~ "partition_by (or restated_partition)") }}
    {%- endif -%}
    {{ return({
        'keys': [keys] if keys is string else keys,
        'partition': latecomer__partition_column(partition if partition is string else partition[0]),
        'measure': gate.get('measure'),
        'count': gate.get('count'),
        'by': gate.get('by')}) }}
{% endmacro %}


{#- The columns the table holds: the model's columns but those restate adds
    for the write path (published_before, change_reasons). -#}
{% macro latecomer__restated_table_columns(restated) %}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(api.Relation.create(identifier=restated, type='view')) -%}
        {%- if column.name | lower not in ('published_before', 'change_reasons') -%}
            {%- do columns.append(column.name | lower) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}


{#- The model's contract (config contract.enforced), checked on the rows a
    merge is about to write: dbt's assert_columns_equivalent compares the
    spilled columns and types with the YAML's data_type and fails with dbt's
    contract error. A first build or --full-refresh goes through
    create_table_as, where dbt-spark asserts the same. -#}
{% macro latecomer__assert_restated_contract(restated, columns) %}
    {%- if config.get('contract').enforced -%}
        {%- do get_assert_columns_equivalent('select ' ~ columns | join(', ') ~ ' from ' ~ restated) -%}
    {%- endif -%}
{% endmacro %}


{#- on_schema_change: fail, said plainly. -#}
{% macro latecomer__check_restated_columns(columns, relation) %}
    {%- set stored = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
    {%- if columns != stored -%}
        {{ exceptions.raise_compiler_error(model.name ~ ": the model's columns " ~ columns | join(', ')
            ~ " differ from the table's " ~ stored | join(', ') ~ ". Rebuild it with --full-refresh --select "
            ~ model.name ~ " (its version history restarts).") }}
    {%- endif -%}
{% endmacro %}


{% macro latecomer__restated_merge_sql(target, source, keys, columns) -%}
    merge into {{ target }} as target
    using {{ source }} as source
        on {% for key in keys %}target.{{ key }} = source.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    when matched then update set
        {%- for column in columns %}
        target.{{ column }} = source.{{ column }}{% if not loop.last %},{% endif %}
        {%- endfor %}
    when not matched then insert ({{ columns | join(', ') }})
        values ({% for column in columns %}source.{{ column }}{% if not loop.last %}, {% endif %}{% endfor %})
{%- endmacro %}
