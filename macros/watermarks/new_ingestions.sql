{#- Files landed since this model last ran: reads the small ingestion log, so
    the bronze scan is pruned to their arrival-date partitions and ingestion ids.
    Returns {'ids': [...], 'arrival_dates': [...], 'predicate': sql}. -#}
{% macro new_ingestions(ingestions_relation, feed, hwm_column='ingested_at') %}
    {%- set result = {'ids': [], 'arrival_dates': [], 'predicate': 'true'} -%}
    {%- if execute and is_incremental() -%}
        {%- set hwm = high_water_mark(hwm_column) -%}
        {%- set rows = run_query(
            "select ingestion_id, cast(arrival_date as string) as arrival_date from " ~ ingestions_relation
            ~ " where feed = '" ~ feed ~ "' and ingested_at > " ~ hwm) -%}
        {%- for row in rows -%}
            {%- do result['ids'].append(row['ingestion_id']) -%}
            {%- if row['arrival_date'] not in result['arrival_dates'] -%}
                {%- do result['arrival_dates'].append(row['arrival_date']) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- do result.update({'predicate': in_list('arrival_date', result['arrival_dates'])
            ~ ' and ' ~ in_list('ingestion_id', result['ids'])}) -%}
        {{ log(this.identifier ~ ': ' ~ result['ids'] | length ~ ' new file(s) in '
            ~ result['arrival_dates'] | length ~ ' arrival-date partition(s)', info=true) }}
    {%- endif -%}
    {{ return(result) }}
{% endmacro %}
