"""dbt_project.yml vars for sqlfluff's Jinja rendering (read, never repeated)."""

from pathlib import Path

import yaml

_PROJECT = Path(__file__).resolve().parents[2] / "dbt_project.yml"
VARS = yaml.safe_load(_PROJECT.read_text())["vars"]


def get(name, default=None):
    value = VARS.get(name, default)
    if isinstance(value, str) and "{{" in value:
        return "rendered_by_dbt"  # dbt renders Jinja inside vars; a placeholder suffices here
    return default if value is None else value
