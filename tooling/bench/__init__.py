"""Benchmark: restatement cost grows with the partitions that changed, not with history.

    python -m tooling.bench            (make bench)
    python -m tooling.bench --smoke    (make bench-smoke)

Generates a synthetic store history (tooling.synthetic), lands it through
the ingest job and builds it with dbt, all in this process (one JVM). Then one
late batch touching k event-date partitions is processed three ways on the
same data, each from the same starting tables:

  incremental   `dbt build`: only the changed partitions are recomputed;
  lookback      `dbt build --vars {restate_lookback_days: N}`: every partition
                of the last N event days is recomputed and rewritten, as a
                static-lookback job would (plus the changed ones, so the
                result stays correct);
  full_refresh  `dbt build --full-refresh`: silver and gold rebuilt from bronze
                (late_arrival_audit is full_refresh: false and appends);
  patched       (with --candidate-patch FILE) the incremental build of the
                project with FILE applied: what a proposed change to the SQL
                saves, and, through the gold fingerprint, that it changes no
                result.

Between variants every non-bronze Iceberg table is put back to its state after
the initial build: the table is dropped from the catalog (its files stay) and
its metadata file of that moment is registered again
(CALL spark_catalog.system.register_table); a table that a full refresh
recreated is dropped with PURGE first, which deletes only the recreated files.
Bronze (append-only, late batch included) is never touched.

Measured per variant: dbt build wall time and per-model execution time, with
the number of Spark SQL queries each model ran and their Spark time; files,
bytes and partitions written and rewritten in every silver and gold table (the
difference between the table's `.files` before and after, plus its snapshot
summaries); rows, files and bytes read from bronze_events (Spark SQL metrics
of the Iceberg scans); and a fingerprint of gold_daily_revenue, which must be
the same for the three variants. Medians over --repeat runs are printed and
written, with the machine's cores, memory and load, to
bench_results/bench-<time>.json and .md (and latest-<mode>.json / .md).

Isolation: state (metastore and warehouse) lives in bench_results/state-<schema>
(LATECOMER_STATE_DIR, wiped at start), tables in schemas <schema>_* (--schema),
dbt artifacts in bench_results/target; generated landing files are kept in
bench_results/data/<scale> and reused by later runs of the same scale. The dbt
project is copied at the start (from the working tree, --project-source DIR or
--git-ref REF, plus any --patch), so edits made during a run do not change it.
"""
