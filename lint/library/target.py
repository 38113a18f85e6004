"""Stand-in for dbt's `target` when sqlfluff renders Jinja: the default
local target (profiles/profiles.yml), so the Iceberg form of a format macro
is what gets linted."""

name = "local"
schema = "latecomer"
table_format = "iceberg"
