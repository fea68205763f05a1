# kaudit: `make demo` and `make test` set everything up themselves on a fresh machine
# (Python 3.11+, Java 17 and make are all they need; javac is installed when missing).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT    := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends
PYTEST_ARGS ?=
# `make test` and `make unit` run the suite on this many pytest-xdist workers (tests/conftest.py
# says which tests share a worker); 1 runs it in one process
TEST_WORKERS ?= 2
XDIST = $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
ZK_KERNELS := $(VENV)/.zk-kernels
KAFKA_KERNELS := $(VENV)/.kafka-kernels
KERNEL_CACHE := $(VENV)/.kernel-cache
SPARK_CLASSES := $(VENV)/kaudit-spark-classes.jsa
SPARK_JAR := $(VENV)/kaudit-spark.jar
DBT_PARSE := $(VENV)/kaudit-dbt-parse/session/partial_parse.msgpack

.PHONY: demo test unit integration bench bench-scale fuzz lint lint-py lint-sql docs docs-reference venv jdk zookeeper postgresql chromium airflow-venv cluster-jars iceberg-jars matrix clean distclean

demo: $(VENV)/.installed $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE)
	$(BIN)/kaudit demo

# lint and the docs first: a lint error or a broken docs link fails `make test` before the suite starts
test: lint docs $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE) zookeeper chromium airflow-venv cluster-jars iceberg-jars postgresql
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# Jars of the real Kafka/ZooKeeper releases the suite starts (testkit/cluster/versions.py), from
# Maven Central into .venv/kaudit-jars (testkit/cluster/maven.py); `make matrix` fetches them all.
CLUSTER_JARS ?= kafka-4.1.1 kafka-4.2.2 kafka-1.1.1 zookeeper-3.4.14 zookeeper-3.9.3
cluster-jars: $(VENV)/.installed-test
	$(BIN)/python -m testkit.cluster.maven $(CLUSTER_JARS)

# The Iceberg warehouse's jars for Spark (pipelines/warehouse/iceberg/jars.py) into .venv/kaudit-iceberg-jars,
# and S3Proxy, the S3-compatible server of the object-storage tests (testkit/storage.py), into
# .venv/kaudit-jars (testkit/cluster/maven.py), both from Maven Central.
iceberg-jars: $(VENV)/.installed-test
	$(BIN)/python -m pipelines.warehouse.iceberg.jars
	$(BIN)/python -m testkit.storage

# The real-cluster matrix: every (release, scenario) case, the suite's subset included.
MATRIX_TESTS ?= tests/integration/test_real_kraft.py tests/integration/test_real_zk_releases.py \
	tests/integration/test_real_zk_kafka.py tests/integration/test_real_zk_kafka_classic.py \
	tests/integration/test_real_share_streams.py tests/integration/test_tiered_storage.py \
	tests/integration/test_real_mm2.py tests/integration/test_real_kraft_fixtures_audited.py \
	tests/integration/test_migration_audit.py \
	tests/integration/test_iceberg_stores.py tests/integration/test_iceberg_kill.py \
	tests/integration/test_dbt_kill.py tests/integration/test_cluster_standalone.py \
	tests/integration/test_iceberg_remote.py
matrix: $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE)
	$(BIN)/python -m testkit.cluster.maven
	$(BIN)/python -m pipelines.warehouse.iceberg.jars
	$(BIN)/python -m pytest -m "matrix or not matrix" $(MATRIX_TESTS) $(PYTEST_ARGS)

unit: $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE)
	$(BIN)/python -m pytest -m "not integration" $(XDIST) $(PYTEST_ARGS)

bench: $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE) zookeeper
	@for b in $(filter-out benchmarks/bench_scale.py,$(wildcard benchmarks/bench_*.py)); do echo "== $$b"; PYTHONPATH=. $(BIN)/python $$b || exit 1; done

# The whole pipeline at 1M, 10M and 100M generated offset commits (hours on 2 cores, ~8 GB of
# inputs under /tmp/kaudit-scale at 100M): SCALE_RECORDS=1M,10M for less
SCALE_RECORDS ?= 1M,10M,100M
bench-scale: $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE)
	PYTHONPATH=. $(BIN)/python benchmarks/bench_scale.py --records $(SCALE_RECORDS)

# The corruption corpus at full size, outside the suite (which runs a few dozen cases): the
# fault tests with FUZZ_CASES damaged inputs each, then both sweeps over the command line; and
# the contract property tests (tests/property/) with more runs drawn than the suite's: report
# runs, validation runs (Spark, GX) and builds (Spark, dbt).
FUZZ_CASES ?= 300
FUZZ_REPORTS ?= 500
FUZZ_VALIDATIONS ?= 40
FUZZ_BUILDS ?= 10
fuzz: $(VENV)/.installed-test $(ZK_KERNELS) $(KERNEL_CACHE) $(SPARK_CLASSES) $(DBT_PARSE) zookeeper
	KAUDIT_FUZZ_CASES=$(FUZZ_CASES) $(BIN)/python -m pytest tests/fault $(PYTEST_ARGS)
	KAUDIT_PROPERTY_RANDOM=1 KAUDIT_PROPERTY_EXAMPLES=$(FUZZ_REPORTS) KAUDIT_PROPERTY_SPARK_EXAMPLES=$(FUZZ_VALIDATIONS) \
	KAUDIT_PROPERTY_BUILD_EXAMPLES=$(FUZZ_BUILDS) $(BIN)/python -m pytest tests/property $(PYTEST_ARGS)
	PYTHONPATH=. $(BIN)/python tests/fault/sweep_kafka.py --cases $(FUZZ_CASES)
	PYTHONPATH=. $(BIN)/python tests/fault/sweep_zk.py --cases $(FUZZ_CASES)

# ruff over the Python ([tool.ruff] in pyproject.toml), sqlfluff over the dbt project (.sqlfluff).
lint: lint-py lint-sql

lint-py: $(VENV)/.installed-test
	$(BIN)/ruff check .

# The dbt templater compiles every model and snapshot as dbt does; its relation cache makes
# dbt-spark's session start a local Spark (Derby metastore_db/ and target/ in the checkout, both
# ignored by git and removed by `make clean`). That is nearly all of `make lint`'s time; one
# process: `--processes 2` was slower (the dbt templater per process). The dbt templater skips
# macro files, so macros/ is linted with the jinja templater: every macro file must parse as
# Jinja (a syntax error in a macro's body fails) and what it renders outside its macros is linted
# (layout.indent left out: a file of macros renders to blank lines). The dbt templater's session
# gets an empty Iceberg catalog `kaudit` in target/lint-catalog (profiles.yml, target `lint`).
lint-sql: $(VENV)/.installed-test iceberg-jars
	mkdir -p target/lint-catalog
	KAUDIT_LINT_CATALOG=$(CURDIR)/target/lint-catalog KAUDIT_LINT_JARS=$$($(BIN)/python -c \
	  "from pipelines.warehouse.iceberg import jars; print(','.join(map(str, jars.paths())))") \
	  $(BIN)/sqlfluff lint models snapshots
	$(BIN)/sqlfluff lint --templater jinja --exclude-rules layout.indent macros

# The docs site (mkdocs.yml, docs/) into site/, offline; --strict: a broken link or anchor fails
# (not with --quiet, which hides the warnings that --strict counts).
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The generated reference pages (command line, tables) again from the code; a unit test
# (tests/unit/core/test_docs.py) fails while a committed page is stale.
docs-reference: $(VENV)/.installed
	$(BIN)/python -m pipelines.docs

venv: $(VENV)/.installed-test

# uv, bootstrapped inside the venv, does the installing (fast, resolves once).
$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv

# --compile-bytecode covers the dependencies; an editable install leaves kaudit's own modules to
# compileall (Python reads a .pyc even where PYTHONDONTWRITEBYTECODE stops it writing one).
$(VENV)/.installed: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e .
	$(BIN)/python -m compileall -q pipelines
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[test]'
	$(BIN)/python -m compileall -q pipelines testkit
	touch $(VENV)/.installed $@

# The ZooKeeper snapshot kernels compiled ahead of time into the venv (numba.pycc), so a
# `kaudit extract zk-snapshot` process does not pay numba's start-up (pipelines/zookeeper/native.py).
$(ZK_KERNELS): pipelines/zookeeper/kernels.py pipelines/zookeeper/kernel_tables.py pipelines/zookeeper/aot.py pipelines/aot.py | $(VENV)/.installed
	$(BIN)/python -m pipelines.zookeeper.aot
	touch $@

# The Kafka byte-walk kernels the same way (pipelines/kafka/native.py): `kaudit extract offsets`
# starts its workers without importing numba.
$(KAFKA_KERNELS): pipelines/kafka/kernels.py pipelines/kafka/kernel_tables.py pipelines/kafka/aot.py pipelines/aot.py | $(VENV)/.installed
	$(BIN)/python -m pipelines.kafka.aot
	touch $@

# The Kafka and KRaft kernels compiled into numba's on-disk cache (their __pycache__), so the
# first `kaudit extract offsets|log-end|kraft` does not compile them (pipelines/kernel_cache.py).
# Again after an install (a new numba invalidates its cache) or a change of the kernels.
$(KERNEL_CACHE): pipelines/kafka/kernels.py pipelines/kraft/kernels.py pipelines/kernel_cache.py $(VENV)/.installed $(KAFKA_KERNELS)
	$(BIN)/python -m pipelines.kernel_cache
	touch $@

# kaudit's jar for the driver JVMs (pipelines/spark/jar.py): its file: scheme, Hadoop's
# local file system without a `chmod` process per file and directory
# (pipelines/spark/NioLocalFileSystem.java), a session extension that coalesces a small run's
# exchanges into one partition (pipelines/spark/OnePartition.java), and no YARN defaults
# (pipelines/spark/yarn-default.xml). Compiled against pyspark's jars, so again after an install.
$(SPARK_JAR): pipelines/spark/NioLocalFileSystem.java pipelines/spark/OnePartition.java pipelines/spark/yarn-default.xml pipelines/spark/jar.py $(VENV)/.installed | jdk
	$(BIN)/python -m pipelines.spark.jar

# Spark's classes parsed and verified once into a class-data archive the driver JVMs map
# (pipelines/spark/class_archive.py): a session starts in ~2 s less. Again after an install,
# and after the jar above (the archive holds the classpath it was made with).
$(SPARK_CLASSES): pipelines/spark/class_archive.py $(VENV)/.installed $(SPARK_JAR)
	$(BIN)/python -m pipelines.spark.class_archive

# dbt's parse of the project, saved where the first build of every warehouse starts from it
# (pipelines/transform/dbt_runner.py: 0.3 s instead of 2.0-2.6 s in full). Again after an install
# and after a change of the project (dbt parses only what changed from an older one anyway).
$(DBT_PARSE): dbt_project.yml profiles.yml $(shell find models macros snapshots -type f 2>/dev/null) $(VENV)/.installed
	$(BIN)/python -m pipelines.transform.dbt_runner

# Airflow 3 + its Spark provider in their own venv: the provider pulls pyspark-client, which
# overwrites pyspark's files, so it never goes into $(VENV). The DAG runs kaudit from $(VENV).
AIRFLOW_VENV := .venv-airflow
airflow-venv: $(AIRFLOW_VENV)/.installed

$(AIRFLOW_VENV)/.installed: airflow/requirements.txt | $(BIN)/uv
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(BIN)/uv pip install -q --python $(AIRFLOW_VENV)/bin/python -r airflow/requirements.txt
	touch $@

apt-updated:
	@$(SUDO) apt-get update -qq

# javac for the jar above (Java 17's JDK; a JRE alone has none).
jdk:
	@command -v javac >/dev/null || { $(SUDO) apt-get update -qq && $(APT) openjdk-17-jdk-headless; }

# The real ZooKeeper 3.8 the tests drive (Debian package).
zookeeper:
	@test -x /usr/share/zookeeper/bin/zkServer.sh || { $(SUDO) apt-get update -qq && $(APT) zookeeper; }

# The PostgreSQL server of the Iceberg catalog's tests (testkit/postgres.py, Debian package).
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(APT) postgresql; }

# Headless Chromium renders the report in a test, as a person would see it.
chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(APT) chromium; }

# Run outputs (what `make demo`, `kaudit` and the tests leave in the checkout); the venvs stay.
clean:
	rm -rf warehouse warehouse.catalog.db demo-out .demo-out.staging target logs dbt_packages .pytest_cache spark-warehouse \
		metastore_db derby.log test-artifacts site

# ... and the venvs: the checkout as cloned.
distclean: clean
	rm -rf $(VENV) $(AIRFLOW_VENV)
