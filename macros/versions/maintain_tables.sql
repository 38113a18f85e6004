{#- dbt run-operation maintain_tables [--args '{dry_run: true}']

    Maintenance of every table in the silver, gold and audit schemas (models,
    the logs macros write there, table_restores) within the retention horizon
    (version_retention_hours(): the longest watermark tier plus a margin). Per
    table: set missing retention properties, compact data files, expire
    versions created before the horizon, delete orphan files older than it.
    The version that was current when the horizon began and every later one
    stay readable, so time travel to any time inside the horizon keeps
    working; after expiry this is checked, and a table that lost a protected
    version fails the command.

    Arguments: dry_run (report what would change, change nothing), models (only
    these table names), now (the time the horizon is measured back from,
    default the current time; a later time simulates its passing). -#}
{% macro maintain_tables(dry_run=false, models=none, now=none) %}
    {%- set dry_run = (dry_run | string | lower) in ('true', '1', 'yes') -%}
    {%- set models = [models] if models is string else models -%}
    {%- set hours = version_retention_hours() -%}
    {%- set now_sql = checked_version_timestamp(now) if now is not none else 'current_timestamp()' -%}
    {%- set horizon_sql = now_sql ~ ' - make_dt_interval(0, ' ~ hours ~ ', 0, 0)' -%}
    {%- set times = run_query(
        "select date_format(" ~ horizon_sql ~ ", 'yyyy-MM-dd HH:mm:ss.SSSSSS') as cutoff, "
        ~ "date_format(least(" ~ horizon_sql ~ ", current_timestamp() - make_dt_interval(0, 25, 0, 0)), "
        ~ "'yyyy-MM-dd HH:mm:ss.SSSSSS') as orphan_cutoff").rows[0] -%}
    {%- set cutoff = times['cutoff'] -%}
    {%- set tables = versioned_tables(models) -%}
    {%- set totals = {'properties': 0, 'rewritten': 0, 'expired': 0, 'deleted': 0, 'orphans': 0} -%}
    {{ log('maintain_tables' ~ (' (dry run)' if dry_run else '') ~ ': ' ~ tables | length ~ ' table(s), '
        ~ target.table_format ~ ', horizon ' ~ hours ~ ' h: versions current at or after ' ~ cutoff
        ~ ' UTC stay readable' ~ ('' if now is none else ' (now = ' ~ now ~ ')'), info=true) }}
    {%- for table in tables -%}
        {%- set relation = table.relation -%}
        {{ log('maintain_tables [' ~ loop.index ~ '/' ~ loop.length ~ '] ' ~ relation ~ ' ...', info=true) }}
        {%- set changed_properties = ensure_retention_tblproperties(relation, dry_run) -%}
        {%- if current_version(relation) is none -%}
            {%- do totals.update({'properties': totals.properties + (1 if changed_properties else 0)}) -%}
            {{ log('    ' ~ ('set ' ~ changed_properties | join(', ') ~ '; ' if changed_properties else '')
                ~ 'no version yet, nothing else to do', info=true) }}
        {%- else -%}
            {%- set compaction = compact_table(relation, dry_run) -%}
            {%- set versions = table_versions(relation) -%}
            {%- set boundary = retention_boundary(versions, cutoff) -%}
            {%- set expiry = expire_versions(relation, boundary.expire_before, dry_run) -%}
            {%- set orphans = remove_orphan_files(relation, times['orphan_cutoff'], dry_run) -%}
            {%- set ids_before = versions | map(attribute='version') | unique | list -%}
            {%- set expired = [] -%}
            {%- if not dry_run -%}
                {%- set ids_after = table_versions(relation) | map(attribute='version') | unique | list -%}
                {%- for entry in boundary.protected if entry.version not in ids_after -%}
                    {{ exceptions.raise_compiler_error(
                        'maintain_tables: version ' ~ entry.version ~ ' of ' ~ relation ~ ' (current from '
                        ~ entry.committed_at ~ ') is inside the horizon and is no longer readable.') }}
                {%- endfor -%}
                {%- for version in ids_before if version not in ids_after -%}
                    {%- do expired.append(version) -%}
                {%- endfor -%}
            {%- endif -%}
            {%- do totals.update({
                'properties': totals.properties + (1 if changed_properties else 0),
                'rewritten': totals.rewritten + (compaction.rewritten_files or 0),
                'expired': totals.expired + (expired | length if not dry_run else (expiry.candidates or 0)),
                'deleted': totals.deleted + (expiry.deleted_files or 0),
                'orphans': totals.orphans + (orphans.orphan_files or 0),
            }) -%}
            {%- if dry_run -%}
                {{ log('    would set ' ~ (changed_properties | join(', ') or 'no properties')
                    ~ '; would compact; would expire ' ~ (expiry.candidates if expiry.candidates is not none else 'unreferenced')
                    ~ ' version(s) created before ' ~ boundary.expire_before ~ '; '
                    ~ (orphans.orphan_files if orphans.orphan_files is not none else 'no separate')
                    ~ ' orphan file(s); ' ~ boundary.protected | length ~ ' of ' ~ versions | length ~ ' version(s) protected',
                    info=true) }}
            {%- else -%}
                {{ log('    ' ~ ('set ' ~ changed_properties | join(', ') ~ '; ' if changed_properties else '')
                    ~ 'compaction rewrote ' ~ (compaction.rewritten_files if compaction.rewritten_files is not none else 'some')
                    ~ ' file(s); expired ' ~ expired | length ~ ' version(s) created before ' ~ boundary.expire_before
                    ~ ' (' ~ (expiry.deleted_files if expiry.deleted_files is not none else 'unreported') ~ ' file(s) deleted); '
                    ~ (orphans.orphan_files if orphans.orphan_files is not none else 'vacuum covered')
                    ~ ' orphan file(s); ' ~ boundary.protected | length ~ ' version(s) inside the horizon kept',
                    info=true) }}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{ log('maintain_tables summary' ~ (' (dry run, nothing changed)' if dry_run else '') ~ ': '
        ~ tables | length ~ ' table(s); retention properties ' ~ ('to set on ' if dry_run else 'set on ')
        ~ totals.properties ~ '; ' ~ totals.rewritten ~ ' data file(s) rewritten; '
        ~ totals.expired ~ ' version(s) ' ~ ('to expire' if dry_run else 'expired') ~ ', '
        ~ totals.deleted ~ ' file(s) deleted; ' ~ totals.orphans ~ ' orphan file(s) '
        ~ ('found' if dry_run else 'removed') ~ '; nothing current at or after ' ~ cutoff ~ ' UTC was expired.',
        info=true) }}
{% endmacro %}

{#- Sets retention_tblproperties() on an existing table where they differ.
    Returns the keys set (or that would be, on a dry run). -#}
{% macro ensure_retention_tblproperties(relation, dry_run=false) -%}
    {%- set wanted = retention_tblproperties() -%}
    {%- set current = {} -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- do current.update({row[0]: row[1] | string}) -%}
    {%- endfor -%}
    {%- set changed = {} -%}
    {%- for key, value in wanted.items() if current.get(key) != value -%}
        {%- do changed.update({key: value}) -%}
    {%- endfor -%}
    {%- if changed and not dry_run -%}
        {#- statement, not run_query: an ALTER returns no result set on Thrift. -#}
        {%- call statement('set_retention_tblproperties') -%}
            alter table {{ relation }} set tblproperties ({{ tblproperties_assignments(changed) }})
        {%- endcall -%}
    {%- endif -%}
    {{ return(changed.keys() | list) }}
{%- endmacro %}
