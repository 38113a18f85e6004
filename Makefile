# latecomer: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-docs.txt pyproject.toml adapter/pyproject.toml | sha1sum | cut -c1-12)
DBT := $(BIN)/dbt
DBT_FLAGS := --profiles-dir profiles
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)

.PHONY: help install run report system metastore-start metastore-status metastore-stop test test-delta lint check-project docs docs-site thrift-start thrift-status thrift-stop driver-start driver-status driver-stop bench bench-smoke bench-sweep faults steward maintain restore gold-versions clean

HADOOP_JAR := jvm/build/latecomer-hadoop.jar
JVM_ARCHIVE := jvm/build/latecomer-driver.jsa
# The table formats' and connectors' jars (python_jobs/core/spark_config.py JARS), in the folder
# the sessions read them from; the stamp is kept there, so a new folder is filled.
JARS_DIR := $(or $(LATECOMER_JARS_DIR),jvm/jars)
JARS_STAMP := $(JARS_DIR)/.fetched

install: $(STAMP) $(JARS_STAMP) $(HADOOP_JAR) $(JVM_ARCHIVE)

$(STAMP):
	@command -v java >/dev/null || { echo "Java is missing: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-docs.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e . -e ./adapter
	rm -f $(VENV)/.installed-* && touch $@

# Iceberg's, Delta's and Spark's Kafka connector's jars from the Maven registry, at their pinned versions
# and sha256 (python_jobs/operations/fetch_jars.py); jars already there are
# checked, not fetched again. Fetched again when the pins change.
$(JARS_STAMP): python_jobs/core/spark_config.py python_jobs/operations/fetch_jars.py | $(STAMP)
	$(BIN)/python -m python_jobs.operations.fetch_jars
	touch $@

# Hadoop's local file system without a chmod process per file (jvm/src; used by
# python_jobs/core/spark_config.py on local masters). Without javac (a JRE
# only), Spark keeps Hadoop's own. This and the archive below are built again
# when their sources or the pinned requirements change (the venv only has to
# exist: `| $(STAMP)`).
$(HADOOP_JAR): requirements.txt $(wildcard jvm/src/latecomer/hadoop/*.java) | $(STAMP)
	@command -v javac >/dev/null || { echo "javac is missing: Spark keeps Hadoop's local file system" \
		"(a chmod process per file written). Install a JDK to build $@."; exit 0; }; \
	jars=$$($(BIN)/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")'); \
	rm -rf jvm/build/classes && mkdir -p jvm/build/classes && \
	javac -nowarn -Xlint:-options --release 8 -cp "$$jars/*" -d jvm/build/classes $(filter %.java,$^) && \
	jar --create --file $@ -C jvm/build/classes .

# The classes a command's driver JVM loads at start-up, archived from a warm-up
# session with the same class path (python_jobs/operations/jvm_archive.py).
# Without it JVMs load their classes as usual, so a failure here stops nothing.
$(JVM_ARCHIVE): requirements.txt $(JARS_STAMP) $(wildcard $(HADOOP_JAR)) python_jobs/core/spark_config.py python_jobs/operations/jvm_archive.py python_jobs/operations/warm_up.py | $(STAMP)
	$(BIN)/python -m python_jobs.operations.jvm_archive || true

## help: these lines, what each target does
help:
	@sed -n 's/^## \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

## run: land the sample data through ingest and `dbt build` it on the local target (TABLE_FORMAT=delta: on Delta Lake)
run: install
	$(if $(TABLE_FORMAT),LATECOMER_TABLE_FORMAT=$(TABLE_FORMAT) )$(BIN)/python -m python_jobs.operations.run_sample

## report: the HTML report of the built tables (lateness, completeness backtest, restatements, live vs final,
##   quarantine) -> target/report/index.html; REPORT_ARGS="--schema ... --target ..." to read another deployment
report: install
	$(BIN)/python -m python_jobs.operations.report --out target/report/index.html $(REPORT_ARGS)

## system: the Debian packages the tests use, installed with apt-get where missing (as root, or through
##   sudo): chromium (the report and the docs site in a browser), PostgreSQL 15 (the shared catalog's
##   database, tests/pytest/test_shared_metastore.py) and Maven (the metastore service's class path)
SYSTEM_PACKAGES := chromium:chromium postgresql-15:/usr/lib/postgresql/15/bin/initdb maven:mvn
system:
	@missing=; for entry in $(SYSTEM_PACKAGES); do \
		command -v "$${entry#*:}" >/dev/null || missing="$$missing $${entry%%:*}"; done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ]; then sudo=; \
	elif command -v sudo >/dev/null; then sudo=sudo; \
	else echo "Missing Debian packages:$$missing; this user cannot install them: apt-get install$$missing as root"; \
		exit 1; fi; \
	echo "Installing Debian packages:$$missing"; \
	$$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing

# The Hive metastore service's class path (jvm/metastore/pom.xml, checked against jars.sha256), resolved
# with Maven by `python -m python_jobs.operations.metastore fetch` for the shared catalog.
METASTORE_HOME := $(or $(LATECOMER_METASTORE_HOME),jvm/build/metastore)
METASTORE_STAMP := $(METASTORE_HOME)/.fetched
$(METASTORE_STAMP): jvm/metastore/pom.xml jvm/metastore/jars.sha256 $(wildcard jvm/metastore/src/main/java/latecomer/metastore/*.java) | $(STAMP)
	$(BIN)/python -m python_jobs.operations.metastore fetch
	touch $@

# An Apache Kafka broker (jvm/kafka/pom.xml, checked against jars.sha256), resolved with Maven by
# `python -m python_jobs.operations.kafka_broker fetch` for the streaming tests (tests/pytest/test_stream.py).
KAFKA_HOME := $(or $(LATECOMER_KAFKA_HOME),jvm/build/kafka)
KAFKA_STAMP := $(KAFKA_HOME)/.fetched
$(KAFKA_STAMP): jvm/kafka/pom.xml jvm/kafka/jars.sha256 | $(STAMP)
	$(BIN)/python -m python_jobs.operations.kafka_broker fetch
	touch $@

## metastore-start, metastore-status, metastore-stop: the shared catalog, a Hive metastore service on a
##   PostgreSQL cluster in the state dir (docs/shared-catalog.md); start prints the LATECOMER_METASTORE_URI to use
metastore-start metastore-status metastore-stop: install $(METASTORE_STAMP)
	$(BIN)/python -m python_jobs.operations.metastore $(subst metastore-,,$@)

## test: the whole test suite on both table formats at once (tests/suite.py): a queue of pytest runs two at a
##   time, the longest first: on Iceberg every test (dbt in-process, a real Thrift server, a standalone Spark
##   cluster, the shared catalog under load) and dbt's adapter conformance suite (session and Thrift targets), on
##   Delta Lake the core scenarios and the adapter suite; `make lint` beside them at the lowest CPU priority. A line
##   says when lint has finished, its output (target/lint.log) follows the tests', and either failing fails the target.
test: install system $(METASTORE_STAMP) $(KAFKA_STAMP)
	@mkdir -p target
	@( nice -n 19 $(MAKE) --no-print-directory lint > target/lint.log 2>&1 \
		&& echo "make lint passed, beside the tests (target/lint.log)" \
		|| { echo "make lint FAILED, beside the tests (target/lint.log)"; exit 1; } ) & lint=$$!; \
	$(BIN)/python -m tests.suite; tests=$$?; \
	wait $$lint; linted=$$?; \
	echo "== make lint (run beside the tests) =="; cat target/lint.log; \
	[ $$tests = 0 ] && [ $$linted = 0 ]

## test-delta: every scenario on Delta Lake alone, in two pytest-xdist workers (a Delta session, dbt's delta
##   target; TESTS=<files> for fewer); fetches the Kafka broker test_stream.py runs on Delta too.
##   A test of a mechanism only Iceberg has skips, naming it.
test-delta: install $(KAFKA_STAMP)
	LATECOMER_TEST_FORMAT=delta $(BIN)/python -m pytest -n 2 --dist loadfile $(TESTS)

## test-adapter: dbt's adapter conformance suite (dbt-tests-adapter; tests/adapter/) on the session target, one
##   table format per process: ADAPTER_FORMAT=iceberg (default) or delta; ADAPTER_TARGET=thrift runs the basic suite
##   on a Thrift server instead (started and stopped by the suite). `make test` runs all three.
ADAPTER_FORMAT ?= iceberg
ADAPTER_TARGET ?= session
.PHONY: test-adapter
test-adapter: install
	ADAPTER_FORMAT=$(ADAPTER_FORMAT) ADAPTER_TARGET=$(ADAPTER_TARGET) $(BIN)/python -m pytest tests/adapter $(TESTS)

## lint: ruff (its rules and its format), then sqlfluff (sparksql) on every core (--processes 0), after check-project
##   and docs-site
lint: install check-project docs-site
	$(BIN)/ruff check python_jobs tooling adapter tests lint
	$(BIN)/ruff format --check python_jobs tooling adapter tests lint
	$(BIN)/sqlfluff lint --processes 0 models snapshots tests

## check-project: `dbt parse` (unit tests included, no Spark), then dbt-score holds the project's rules on the
##   manifest: models, columns, seeds and macros documented, primary keys tested, public models contracted
##   (pyproject.toml [tool.dbt-score], tooling/dbt_score_rules.py)
check-project: install
	LATECOMER_UNIT_TESTS=true $(DBT) parse $(DBT_FLAGS) --target-path target/check-project
	$(BIN)/dbt-score lint --manifest target/check-project/manifest.json

docs: install
	$(DBT) docs generate $(DBT_FLAGS)

## docs-site: the documentation site (docs/, mkdocs.yml) -> target/site/index.html; --strict: a broken link or
##   anchor fails it (tests/pytest/test_docs_site.py opens it in headless Chromium). Needs only the venv.
docs-site: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir target/site

## thrift-start, thrift-status, thrift-stop: a Spark Thrift Server for the thrift target (docs/thrift-server.md)
## driver-start, driver-status, driver-stop: a warm driver that `dbt build` and the other commands on the state dir
##   attach to (docs/warm-driver.md)
thrift-start thrift-status thrift-stop driver-start driver-status driver-stop: install
	$(BIN)/python -m python_jobs.operations.$(if $(filter thrift-%,$@),thrift_server,warm_driver) $(lastword $(subst -, ,$@))

# The benchmark's peers' own packages (SQLMesh), never the product's: a venv of their own
# (tooling/bench/requirements-peers.txt), which the benchmark puts after its own on the path.
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-$(shell sha1sum tooling/bench/requirements-peers.txt | cut -c1-12)

$(PEERS_STAMP):
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r tooling/bench/requirements-peers.txt
	rm -f $(PEERS_VENV)/.installed-* && touch $@

## bench: synthetic 60-day history; what a late batch costs: incremental vs static lookback vs full refresh
##   vs the floor (a plain PySpark job) vs the peers (dbt microbatch, SQLMesh: installed in .venv-peers first),
##   and a build with nothing new, on Iceberg and on Delta Lake side by side
##   (each in a process of its own; BENCH_ARGS="--format delta" for one, BENCH_ARGS="--help" for options);
##   then the late batch and nothing new as users run them: each `dbt build` a new process, through a
##   Thrift server, and attached to a warm driver (BENCH_ARGS="--as-users 0" leaves that out)
bench: install $(PEERS_STAMP) $(KAFKA_STAMP)
	$(BIN)/python -m tooling.bench $(BENCH_ARGS)

## bench-smoke: the same at a tiny scale, both formats (what tests/pytest/test_bench_smoke.py checks on one)
bench-smoke: install $(PEERS_STAMP)
	$(BIN)/python -m tooling.bench --smoke $(BENCH_ARGS)

## bench-sweep: the same late batch at 30, 60 and 120 days of history (SWEEP_ARGS="--days 30,60,120 ...")
bench-sweep: install
	$(BIN)/python -m tooling.bench sweep $(SWEEP_ARGS)

## faults: SIGKILL ingests and builds at model boundaries and random points, run again, compare with the
##   reference (FAULTS_ARGS="--boundaries --seeds 1,2,3", or --nodes m1,m2; about 2 minutes per fault on 2 cores)
faults: install
	$(BIN)/python -m tests.pytest.faults $(FAULTS_ARGS)

## steward: list quarantined rows (release/reject: python -m python_jobs.landing.steward --help)
steward: install
	$(BIN)/python -m python_jobs.landing.steward list

## The values of maintain, restore and gold-versions reach python_jobs/operations/run_operation.py as
##   environment variables, taken as written ($(value ...): no make expansion), never as shell text.
##   Unexported under their own names: make would expand them (and any $(shell ...) in them) to export them.
unexport MODEL VERSION AS_OF_TIME INVOCATION_ID REASON EVENT_DATE DRY_RUN

## maintain: snapshot expiry, compaction, orphan cleanup within the retention horizon (DRY_RUN=true to report only)
maintain: export LATECOMER_MAINTAIN_DRY_RUN = $(value DRY_RUN)
maintain: install
	$(BIN)/python -m python_jobs.operations.run_operation maintain_tables

## restore: one restated gold table back to an earlier version for a re-run:
##   make restore MODEL=gold_daily_revenue VERSION=<id> (or AS_OF_TIME=<ISO-8601> or INVOCATION_ID=<id>) REASON="..."
restore: export LATECOMER_RESTORE_MODEL = $(value MODEL)
restore: export LATECOMER_RESTORE_VERSION = $(value VERSION)
restore: export LATECOMER_RESTORE_AS_OF_TIME = $(value AS_OF_TIME)
restore: export LATECOMER_RESTORE_INVOCATION_ID = $(value INVOCATION_ID)
restore: export LATECOMER_RESTORE_REASON = $(value REASON)
restore: install
	$(BIN)/python -m python_jobs.operations.restore

## gold-versions: every version of a partition with deltas: make gold-versions EVENT_DATE=2024-01-03 [MODEL=...]
gold-versions: export LATECOMER_GOLD_VERSIONS_MODEL = $(value MODEL)
gold-versions: export LATECOMER_GOLD_VERSIONS_EVENT_DATE = $(value EVENT_DATE)
gold-versions: install
	$(BIN)/python -m python_jobs.operations.run_operation gold_versions

clean:
	rm -rf target .latecomer logs
