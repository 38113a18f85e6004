{#- Files landed that this model has not read yet, found by identity: the
    feed's rows of the small ingestion log whose ingestion id the model holds
    no row of. No clock is compared, so a file whose log row committed late
    (an ingest that started before the last build and finished after it, or
    one completed by a later call after stopping between its two commits) is
    still read, once. Files with no bronze rows (blank lines only) are left
    out: the model could never hold a row of them. The bronze scan is pruned
    to their arrival-date partitions and ingestion ids. The log is read as
    ingestion_log_sql derives it (files whose log row a stopped ingest never
    wrote included); the model declares it with a ref to stg_bronze_ingestions.
    Returns {'ids': [...], 'arrival_dates': [...], 'predicate': sql}. -#}
{% macro new_ingestions(feed) %}
    {%- set result = {'ids': [], 'arrival_dates': [], 'predicate': 'true'} -%}
    {%- if execute and is_incremental() -%}
        {%- set rows = unread_ingestions(this, feed) -%}
        {%- for row in rows -%}
            {%- do result['ids'].append(row['ingestion_id']) -%}
            {%- if row['arrival_date'] not in result['arrival_dates'] -%}
                {%- do result['arrival_dates'].append(row['arrival_date']) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- do result.update({'predicate': latecomer__in_list('arrival_date', result['arrival_dates'], 'date')
            ~ ' and ' ~ latecomer__in_list('ingestion_id', result['ids'])}) -%}
        {{ log(this.identifier ~ ': ' ~ result['ids'] | length ~ ' new file(s) in '
            ~ result['arrival_dates'] | length ~ ' arrival-date partition(s)', info=true) }}
    {%- endif -%}
    {{ return(result) }}
{% endmacro %}

{#- The `feed` files of the log that `consumer` holds no row of, as a list of
    {ingestion_id, arrival_date}: read once per invocation (adapter.memo_query,
    which makes the tests that ask at the same moment wait for one answer) and
    shared by the consumer and the data tests that run before it
    (run_scope_predicate's pending_for). Only the arrival dates that
    unsettled_arrival_dates finds are scanned, for the consumer's two key
    columns; none at all when every date is settled.
    A file landed after the first ask (on a shared catalog landings append
    while a build runs) is not in the list the tests and the consumer share:
    the next build reads it. -#}
{% macro unread_ingestions(consumer, feed) %}
    {%- set key = ('unread_ingestions:' ~ consumer.schema ~ '.' ~ consumer.identifier ~ ':' ~ feed) | lower -%}
    {%- set dates = unsettled_arrival_dates(consumer, feed, key) -%}
    {%- if dates is not none and dates | length == 0 -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(adapter.memo_query(key, unread_ingestions_sql(consumer, feed, dates))) }}
{% endmacro %}

{#- Iceberg: the arrival dates (strings) whose `feed` files the consumer may
    not have read all of: the log counts more landed rows (accepted and
    flagged) for the date than the consumer's data files record for that
    partition, read from table metadata (`files`), not from the rows. Holds
    for a consumer with one row per landed row, partitioned by arrival_date
    (the arrival ledger). None, meaning every date, on Delta or when a log row
    has no arrival date. Once per invocation under `key`. -#}
{% macro unsettled_arrival_dates(consumer, feed, key) %}
    {%- if latecomer__versions_table_format() != 'iceberg' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set dates_sql -%}
        select
            cast(logged.arrival_date as string) as arrival_date,
            not (logged.landed_rows <=> held.held_rows) as unsettled
        from (
            select arrival_date, sum(rows_accepted + rows_flagged) as landed_rows
            from ({{ ingestion_log_sql(feed) }}) as log
            where feed = {{ latecomer__sql_string(feed) }}
            group by arrival_date
        ) as logged
        left join (
            select `partition`.arrival_date as arrival_date, sum(record_count) as held_rows
            from {{ consumer }}.files
            where content = 0
            group by `partition`.arrival_date
        ) as held
            on logged.arrival_date = held.arrival_date
        where logged.landed_rows > 0
    {%- endset -%}
    {%- set first_ask = not adapter.memo_has(key ~ ':dates') -%}
    {%- set rows = adapter.memo_query(key ~ ':dates', dates_sql) -%}
    {%- set dates = rows | selectattr('unsettled') | map(attribute='arrival_date') | list -%}
    {%- if first_ask -%}
        {{ log(consumer.identifier ~ ': ' ~ dates | length ~ ' of ' ~ rows | length ~ ' arrival date(s) may hold '
            ~ feed ~ ' files it has not read (row counts); only those are scanned', info=true) }}
    {%- endif -%}
    {{ return(none if none in dates else dates) }}
{% endmacro %}

{#- SQL: ingestion_id and arrival_date (as a string) of the `feed` files in
    the log (ingestion_log_sql) that `consumer` (a table with ingestion_id and
    arrival_date) holds no row of. The consumer is read for its two key
    columns only, and for `dates` (a list of arrival dates) only when given. -#}
{% macro unread_ingestions_sql(consumer, feed, dates=none) -%}
    select log.ingestion_id, cast(log.arrival_date as string) as arrival_date
    from ({{ ingestion_log_sql(feed) }}) as log
    left anti join (
        select distinct arrival_date, ingestion_id from {{ consumer }}
        {%- if dates is not none %}
        where {{ latecomer__in_list('arrival_date', dates, 'date') }}
        {%- endif %}
    ) as consumed
        on log.arrival_date = consumed.arrival_date and log.ingestion_id = consumed.ingestion_id
    where log.feed = {{ latecomer__sql_string(feed) }} and log.rows_accepted + log.rows_flagged > 0
    {%- if dates is not none %}
        and {{ latecomer__in_list('log.arrival_date', dates, 'date') }}
    {%- endif %}
{%- endmacro %}

{#- SQL: the ingestion log as dbt reads it. An ingest commits a file's bronze
    rows, then its log row; one stopped between the two (killed, crashed)
    leaves rows the log does not name. Bronze is the record: for each such
    file a row is derived from its bronze rows (feed, source, file, arrival
    and ingestion times, counts; file_sha256 null, lines_read its last line
    number, blank_lines those before it), so the ledger reads the file and
    every count agrees with bronze. Landing the file again writes its real
    log row, which then replaces the derived one; the rows never land twice.
    Bronze is scanned only when it holds more rows than the log counts
    (unlogged_rows: row counts, from table metadata). `feed`: one feed, or
    none for all. -#}
{% macro ingestion_log_sql(feed=none) -%}
    {%- set log_table = landing_relation('bronze', 'bronze_ingestions') -%}
    {%- set unlogged = [] -%}
    {%- for name, table in landing_feeds().items() if feed in (none, name) -%}
        {%- if execute and model.resource_type != 'unit_test' and unlogged_rows(name, table, log_table) > 0 -%}
            {%- do unlogged.append((name, table)) -%}
        {%- endif -%}
    {%- endfor -%}
    select * from {{ log_table }}
    {%- for name, table in unlogged %}
    union all
    select
        landed.ingestion_id,
        {{ latecomer__sql_string(name) }} as feed,
        min(landed.source_system) as source_system,
        min(landed.source_file) as source_file,
        cast(null as string) as file_sha256,
        min(landed.arrival_ts) as arrival_ts,
        min(landed.arrival_date) as arrival_date,
        min(landed.ingested_at) as ingested_at,
        cast(max(landed.line_number) as bigint) as lines_read,
        cast(max(landed.line_number) - count(*) as bigint) as blank_lines,
        count_if(landed.parse_error is null) as rows_accepted,
        count_if(landed.parse_error is not null) as rows_flagged
    from {{ table }} as landed
    left anti join {{ log_table }} as logged on landed.ingestion_id = logged.ingestion_id
    group by landed.ingestion_id
    {%- endfor %}
{%- endmacro %}

{#- Rows of a feed's bronze table that its log rows do not count (files whose
    ingest stopped before its log row), once per invocation. Both counts come
    from table metadata and the small log, not from a scan of bronze. -#}
{% macro unlogged_rows(feed, table, log_table) -%}
    {%- set rows = adapter.memo_query('unlogged_rows:' ~ table, 'select (select count(*) from ' ~ table
        ~ ') - (select coalesce(sum(rows_accepted + rows_flagged), 0) from ' ~ log_table ~ ' where feed = '
        ~ latecomer__sql_string(feed) ~ ') as unlogged') -%}
    {%- set unlogged = rows[0]['unlogged'] -%}
    {%- if unlogged > 0 -%}
        {{ log('The ' ~ feed ~ ' feed has ' ~ unlogged ~ ' bronze row(s) of files whose ingest stopped before its '
            ~ 'log row: read from bronze; landing each such file again completes its log row', info=true) }}
    {%- endif -%}
    {{ return(unlogged) }}
{%- endmacro %}

{#- The feeds' bronze tables, by feed name (as the ingest job names them). -#}
{% macro landing_feeds() -%}
    {{ return({'events': landing_relation('bronze', 'bronze_events'),
               'customers': landing_relation('bronze_crm', 'bronze_customer_changes')}) }}
{%- endmacro %}

{#- A landing source's relation, named from the graph rather than source():
    macros that tests and models both call read the landing tables without
    declaring them, and a view over them may be being replaced meanwhile. -#}
{% macro landing_relation(source_name, table_name) -%}
    {%- if not execute -%}
        {#- Parsing: no graph yet, and the SQL is not run. -#}
        {{ return(source_name ~ '.' ~ table_name) }}
    {%- endif -%}
    {%- for source_node in graph.sources.values()
            if source_node.source_name == source_name and source_node.name == table_name -%}
        {{ return(api.Relation.create(database=source_node.database, schema=source_node.schema,
                                      identifier=source_node.identifier)) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("No source " ~ source_name ~ "." ~ table_name ~ " in the project") }}
{%- endmacro %}
