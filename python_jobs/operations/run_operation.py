"""The run-operations that ``make`` offers, with values that never become shell or make text.

    python -m python_jobs.operations.run_operation gold_versions --event-date 2024-01-03 [--model gold_hourly_revenue]
    python -m python_jobs.operations.run_operation maintain_tables [--dry-run true]
    python -m python_jobs.operations.run_operation restore_table --model gold_daily_revenue --version ID --reason "why"

Runs ``dbt run-operation MACRO`` in this process. Each option defaults to an
environment variable (:data:`OPERATIONS`), which is how ``make gold-versions``,
``make maintain`` and ``make restore`` hand over their values: make passes
them as written (``$(value ...)``), and they reach dbt as YAML double-quoted
strings with every special character escaped, so a value holding quotes,
``$``, backticks or ``;`` is data, never code. An option left empty is left
out, and the macro's default applies.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from python_jobs.core.dbt_runner import DbtRunner
from python_jobs.core.spark_config import REPO_ROOT

# Per macro: its arguments and the environment variables that give them.
OPERATIONS: dict[str, dict[str, str]] = {
    "gold_versions": {
        "model": "LATECOMER_GOLD_VERSIONS_MODEL",
        "event_date": "LATECOMER_GOLD_VERSIONS_EVENT_DATE",
    },
    "maintain_tables": {"dry_run": "LATECOMER_MAINTAIN_DRY_RUN"},
    "restore_table": {
        "model": "LATECOMER_RESTORE_MODEL",
        "version": "LATECOMER_RESTORE_VERSION",
        "as_of_time": "LATECOMER_RESTORE_AS_OF_TIME",
        "invocation_id": "LATECOMER_RESTORE_INVOCATION_ID",
        "reason": "LATECOMER_RESTORE_REASON",
    },
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


def run(macro: str, argv: Sequence[str] | None = None, tool: str | None = None, description: str | None = None) -> int:
    """``dbt run-operation macro`` with its options from ``argv``, else from their environment
    variables; ``tool`` names the command in its usage and errors (default: ``run_operation macro``)."""
    env = OPERATIONS[macro]
    tool = tool or f"run_operation {macro}"
    parser = argparse.ArgumentParser(prog=f"python -m python_jobs.operations.{tool}", description=description)
    for argument, variable in env.items():
        parser.add_argument(f"--{argument.replace('_', '-')}", dest=argument, help=f"default: ${variable}")
    args = parser.parse_args(argv)
    values = {argument: getattr(args, argument) or os.environ.get(variable, "") for argument, variable in env.items()}
    given = {argument: value for argument, value in values.items() if value.strip()}
    try:
        document = operation_args(given)
    except ValueError as exc:
        print(f"{tool}: error: {exc}", file=sys.stderr)
        return 2
    result = DbtRunner(REPO_ROOT).invoke("run-operation", macro, "--args", document, check=False)
    return 0 if result.success else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in OPERATIONS:
        choices = ",".join(OPERATIONS)
        print(f"usage: python -m python_jobs.operations.run_operation {{{choices}}} [options]", file=sys.stderr)
        return 2
    return run(argv[0], argv[1:], description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
