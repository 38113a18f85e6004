"""The project's macros rendered without dbt's runtime or Spark, to test the SQL and steps they emit.

Like dbt, each ``{% macro %}`` and ``{% materialization %}`` block of a file
becomes a callable of one shared namespace, so a macro calls the others, in
its file or another, by name, and ``return(value)`` makes the call return
``value``. A test loads the macro files it needs, then replaces in the
namespace what the test is not about: dbt's context (``config``, ``adapter``,
``this``, ...) and the macros of other concerns. ``statement`` and
``run_query`` are recorded, in order, in ``Rendered.statements``, and so is a
result stored without a statement (``store_result``); the answers of
``run_query`` are the test's (``answer``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt_common.clients.jinja import extract_toplevel_blocks, get_environment

from tests.pytest.conftest import ROOT

MACRO_PREFIX = "dbt_macro__"
# The platform's macros: the adapter's include folder.
PLATFORM = "adapter/dbt/include/latecomer/macros"


class Returned(Exception):
    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def _raise_return(value: Any) -> None:
    raise Returned(value)


def squeezed(sql: str) -> str:
    """``sql`` on one line, runs of whitespace as one space."""
    return " ".join(sql.split())


@dataclass
class Rows:
    """What ``run_query`` returns: an agate-like table of ``rows`` (tuples)."""

    rows: list[tuple[Any, ...]]

    @property
    def columns(self) -> list[Any]:
        return [Column([row[i] for row in self.rows]) for i in range(len(self.rows[0]) if self.rows else 0)]


@dataclass
class Column:
    items: list[Any]

    def values(self) -> list[Any]:
        return self.items


@dataclass
class Rendered:
    """A namespace of macros and the statements they ran."""

    namespace: dict[str, Any]
    # (kind, name, sql): kind 'statement' (its name), 'query' (run_query) or
    # 'result' (store_result: its name, and the response for sql).
    statements: list[tuple[str, str | None, str]] = field(default_factory=list)
    # run_query answers: the first (prefix of the squeezed SQL, rows) that matches.
    answers: list[tuple[str, list[tuple[Any, ...]]]] = field(default_factory=list)

    def answer(self, sql_prefix: str, rows: list[tuple[Any, ...]]) -> None:
        self.answers.append((sql_prefix, rows))

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.namespace[name](*args, **kwargs)

    def sql(self, kind: str | None = None) -> list[str]:
        return [sql for k, _, sql in self.statements if kind in (None, k)]

    def names(self) -> list[str | None]:
        return [name for kind, name, _ in self.statements if kind == "statement"]

    def _statement(self, name: str | None = None, *args: Any, caller: Callable[[], str], **kwargs: Any) -> str:
        self.statements.append(("statement", name, squeezed(caller())))
        return ""

    def _store_result(self, name: str, response: Any, agate_table: Any = None) -> str:
        self.statements.append(("result", name, str(response)))
        return ""

    def _run_query(self, sql: str) -> Rows:
        text = squeezed(sql)
        self.statements.append(("query", None, text))
        for prefix, rows in self.answers:
            if text.startswith(prefix):
                return Rows(rows)
        raise AssertionError(f"no answer for run_query: {text}")


def load(*paths: str, **context: Any) -> Rendered:
    """The macros of ``paths`` (from the project's root) in one namespace, with ``context`` (names dbt provides)."""
    env = get_environment()
    namespace: dict[str, Any] = {"return": _raise_return, "log": lambda *args, **kwargs: "", "execute": True}
    rendered = Rendered(namespace)
    namespace["statement"] = rendered._statement
    namespace["run_query"] = rendered._run_query
    namespace["store_result"] = rendered._store_result
    for path in paths:
        text = (ROOT / path).read_text()
        for block in extract_toplevel_blocks(text, allowed_blocks={"macro", "materialization"}):
            if getattr(block, "block_type_name", None) not in ("macro", "materialization"):
                continue  # text between blocks
            module = env.from_string(block.full_block, globals=namespace).module
            # dbt's environment names a block's macro dbt_macro__<name>, a
            # materialization's name being materialization_<name>_<adapter>
            (macro_name,) = [name for name in vars(module) if name.startswith(MACRO_PREFIX)]
            namespace[macro_name.removeprefix(MACRO_PREFIX)] = _returning(getattr(module, macro_name))
    namespace.update(context)
    return rendered


def _returning(macro: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return macro(*args, **kwargs)
        except Returned as returned:
            return returned.value

    return call
