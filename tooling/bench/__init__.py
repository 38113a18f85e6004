"""Benchmark: restatement cost grows with the partitions that changed, not with history.

    python -m tooling.bench                           (make bench)
    python -m tooling.bench --smoke                   (make bench-smoke)
    python -m tooling.bench sweep --days 30,60,120    (make bench-sweep)

Generates a synthetic store history (tooling.synthetic), lands it through
the ingest job and builds it with dbt (models, seeds, snapshots and data
tests unless --no-tests), all in this process (one JVM). Then each variant
runs from the same starting tables:

  incremental   `dbt build` after one late batch touching k event-date
                partitions: only the changed partitions are recomputed;
  lookback      the same build of a copy of the project with
                tooling/bench/lookback.patch applied and
                --vars {restate_lookback_days: N}: every partition of the
                last N event days is recomputed and rewritten, as a
                static-lookback job would (plus the changed ones, so the
                result stays correct); the product has no such mode;
  full_refresh  `dbt build --full-refresh`: silver and gold rebuilt from bronze
                (late_arrival_audit is full_refresh: false and appends);
  floor         the least work that applies the late batch, a plain PySpark
                job, not dbt (tooling.bench.floor);
  nothing_new   `dbt build` with nothing landed since the initial build;
  patched       (with --candidate-patch FILE) the incremental build of the
                project with FILE applied: what a proposed change to the SQL
                saves, and, through the fingerprints, that it changes no
                result.

Before each run every Iceberg table is put back to its state after the
initial build, bronze with the late batch landed (nothing_new: without it):
the table is dropped from the catalog (its files stay) and its metadata file
of that moment is registered again (CALL spark_catalog.system.register_table);
a table that a full refresh recreated is dropped with PURGE first, which
deletes only the recreated files (tooling.bench.state).

Measured per variant: wall time of the build (median, min, max) and Spark
time (the sum of the Spark SQL executions' durations); per-model execution
time with the number of Spark SQL queries each model ran and their Spark time;
table versions (Iceberg snapshots) written; files, bytes and partitions
written and rewritten in every silver and gold table (the difference between
the table's `.files` before and after, plus its snapshot summaries); rows,
files and bytes read from bronze_events and silver (Spark SQL metrics of the
Iceberg scans); fingerprints of silver_events and gold_daily_revenue, which
the dbt builds of the late batch must share; and the incremental build's
time and Spark time as multiples of the full refresh, the lookback and the
floor. Medians over --repeat runs are printed and written, with the
machine's cores, memory and load, to bench_results/bench-<mode>-<time>.json
and .md (and latest-<mode>.json / .md).

Isolation and reuse: metastore and warehouse live in bench_results/state
(LATECOMER_STATE_DIR), each scale's tables in schemas
bench_d<days>_e<events>_* (--schema), dbt artifacts in bench_results/target.
Generated landing files are kept in bench_results/data/<scale>, and each
scale's landing in bronze is recorded (tooling.bench.landing): later runs of
the same scale put bronze back instead of landing again. The dbt project is
copied at the start (from the working tree, --project-source DIR or
--git-ref REF, plus any --patch), so edits made during a run do not change it;
lookback and patched build copies of that copy with their own diff applied
(a lookback.patch that no longer applies stops the run before any build).
"""
