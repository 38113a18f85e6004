"""The invocation's memo: values and query results kept for one dbt invocation.

A figure every model needs once (``memo_set``/``memo_get``), the rows of a
query run once however many threads ask (``memo_query``), and the passing
result of a data test answered from such a figure without a query. Every key
is scoped to the dbt invocation id: another invocation, or anything outside
dbt, may have changed the tables since.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt_common.clients.agate_helper import table_from_data_flat
from dbt_common.invocation import get_invocation_id


class MemoMixin(metaclass=AdapterMeta):
    """LatecomerAdapter's memo methods, on the adapter's ``_memo``, ``_memo_locks`` and ``_memo_locks_guard``."""

    @available
    def memo_has(self, key: str) -> bool:
        """Whether ``memo_set`` kept a value under ``key`` in this invocation."""
        return (get_invocation_id(), key) in self._memo

    @available
    def memo_get(self, key: str) -> Any:
        return self._memo.get((get_invocation_id(), key))

    @available
    def memo_set(self, key: str, value: Any) -> str:
        """Keep ``value`` for the rest of this invocation (a figure every model needs once)."""
        self._memo[(get_invocation_id(), key)] = value
        return ""

    @available
    def passing_test_result(self, message: str = "OK") -> dict[str, Any]:
        """A data test's result, passed, for a test answered without a query.

        The shape dbt's test runner reads from ``load_result('main')``: one row
        of failures, should_warn and should_error, and the adapter's response,
        whose message (run_results.json's adapter_response) says why.
        """
        table = table_from_data_flat(
            [{"failures": 0, "should_warn": False, "should_error": False}],
            ["failures", "should_warn", "should_error"],
        )
        return {"response": AdapterResponse(_message=message), "table": table}

    @available
    def memo_query(self, key: str, sql: str) -> list[dict[str, Any]]:
        """The rows of ``sql`` (as dicts), queried once per invocation under ``key``.

        A thread that asks while another one runs the query waits for its
        answer instead of running it again (tests that run side by side and
        share one figure).
        """

        def rows() -> list[dict[str, Any]]:
            _, table = self.execute(sql, fetch=True)
            return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]

        return self._memo_once(key, rows)

    def _memo_once(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value kept under ``key`` in this invocation, computed by the
        first thread to ask; the others wait for it."""
        memo_key = (get_invocation_id(), key)
        with self._memo_locks_guard:
            lock = self._memo_locks.setdefault(memo_key, threading.Lock())
        with lock:
            if memo_key not in self._memo:
                self._memo[memo_key] = compute()
        return self._memo[memo_key]
