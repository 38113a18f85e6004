{#- Revenue measures of a set of silver events (deleted events already excluded). -#}
{% macro revenue_measures() -%}
    count_if(event_type = 'order_placed') as orders,
    coalesce(sum(case when event_type = 'order_placed' then amount end), 0) as gross_revenue,
    coalesce(sum(case when event_type = 'refund' then amount end), 0) as refunds,
    coalesce(sum(case when event_type = 'order_placed' then amount end), 0)
    - coalesce(sum(case when event_type = 'refund' then amount end), 0) as net_revenue
{%- endmacro %}

{#- SQL struct of what one silver row adds to (sign '+') or takes from (sign
    '-') the revenue measures of the gold row it counts in: that row's key
    (`keys`: key column -> SQL of its value for this side), counts (false
    when the row is deleted or absent: it counts nowhere), orders,
    gross_revenue, refunds, from its columns named with `prefix` ('' or
    'previous_', in the change log). -#}
{% macro revenue_effect(prefix, sign, keys) -%}
    named_struct(
        {%- for key, value in keys.items() %}
        '{{ key }}', {{ value }},
        {%- endfor %}
        'counts', not coalesce({{ prefix }}is_deleted, false) and {{ prefix }}event_date is not null,
        'orders', {{ sign }}cast({{ prefix }}event_type = 'order_placed' as int),
        'gross_revenue',
        {{ sign }}case when {{ prefix }}event_type = 'order_placed' then coalesce({{ prefix }}amount, 0) else 0 end,
        'refunds', {{ sign }}case when {{ prefix }}event_type = 'refund' then coalesce({{ prefix }}amount, 0) else 0 end
    )
{%- endmacro %}

{#- A rollup of gold_daily_revenue per period (grain: 'week', 'month', 'quarter'
    or 'year', the last being year to date for the open year):
    a period is recomputed when one of its days changed, or an adjustment
    was booked in it (gold_daily_revenue_adjustments, period_close adjust),
    and holds its days plus the adjustments booked in it. Its status is its
    last day's: a quarter whose January is final is still live while its
    March is (restate). -#}
{% macro revenue_rollup(grain) -%}
    {%- set period = grain ~ '_start_date' -%}
    {%- set period_of = "cast(date_trunc('" ~ grain | upper ~ "', event_date) as date)" -%}
    {%- set booked_period_of = period_of | replace('event_date', 'booked_date') -%}
    {%- set measures = revenue_measure_names() -%}
    with daily_changes as (
        select
            {{ period_of }} as period_date,
            coalesce(case when restated_on = last_changed_at then restatement_reason end, 'insert') as action,
            changed_run_at
        from {{ ref('gold_daily_revenue') }}
        union all
        {#- An adjustment changes the period it is booked in, for the main
            reason of the change it books. #}
        select
            {{ booked_period_of }} as period_date,
            coalesce(adjustment_reason, 'insert') as action,
            changed_run_at
        from {{ ref('gold_daily_revenue_adjustments') }}
    ),

    impacted as (
        {{ changed_partitions('daily_changes', partition_expr='period_date', previous_partition_expr='period_date',
                              window_partition_expr=period_of | replace('event_date', 'd')) }}
    ),

    daily as (
        select {{ period_of }} as period_date, source_system, {{ measures | join(', ') }}
        from {{ ref('gold_daily_revenue') }}
        where {{ period_of }} in (select partition_value from impacted)
        union all
        select {{ booked_period_of }} as period_date, source_system,
            {{ measures | join(', ') }}
        from {{ ref('gold_daily_revenue_adjustments') }}
        where {{ booked_period_of }} in (select partition_value from impacted)
    ),

    recomputed as (
        select
            period_date as {{ period }},
            source_system,
            {%- for measure in measures %}
                sum({{ measure }}) as {{ measure }}{% if not loop.last %},{% endif %}
            {%- endfor %}
        from daily
        group by period_date, source_system
    ),

    final as (
        {{ restate('recomputed', 'impacted', [period, 'source_system'], measures, partition_column=period, grain=grain) }}
    )

    select * from final
{%- endmacro %}
