{#- The ingestion log: one row per landed file, as the ingest job wrote it, or
    derived from bronze for a file whose ingest stopped between its rows and
    its log row (ingestion_log_sql). -#}
-- depends_on: {{ source('bronze', 'bronze_events') }}, {{ source('bronze_crm', 'bronze_customer_changes') }}
with bronze_ingestions as (
    {%- if execute %}
    {{ ingestion_log_sql() }}
    {%- else %}
    select * from {{ source('bronze', 'bronze_ingestions') }}
    {%- endif %}
)

select * from bronze_ingestions
