# make demo | lint | test | test-fast | test-integration | test-all | test-deep | jars | bench-quick |
# bench | bench-soak
VENV := .venv
PY := $(VENV)/bin/python
HYPOTHESIS_PROFILE ?= ci
# Test processes, each with its own SparkSession; test files are spread over them.
TEST_WORKERS ?= 2
# make test leaves out the tests that start Spark in other processes, run for minutes or run
# the TPC-H views (make test-integration); make test-all runs both in one run, as CI does. make
# test-deep runs them all, with many more examples.
TEST_MARKERS ?= not slow and not tpch
# Hypothesis draws other examples every run, from this seed, which each test target prints
# first and again after a failure: SEED=<it> draws the same examples again.
RANDOM_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
SEED ?= $(RANDOM_SEED)
RERUN_AS ?= $@
RERUN = hypothesis seed $(SEED): rerun with make $(RERUN_AS) SEED=$(SEED)
comma := ,

.PHONY: demo lint test test-fast test-integration test-all test-deep jars bench-quick bench bench-soak

demo test test-integration test-all test-deep bench-quick bench bench-soak: export SPARK_LOCAL_IP ?= 127.0.0.1

$(PY):
	python3 -m venv $(VENV)

# Re-installs whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(VENV)/bin/pip install -e '.[test]'
	touch $@

jars: $(VENV)/.installed
	$(PY) -m ivm.runtime.spark.jars

# The class archive the Spark processes of the tests start from (tests/support/class_archive.py):
# rebuilt with the environment, whose JVM and jars it must match.
CLASS_ARCHIVE := $(VENV)/spark-classes.jsa
$(CLASS_ARCHIVE): $(VENV)/.installed | jars
	$(PY) tests/support/class_archive.py $@

demo: $(VENV)/.installed
	$(VENV)/bin/ivm demo

PYTEST = HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest -n $(TEST_WORKERS) \
	--dist loadfile --no-loadscope-reorder --durations=20 --hypothesis-seed=$(SEED)

# The format and lint of [tool.ruff], the import layers ([tool.importlinter]) and the types
# ([tool.pyright]) of pyproject.toml; seconds, no JVM.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pyright

# lint first, then the suite (less the modules of TEST_LEAVES_OUT).
TEST_LEAVES_OUT ?=
test: lint jars $(CLASS_ARCHIVE)
	@echo "$(RERUN)"
	$(PYTEST) -m "$(TEST_MARKERS)" $(addprefix --ignore=,$(TEST_LEAVES_OUT)) \
		|| { echo "$(RERUN)"; exit 1; }

# The tests that need no JVM: the compiler, and every rule checked in-process (seconds).
test-fast: $(VENV)/.installed
	@echo "$(RERUN)"
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest -m fast -p no:cacheprovider \
		--hypothesis-seed=$(SEED) || { echo "$(RERUN)"; exit 1; }

# spark-submit jobs, shells and restarts in processes of their own, and the 22 TPC-H views.
test-integration: $(VENV)/.installed jars $(CLASS_ARCHIVE)
	@echo "$(RERUN)"
	$(PYTEST) -m "slow or tpch" || { echo "$(RERUN)"; exit 1; }

# make test and make test-integration in one run, CI's: the two workers start and warm up their
# SparkSessions once, not once per target, and share out the tests of both to the end. CI's
# longest modules run in four turns, one per run, the turn the seed picks (make test, make
# test-integration and make test-deep run them all): the integration tier's six longest,
# and five of make test's, the logged store layout's, the shared catalog's, the refresh
# prediction's, the console's and the shared home's. The last two joined on 2026-12-07, when
# a run of the test_jobs turn took CI 62 minutes (3,569 s of tests), past 60: 580 s of tests,
# about 5 minutes of the two workers. A stopgap until refreshes get cheaper (issue 68).
CI_TURNS := tests/tpch,tests/rules/test_lookup_join.py \
	tests/runtime/spark/test_connect.py,tests/property/test_stateful_refresh.py,tests/dbt/test_dbt.py,tests/runtime/spark/test_console.py \
	tests/test_jobs.py \
	tests/runtime/refresh/test_store_layout.py,tests/runtime/catalog/test_shared_catalog.py,tests/runtime/decision/test_refresh_prediction.py,tests/runtime/spark/test_shared_home.py
CI_TURN = $(shell expr $(SEED) % $(words $(CI_TURNS)) + 1)
test-all:
	$(MAKE) test TEST_MARKERS= SEED=$(SEED) RERUN_AS=test-all TEST_LEAVES_OUT="$(subst $(comma), \
		,$(filter-out $(word $(CI_TURN),$(CI_TURNS)),$(CI_TURNS)))"

test-deep:
	$(MAKE) test HYPOTHESIS_PROFILE=deep TEST_MARKERS= SEED=$(SEED) RERUN_AS=test-deep

$(VENV)/.bench-installed: pyproject.toml | $(PY)
	$(VENV)/bin/pip install -e '.[bench]'
	touch $@

# benchmarks/README.md: incremental refresh against full recompute, TPC-H views.
bench-quick bench bench-soak: $(VENV)/.bench-installed jars
bench-quick:
	$(PY) -m benchmarks.run --setting quick
bench:
	$(PY) -m benchmarks.run --setting full

# benchmarks/soak.py: 1,000 refreshes, then ivm run over 50 views; under 30 minutes.
bench-soak:
	$(PY) -m benchmarks.soak
