{#- Readers' views (python_jobs/core/reader_views.py): on a shared catalog,
    after a run's gold is published, every published table's view in
    <schema>_published gets a slot at its current version, and the
    publication is logged, so a query reads one run in every table it
    touches. The procedure is adapter.publish_reader_views; this macro lists
    the tables. -#}
{% macro latecomer__publish_reader_views() %}
    {%- if not execute or not adapter.reader_views_enabled() -%}{{ return('') }}{%- endif -%}
    {{ log(adapter.publish_reader_views(latecomer__staged_model_relations(), latecomer__current_invocation_id()), info=true) }}
    {{ return('') }}
{% endmacro %}
