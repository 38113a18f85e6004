{#- Files landed that this model has not read yet, found by identity: the
    feed's rows of the small ingestion log whose ingestion id the model holds
    no row of. No clock is compared, so a file whose log row committed late
    (an ingest that started before the last build and finished after it, or
    one completed by a later call after stopping between its two commits) is
    still read, once. Files with no bronze rows (blank lines only) are left
    out: the model could never hold a row of them. The bronze scan is pruned
    to their arrival-date partitions and ingestion ids.
    Returns {'ids': [...], 'arrival_dates': [...], 'predicate': sql}. -#}
{% macro new_ingestions(ingestions_relation, feed) %}
    {%- set result = {'ids': [], 'arrival_dates': [], 'predicate': 'true'} -%}
    {%- if execute and is_incremental() -%}
        {%- set rows = unread_ingestions(ingestions_relation, this, feed) -%}
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

{#- The `feed` files of the log that `consumer` holds no row of, as a list of
    {ingestion_id, arrival_date}: read once per invocation (adapter.memo_query,
    which makes the tests that ask at the same moment wait for one answer) and
    shared by the consumer and the data tests that run before it
    (run_scope_predicate's pending_for), so the consumer's key columns are
    scanned once per build.
    The run lock keeps ingests out while a build runs, so the log cannot gain
    a file between the tests and the consumer. -#}
{% macro unread_ingestions(ingestions_relation, consumer, feed) %}
    {%- set key = ('unread_ingestions:' ~ consumer.schema ~ '.' ~ consumer.identifier ~ ':' ~ feed) | lower -%}
    {{ return(adapter.memo_query(key, unread_ingestions_sql(ingestions_relation, consumer, feed))) }}
{% endmacro %}

{#- SQL: ingestion_id and arrival_date (as a string) of the `feed` files in
    the log that `consumer` (a table with ingestion_id and arrival_date) holds
    no row of. The consumer is read for its two key columns only. -#}
{% macro unread_ingestions_sql(ingestions_relation, consumer, feed) -%}
    select log.ingestion_id, cast(log.arrival_date as string) as arrival_date
    from {{ ingestions_relation }} as log
    left anti join (select distinct arrival_date, ingestion_id from {{ consumer }}) as consumed
        on log.arrival_date = consumed.arrival_date and log.ingestion_id = consumed.ingestion_id
    where log.feed = {{ sql_string(feed) }} and log.rows_accepted + log.rows_flagged > 0
{%- endmacro %}
