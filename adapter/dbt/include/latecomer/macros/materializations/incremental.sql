{#- dbt-spark's incremental materialization (dbt-spark 1.11, macro of the same
    name for adapter 'spark'), with three changes:

    * a model that sets no file_format is written in the target's table format
      (the adapter's pre_model_hook sets it; the default here is the same);
    * a model whose SQL said it has no row this run (latecomer__skip_write)
      creates no staging view, when it asks no schema check (on_schema_change
      ignore) or when its query returns the table's columns as they are
      (adapter.query_has_columns_of: Spark plans the query in the session,
      the table's columns come from the relation cache). A changed schema
      still goes through the staging view and dbt's check, which fails or
      adds the columns as on_schema_change says;
    * a model configured with skip_if_inputs_unchanged=True writes nothing
      (a Python model runs no Python) when the tables it reads are at the
      versions its last run read (latecomer__recomputed_decision, with
      as_of_dependent): it would find nothing new. Each run that reaches the
      model records those versions on its table
      (latecomer__record_decided_inputs). A Python model cannot say while
      rendering that it has nothing new, as SQL models do
      (latecomer__skip_write), so this is its way to skip; a SQL model's own
      queries while rendering can ask the same decision first (the causes
      models: macros/publication/revenue_causes.sql);
    * the microbatch strategy replaces each batch's event-time range exactly
      (latecomer_microbatch_sql), empty batches included, on any table
      format that runs MERGE, instead of dbt-spark's dynamic partition
      overwrite, which overwrites nothing for a batch whose rows all went away.

    append, merge and insert_overwrite still go through
    dbt_spark_get_incremental_sql, which a project may override. -#}
{% materialization incremental, adapter='latecomer', supported_languages=['sql', 'python'] -%}
  {#-- Validate early so we don't run SQL if the file_format + strategy combo is invalid --#}
  {%- set raw_file_format = config.get('file_format') or target.table_format -%}
  {%- set raw_strategy = config.get('incremental_strategy') or 'append' -%}
  {%- set grant_config = config.get('grants') -%}

  {%- set file_format = dbt_spark_validate_get_file_format(raw_file_format) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) -%}
  {%- if strategy == 'microbatch' -%}
    {%- do latecomer_validate_microbatch(file_format) -%}
  {%- endif -%}

  {#-- Set vars --#}

  {%- set unique_key = config.get('unique_key', none) -%}
  {%- set partition_by = config.get('partition_by', none) -%}
  {%- set language = model['language'] -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- set target_relation = this -%}
  {%- set existing_relation = load_relation(this) -%}
  {% set tmp_relation = this.incorporate(path = {"identifier": this.identifier ~ '__dbt_tmp'}) -%}

  {#-- for SQL model we will create temp view that doesn't have database and schema --#}
  {%- if language == 'sql'-%}
    {%- set tmp_relation = tmp_relation.include(database=false, schema=false) -%}
  {%- endif -%}

  {#-- Set Overwrite Mode --#}
  {%- if strategy == 'insert_overwrite' and partition_by -%}
    {%- call statement() -%}
      set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
  {%- endif -%}

  {#-- Run pre-hooks --#}
  {{ run_hooks(pre_hooks) }}

  {#-- Incremental run logic --#}
  {%- if existing_relation is none -%}
    {#-- Relation must be created --#}
    {%- call statement('main', language=language) -%}
      {{ create_table_as(False, target_relation, compiled_code, language) }}
    {%- endcall -%}
    {% do persist_constraints(target_relation, model) %}
  {%- elif existing_relation.is_view or should_full_refresh() -%}
    {#-- Relation must be dropped & recreated --#}
    {% set is_delta = (file_format == 'delta' and existing_relation.is_delta) %}
    {% if not is_delta %} {#-- If Delta, we will `create or replace` below, so no need to drop --#}
      {% do adapter.drop_relation(existing_relation) %}
    {% endif %}
    {%- call statement('main', language=language) -%}
      {{ create_table_as(False, target_relation, compiled_code, language) }}
    {%- endcall -%}
    {% do persist_constraints(target_relation, model) %}
  {%- elif config.get('skip_if_inputs_unchanged', false) and latecomer__recomputed_decision()['unchanged'] -%}
    {{ log(model.name ~ ': inputs unchanged since its last run, ' ~ target_relation ~ ' left unchanged', info=true) }}
    {%- do latecomer__record_no_rows_written(target_relation) -%}
    {%- do store_result('main', response='inputs unchanged') -%}
  {%- elif latecomer__write_skipped() and strategy in ('append', 'merge') and language == 'sql'
        and (on_schema_change == 'ignore' or adapter.query_has_columns_of(compiled_code, existing_relation)) -%}
    {#-- The model said while rendering that it has no row this run
         (latecomer__skip_write), and its schema check has nothing to find:
         the staging view would only be planned and described. --#}
    {{ log(model.name ~ ': ' ~ latecomer__write_skipped() ~ ', ' ~ target_relation ~ ' left unchanged', info=true) }}
    {%- do latecomer__record_no_rows_written(target_relation) -%}
    {%- do store_result('main', response='nothing new') -%}
  {%- else -%}
    {#-- Relation must be merged --#}
    {%- call statement('create_tmp_relation', language=language) -%}
      {{ create_table_as(True, tmp_relation, compiled_code, language) }}
    {%- endcall -%}
    {%- do process_schema_changes(on_schema_change, tmp_relation, existing_relation) -%}
    {%- set new_rows = tmp_relation -%}
    {%- if on_schema_change == 'append_new_columns' -%}
      {%- set new_rows = latecomer_rows_with_table_columns(tmp_relation, existing_relation) -%}
    {%- endif -%}
    {%- if strategy == 'microbatch' -%}
      {%- set write_sql = latecomer_microbatch_sql(new_rows, target_relation, incremental_predicates) -%}
    {%- else -%}
      {%- set write_sql = dbt_spark_get_incremental_sql(strategy, new_rows, target_relation, existing_relation, unique_key, incremental_predicates) -%}
    {%- endif -%}
    {%- if write_sql | trim == latecomer__nothing_written_sql() -%}
      {#-- dbt's result of the node, without a Spark statement to make it --#}
      {%- do store_result('main', response='nothing new') -%}
    {%- else -%}
      {%- call statement('main') -%}
        {{ write_sql }}
      {%- endcall -%}
    {%- endif -%}
    {%- if language == 'python' -%}
      {#-- A Python model's staging table (dbt-spark's note: temporary views do not outlive its session) --#}
      {% call statement('drop_relation') -%}
        drop table if exists {{ tmp_relation }}
      {%- endcall %}
    {%- endif -%}
  {%- endif -%}

  {%- if config.get('skip_if_inputs_unchanged', false) -%}
    {%- do latecomer__record_decided_inputs(target_relation) -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}

  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}

{%- endmaterialization %}
