"""Which share of the Spark session's cores each dbt thread gets.

dbt runs up to ``threads`` nodes at once on one in-process Spark session.
Under Spark's default FIFO scheduler a job waits until every task of the jobs
submitted before it has started: a data test reading a few rows queued for
seconds behind a model's large stage, and the models downstream of that test
waited with it. The session runs the fair scheduler (``spark.scheduler.mode
FAIR``, set in python_jobs/core/spark_config.py) and each dbt thread submits
its jobs to a pool of its own, so a small job gets the next free core while
a large one keeps the rest.
"""

from __future__ import annotations

import itertools
import threading

from pyspark import SparkContext

# Pools are created by Spark on first use and never removed: a long-lived
# process (the test suite, a Thrift server) cycles through a bounded set.
POOLS = 16
_next_pool = itertools.count()
_this_thread = threading.local()


def use_thread_pool() -> None:
    """Send the calling thread's Spark jobs to its own fair-scheduler pool
    (a no-op without an in-process Spark context)."""
    if getattr(_this_thread, "pool", None) is not None:
        return
    context = SparkContext._active_spark_context
    if context is None:
        return
    _this_thread.pool = f"dbt-thread-{next(_next_pool) % POOLS}"
    context.setLocalProperty("spark.scheduler.pool", _this_thread.pool)
