"""Restore one restated gold table to an earlier version, for a re-run (``make restore``).

    python -m python_jobs.operations.restore --model gold_daily_revenue --version ID --reason "why"
    python -m python_jobs.operations.restore --model gold_daily_revenue --as-of-time 2024-01-22T00:00:00Z --reason "why"
    make restore MODEL=gold_daily_revenue VERSION=ID REASON="why"

Runs ``dbt run-operation restore_table`` (``macros/versions/restore_table.sql``)
in this process. Each option defaults to an environment variable
(:data:`ENV`), which is how ``make restore`` hands over MODEL, VERSION,
AS_OF_TIME, INVOCATION_ID and REASON: the values never become shell or make
text, and they reach dbt as YAML double-quoted strings with every special
character escaped, so a reason holding quotes, ``$``, backticks or ``;`` is
recorded as written.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from python_jobs.core.dbt_runner import DbtRunner
from python_jobs.core.spark_config import REPO_ROOT

# restore_table's arguments and the environment variables that give them.
ENV = {
    "model": "LATECOMER_RESTORE_MODEL",
    "version": "LATECOMER_RESTORE_VERSION",
    "as_of_time": "LATECOMER_RESTORE_AS_OF_TIME",
    "invocation_id": "LATECOMER_RESTORE_INVOCATION_ID",
    "reason": "LATECOMER_RESTORE_REASON",
}
YAML_ESCAPES = {'"': '\\"', "\\": "\\\\"}


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted string: printable ASCII as it is, everything else escaped.

    Raises ValueError for text that is not Unicode (lone surrogates: bytes
    that were not UTF-8 in the environment or the command line).
    """
    quoted = []
    for char in text:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError("holds bytes that are not UTF-8")
        if char in YAML_ESCAPES:
            quoted.append(YAML_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            quoted.append(char)
        elif code <= 0xFF:
            quoted.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            quoted.append(f"\\u{code:04x}")
        else:
            quoted.append(f"\\U{code:08x}")
    return '"' + "".join(quoted) + '"'


def operation_args(values: Mapping[str, str]) -> str:
    """The ``--args`` YAML mapping of ``values``, every value a quoted string (ValueError names a bad one)."""
    entries = []
    for name, value in values.items():
        try:
            entries.append(f"{name}: {yaml_string(value)}")
        except ValueError as exc:
            raise ValueError(f"{name} {exc}") from None
    return "{" + ", ".join(entries) + "}"


def build_parser() -> argparse.ArgumentParser:
    assert __doc__ is not None
    parser = argparse.ArgumentParser(prog="python -m python_jobs.operations.restore", description=__doc__)
    for name, env in ENV.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, help=f"default: ${env}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    values = {name: getattr(args, name) or os.environ.get(env, "") for name, env in ENV.items()}
    given = {name: value for name, value in values.items() if value.strip()}
    try:
        document = operation_args(given)
    except ValueError as exc:
        print(f"restore: error: {exc}", file=sys.stderr)
        return 2
    result = DbtRunner(REPO_ROOT).invoke("run-operation", "restore_table", "--args", document, check=False)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
