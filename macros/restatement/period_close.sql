{#- Period close: what a change found for a final partition does (var
    period_close).

    restate   the partition is recomputed like any other; the row is flagged
              is_restated_after_final and the change audited;
    adjust    the partition keeps the numbers it was published with. The
              change is booked in gold_daily_revenue_adjustments on the day of
              as_of, an open period, referencing the day it belongs to, and
              the rollups add the adjustments booked in each period. A closed
              period never changes; every period together still sums to the
              truth.

    A partition is closed when it is final at the run's as_of. A first build
    or --full-refresh computes every partition from silver: nothing is
    closed, and the adjustments table starts empty. -#}

{% macro period_close() -%}
    {%- set mode = var('period_close', 'restate') | string | trim | lower -%}
    {%- if mode not in ('restate', 'adjust') -%}
        {{ exceptions.raise_compiler_error("period_close must be 'restate' or 'adjust', got '" ~ var('period_close') ~ "'") }}
    {%- endif -%}
    {{ return(mode) }}
{%- endmacro %}

{#- Whether this run keeps closed partitions as published (adjust, on an
    existing table). -#}
{% macro keeps_closed_partitions() -%}
    {{ return(period_close() == 'adjust' and is_incremental()) }}
{%- endmacro %}
