"""Jinja's compiled templates, kept for the life of the process.

dbt renders every node's SQL with ``Environment.from_string``, which parses
the text and generates and compiles Python code for it each time: in a
process that runs many builds (dbt's Python API, the test suite, the
benchmark), every build compiled the same templates again: about 0.8 s of the 6 s of
Python CPU in a build of the sample with nothing new, and 2.3 to 2.8 s of
its 15 s from start to end (docs/adapter.md).

The code Jinja generates depends on the text, the names given and the
environment's class, extensions and filters (its options are the same for
every environment dbt makes); the context a template runs with does not go
into it. So the code object (immutable) is kept under those, and every
environment of the same kind reuses it. Least recently used entries go past
``MAX_ENTRIES``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from types import CodeType
from typing import Any

import jinja2
from jinja2.utils import internal_code

MAX_ENTRIES = 4096

_compiled: OrderedDict[Hashable, Any] = OrderedDict()
_lock = threading.Lock()
_original: Callable[..., Any] | None = None


def cache_key(
    environment: jinja2.Environment, source: str, name: Any, filename: Any, raw: bool, defer_init: bool
) -> Hashable:
    """What the generated code depends on."""
    return (
        type(environment),
        tuple(sorted(environment.extensions)),
        frozenset(environment.filters),
        frozenset(environment.tests),
        source,
        name,
        filename,
        raw,
        defer_init,
    )


def _compile(
    environment: jinja2.Environment,
    source: Any,
    name: str | None = None,
    filename: str | None = None,
    raw: bool = False,
    defer_init: bool = False,
) -> str | CodeType:
    assert _original is not None
    if not isinstance(source, str):
        # A parsed template (nodes), not text: compiled as Jinja does.
        return _original(environment, source, name, filename, raw, defer_init)
    key = cache_key(environment, source, name, filename, raw, defer_init)
    with _lock:
        if key in _compiled:
            _compiled.move_to_end(key)
            return _compiled[key]
    code = _original(environment, source, name, filename, raw, defer_init)
    with _lock:
        _compiled[key] = code
        while len(_compiled) > MAX_ENTRIES:
            _compiled.popitem(last=False)
    return code


# Jinja leaves its own frames out of a template error's traceback.
internal_code.add(_compile.__code__)


def install() -> None:
    """Route ``jinja2.Environment.compile`` through the cache (once per process)."""
    global _original
    if _original is None:
        _original = jinja2.Environment.compile
        jinja2.Environment.compile = _compile  # type: ignore[method-assign]


def clear() -> None:
    with _lock:
        _compiled.clear()
