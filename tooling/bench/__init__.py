"""Benchmark: restatement cost grows with the partitions that changed, not with history.

    python -m tooling.bench                           (make bench)
    python -m tooling.bench --smoke                   (make bench-smoke)
    python -m tooling.bench --format delta            (one table format)
    python -m tooling.bench sweep --days 30,60,120    (make bench-sweep)

Runs on both table formats, Iceberg and Delta Lake, side by side (--format
both, the default unless LATECOMER_TABLE_FORMAT names one). A Spark JVM
serves one catalog configuration, so each format runs in a child process
(`python -m tooling.bench <the same arguments> --format <format>`), one after
the other, and the parent puts their reports side by side
(tooling.bench.side_by_side): per variant the wall time and Spark time on
each, and whether gold's and silver's fingerprints are the same on both
(same_gold_across_formats, same_silver_across_formats). A sweep runs one
format (--format, default Iceberg).

One format's run generates a synthetic store history (tooling.synthetic),
lands it through the ingest job and builds it with dbt (the format's target:
`local` for Iceberg, `delta` for Delta; models, seeds, snapshots and data
tests unless --no-tests), all in its process (one JVM). Then each variant
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
  microbatch    a peer: gold daily revenue as a stock dbt-spark microbatch
                model (tooling.bench.microbatch; batch_size day, lookback the
                lookback variant's days), built by stock dbt-spark on this
                session at the late batch's as-of, from the late batch's
                silver; its gold is checked against the dbt builds' and the
                event dates it leaves wrong are counted by cause;
  sqlmesh       a peer (SQLMesh in .venv-peers, which make bench installs): the
                same as a SQLMesh INCREMENTAL_BY_TIME_RANGE model with the
                same lookback on SQLMesh's Spark engine, this session, its
                state in DuckDB (tooling.bench.sqlmesh_peer), from SQLMesh in
                .venv-peers (tooling/bench/requirements-peers.txt), run as its
                daily schedule would after the late batch landed;
  patched       (with --candidate-patch FILE) the incremental build of the
                project with FILE applied: what a proposed change to the SQL
                saves, and, through the fingerprints, that it changes no
                result.

Before each run every table is put back to its state after the initial
build, bronze with the late batch landed (nothing_new: without it), by its
format (tooling.bench.state: TableFormat). Iceberg (tooling.bench.iceberg_state):
the table is dropped from the catalog (its files stay) and its metadata file
of that moment is registered again (CALL spark_catalog.system.register_table);
a table that a full refresh recreated is dropped with PURGE first, which
deletes only the recreated files. Delta (tooling.bench.delta_state): a
capture keeps a copy of the table's folder made of hard links, and the table
is put back by making its folder hold that copy's files again: it is at the
same version again (same number, no new commit, unlike RESTORE, which would
move the versions the project's skips compare), a table that a full refresh
dropped and created again (a seed) included.

Measured per variant: wall time of the build (median, min, max) and Spark
time (the sum of the Spark SQL executions' durations); per-model execution
time with the number of Spark SQL queries each model ran and their Spark time;
table versions (Iceberg snapshots, Delta commits) written; files, bytes and
partitions written and rewritten in every silver and gold table (the
difference between the table's live data files before and after: Iceberg's
`.files`, Delta's add actions; plus Iceberg's snapshot summaries or Delta's
operation metrics); rows, files and bytes read from bronze_events and silver
(Spark SQL metrics of the table scans: Iceberg's BatchScan, Delta's Parquet
scan, whose bytes Spark rounds); fingerprints of silver_events and
gold_daily_revenue (format-neutral SQL), which the dbt builds of the late
batch must share; and the incremental build's time and Spark time as
multiples of the full refresh, the lookback and the floor. Medians over
--repeat runs are printed and written, with the machine's cores, memory and
load, to bench_results/bench-<mode>-<format>-<time>.json and .md (and
latest-<mode>-<format>.json / .md); with both formats, the side-by-side
report (with each format's report in it) to bench-<mode>-<time>.json / .md
and latest-<mode>.json / .md.

Isolation and reuse: each format's metastore and warehouse live in
bench_results/state-<format> (LATECOMER_STATE_DIR), each scale's tables in
schemas bench_d<days>_e<events>_* (Delta: bench_d<days>_e<events>_delta_*;
--schema), dbt artifacts in bench_results/target-<format>.
Generated landing files are kept in bench_results/data/<scale>, and each
scale's landing in bronze is recorded (tooling.bench.landing): later runs of
the same scale put bronze back instead of landing again. The dbt project is
copied at the start (from the working tree, --project-source DIR or
--git-ref REF, plus any --patch), so edits made during a run do not change it;
lookback and patched build copies of that copy with their own diff applied
(a lookback.patch that no longer applies stops the run before any build).
"""
