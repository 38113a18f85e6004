"""Stand-in for dbt's `modules` context object when sqlfluff renders Jinja."""

import datetime
import re

__all__ = ["datetime", "re"]
