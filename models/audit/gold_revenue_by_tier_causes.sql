{#- Why each published version of a gold_revenue_by_tier row differs from the
    one before it, by cause (macros/publication/revenue_causes.sql). An
    event counts under the customer version believed valid at its event
    time, so two kinds of change move a row:
    - a silver change, counted under the versions believed when it was
      made: its new values where they now count, its previous values taken
      from where they counted;
    - a customer history change (gold_revenue_by_tier_changes,
      dimension_change): each event of the customer, as it was just before,
      moves from the member believed before the change to the one believed
      after it.
    Taken in the order they happened, each change starts where the one before
    left the event, so their contributions add up to the row's change. -#}
{{ config(partition_by=['explained_date'], skip_if_inputs_unchanged=true, as_of_dependent=false) }}

{%- set gold -%}
    select * from {{ ref('gold_revenue_by_tier') }}
{%- endset %}


{% call(lower_bound) revenue_causes(gold, ['event_date', 'tier', 'region']) -%}
    with changes as (
        select
            *,
            lag(changed_run_at) over (partition by source_system, event_id order by changed_run_at) as prior_run_at
        from {{ ref('silver_event_changes') }}
        where changed_run_at > {{ lower_bound }} and action != 'duplicate'
    ),

    versions as (
        select customer_id, tier, region, valid_from, valid_to, recorded_run_at, superseded_run_at
        from {{ ref('customer_history') }}
    ),

    dimension_steps as (
        select distinct customer_id, source_run_at
        from {{ ref('gold_revenue_by_tier_changes') }}
        where source_run_at > {{ lower_bound }}
    ),

    {#- Each step's customer's events as they were just before it: silver's
        row when no change came since, else what the first change since
        found (its previous values). #}
    events_before_step as (
        select
            steps.customer_id,
            steps.source_run_at,
            events.source_system,
            events.event_id,
            events.event_type,
            events.amount,
            events.event_ts,
            events.event_date,
            events.is_deleted
        from dimension_steps as steps
        inner join {{ ref('silver_events') }} as events on steps.customer_id = events.user_id
        left anti join changes
            on events.source_system = changes.source_system
            and events.event_id = changes.event_id
            and changes.changed_run_at >= steps.source_run_at
        union all
        select
            steps.customer_id,
            steps.source_run_at,
            changes.source_system,
            changes.event_id,
            changes.previous_event_type,
            changes.previous_amount,
            changes.previous_event_ts,
            changes.previous_event_date,
            changes.previous_is_deleted
        from dimension_steps as steps
        inner join changes
            on steps.customer_id = changes.previous_user_id
            and changes.changed_run_at >= steps.source_run_at
            and (changes.prior_run_at is null or changes.prior_run_at < steps.source_run_at)
    ),

    moves as (
        {#- Silver changes, under the versions believed when they were made. #}
        select
            changes.source_system,
            changes.event_id,
            changes.action,
            changes.watermark_tier,
            changes.change_reason,
            changes.lateness_seconds,
            changes.changed_run_at,
            changes.event_type,
            changes.amount,
            changes.event_date,
            changes.is_deleted,
            {{ customer_member('new_version.tier') }} as tier,
            {{ customer_member('new_version.region') }} as region,
            changes.previous_event_type,
            changes.previous_amount,
            changes.previous_event_date,
            changes.previous_is_deleted,
            {{ customer_member('previous_version.tier') }} as previous_tier,
            {{ customer_member('previous_version.region') }} as previous_region
        from changes
        left join versions as new_version
            on {{ believed_at('new_version', 'changes.user_id', 'changes.event_ts', 'changes.changed_run_at') }}
        left join versions as previous_version
            on {{ believed_at('previous_version', 'changes.previous_user_id', 'changes.previous_event_ts', 'changes.changed_run_at') }}
        union all
        {#- Customer history changes: the same event, from the member believed
            before to the one believed after. #}
        select
            events.source_system,
            events.event_id,
            'dimension_change' as action,
            cast(null as string) as watermark_tier,
            cast(null as string) as change_reason,
            cast(null as bigint) as lateness_seconds,
            events.source_run_at as changed_run_at,
            events.event_type,
            events.amount,
            events.event_date,
            events.is_deleted,
            {{ customer_member('after_step.tier') }} as tier,
            {{ customer_member('after_step.region') }} as region,
            events.event_type as previous_event_type,
            events.amount as previous_amount,
            events.event_date as previous_event_date,
            events.is_deleted as previous_is_deleted,
            {{ customer_member('before_step.tier') }} as previous_tier,
            {{ customer_member('before_step.region') }} as previous_region
        from events_before_step as events
        left join versions as after_step
            on {{ believed_at('after_step', 'events.customer_id', 'events.event_ts', 'events.source_run_at') }}
        left join versions as before_step
            on {{ believed_at('before_step', 'events.customer_id', 'events.event_ts', 'events.source_run_at', strict=true) }}
    )

    {{ silver_change_contributions('moves', {
        'event_date': ['event_date', 'previous_event_date'],
        'tier': ['tier', 'previous_tier'],
        'region': ['region', 'previous_region'],
    }, lower_bound) }}
{%- endcall %}
