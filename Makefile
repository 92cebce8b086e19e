# Everything a fresh machine needs is set up by these targets; a second run is fast.
# `make test` and `make demo` are the two entry points (README).

PYTHON    ?= python3
VENV      := .venv
PY        := $(VENV)/bin/python
JVM_DIR   := .jvm
MVN       := mvn -q -B -ntp
PYSPARK_JARS = $(shell $(PY) -c 'import pyspark,os;print(os.path.join(os.path.dirname(pyspark.__file__),"jars"))')
# the runtime's JVM half, one jar of three parts: protobuf (decoding, encoding, dead letters, late
# rows), plan-guard (the sandbox's check of Spark's plans), sql-functions (the JSON and DART UDFs,
# Flink's typed semantics)
RUNTIME_JVM_SRC := $(shell find jvm/protobuf/src jvm/plan-guard/src jvm/sql-functions/src -name '*.java' 2>/dev/null)
FLINK_SRC   := $(shell find jvm/flink/src -name '*.java' 2>/dev/null)
PROTO_SRC   := $(shell find protos/src -name '*.proto' 2>/dev/null)
# google/protobuf/*.proto, as grpc_tools carries them (protos/compile.py uses the same)
WKT_PROTOS   = $(shell $(PY) -c 'from protos.compile import well_known_include; print(well_known_include())')

PORTAL_MAP := portal/static/build/.built

.PHONY: all venv jars flink portal-map conformance conformance-table docs lint servers test test-e2e test-all test-fast test-infra plan infra-check demo demo-preview protos bench clean help lab-up lab-status lab-down dashboards
all: test

help:
	@echo "make test   - set up .venv and .jvm, then run the suite but its long end-to-end tests (about 11 min)"
	@echo "make test-e2e - the long end-to-end tests: the lab, the drills, runs into real sinks (about an hour)"
	@echo "make test-all - both in one run (what make test and make test-e2e run, overlapped)"
	@echo "make test-fast - what needs no JVM, no server and no root (2 min)"
	@echo "make demo   - the lab up, the sample daggers deployed on it, live traffic, aggregates read back from InfluxDB"
	@echo "make demo-preview - the quick one: sample daggers previewed over generated files (no lab)"
	@echo "make dashboards - the Grafana dashboards as JSON into out/dashboards"
	@echo "make protos - recompile protos/ into versioned descriptor sets"
	@echo "make servers - install the Debian packages of the servers the tests start (as root)"
	@echo "make portal-map - build the portal's map script and basemap with npm"
	@echo "make jars   - fetch the pinned JVM parts with Maven and build the runtime's JVM parts"
	@echo "make flink  - fetch Apache Flink 1.20 (Maven) and build the conformance suite's runner"
	@echo "make conformance - every case of the Flink conformance corpus on Flink and on ours"
	@echo "make conformance-table - regenerate docs/reference/flink-conformance.md from the corpus"
	@echo "make lint   - ruff over the Python (the rules: pyproject.toml [tool.ruff]); also in make test"
	@echo "make docs   - build the manual (docs/, mkdocs.yml) into .site/, strict: a broken link fails"
	@echo "make lab-up / lab-status / lab-down - the lab on this machine, through playbooks/ (DAGGER_LAB_DIR, default .lab)"
	@echo "make plan TEAM=name - the resources a team's stack declares (Pulumi mocks, no cloud)"
	@echo "make infra-check    - validate every team spec and check CODEOWNERS is current"

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo ">> installing Python dependencies into $(VENV)"
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev]'
	@touch $@

jars: $(JVM_DIR)/kafka/.fetched $(JVM_DIR)/spark/.fetched $(JVM_DIR)/spark/dagger-runtime-jvm.jar \
      $(JVM_DIR)/keycloak/.fetched

$(JVM_DIR)/kafka/.fetched: jvm/kafka/pom.xml
	@echo ">> fetching the Kafka broker and MirrorMaker 2 (Maven)"
	@rm -rf $(JVM_DIR)/kafka && mkdir -p $(JVM_DIR)/kafka
	@cd jvm/kafka && $(MVN) dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JVM_DIR)/kafka
	@touch $@

$(JVM_DIR)/keycloak/.fetched: jvm/keycloak/pom.xml
	@echo ">> fetching Keycloak, the lab's sign-in (Maven)"
	@rm -rf $(JVM_DIR)/keycloak && mkdir -p $(JVM_DIR)/keycloak
	@cd jvm/keycloak && $(MVN) dependency:copy-dependencies -DincludeTypes=zip -DoutputDirectory=$(CURDIR)/$(JVM_DIR)/keycloak
	@touch $@

$(JVM_DIR)/spark/.fetched: jvm/spark/pom.xml
	@echo ">> fetching Spark's Kafka connector and protobuf-java (Maven)"
	@rm -rf $(JVM_DIR)/spark/deps && mkdir -p $(JVM_DIR)/spark/deps
	@cd jvm/spark && $(MVN) dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JVM_DIR)/spark/deps
	@touch $@

$(JVM_DIR)/spark/dagger-runtime-jvm.jar: $(VENV)/.installed $(JVM_DIR)/spark/.fetched $(RUNTIME_JVM_SRC)
	@echo ">> compiling the runtime's JVM parts (protobuf, plan guard, SQL functions)"
	@rm -rf $(JVM_DIR)/build && mkdir -p $(JVM_DIR)/build
	@javac -nowarn --release 17 -encoding UTF-8 -d $(JVM_DIR)/build \
	  -cp "$(PYSPARK_JARS)/*:$(JVM_DIR)/spark/deps/*" $(RUNTIME_JVM_SRC)
	@jar cf $@ -C $(JVM_DIR)/build .

# the portal's map: Leaflet and Natural Earth's land from npm, bundled into portal/static/build/
# (served by the portal itself; npm is one of the Debian packages `make servers` installs)
portal-map: $(PORTAL_MAP)
$(PORTAL_MAP): portal/web/package.json portal/web/package-lock.json portal/web/map.js portal/web/build.mjs | servers
	@echo ">> building the portal's map (npm)"
	@cd portal/web && npm ci --no-audit --no-fund --loglevel=error && node build.mjs
	@touch $@

# Apache Flink 1.20 and the conformance runner (tests/test_conformance_flink.py, `make conformance`)
flink: $(JVM_DIR)/flink/conformance-runner.jar

$(JVM_DIR)/flink/.fetched: jvm/flink/pom.xml
	@echo ">> fetching Apache Flink 1.20 for the conformance suite (Maven)"
	@rm -rf $(JVM_DIR)/flink && mkdir -p $(JVM_DIR)/flink/deps
	@cd jvm/flink && $(MVN) dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JVM_DIR)/flink/deps \
	  -Dprotoc.classifier=linux-$(shell uname -m | sed 's/^aarch64$$/aarch_64/')
	@chmod +x $(JVM_DIR)/flink/deps/protoc-*.exe
	@touch $@

$(JVM_DIR)/flink/conformance-runner.jar: $(VENV)/.installed $(JVM_DIR)/flink/.fetched $(FLINK_SRC) $(PROTO_SRC) jvm/flink/log4j2.properties
	@echo ">> compiling the Flink conformance runner and the bench's Flink job"
	@rm -rf $(JVM_DIR)/flink/build $(JVM_DIR)/flink/gen && mkdir -p $(JVM_DIR)/flink/build $(JVM_DIR)/flink/gen
	@# protoc's Java classes of our messages, which flink-protobuf reads through (the bench)
	@$(JVM_DIR)/flink/deps/protoc-*.exe -Iprotos/src -I$(WKT_PROTOS) --java_out=$(JVM_DIR)/flink/gen $(PROTO_SRC)
	@javac -nowarn --release 17 -encoding UTF-8 -d $(JVM_DIR)/flink/build -cp "$(JVM_DIR)/flink/deps/*" \
	  $(FLINK_SRC) $$(find $(JVM_DIR)/flink/gen -name '*.java')
	@# in the jar, so however the runner is started its stdout carries JSON only
	@cp jvm/flink/log4j2.properties $(JVM_DIR)/flink/build/
	@jar cf $@ -C $(JVM_DIR)/flink/build .

# every case of the corpus (the fast subset runs in `make test`); then the docs' table
conformance: venv jars flink
	DAGGER_CONFORMANCE=all $(PY) -m pytest -p no:cacheprovider tests/test_conformance_flink.py $(PYTEST_ARGS)

conformance-table: venv
	$(PY) -m tests.conformance.table

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

docs: venv
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# the Debian packages of the servers the tests start (InfluxDB, VictoriaMetrics, PostgreSQL)
servers: venv
	@$(PY) -m lab.packages

# every test but the long end-to-end ones (marked e2e: the lab's, the drills', a run into real
# sinks); what to run before a commit, within its 20-minute budget on 2 cores
test: venv jars flink servers portal-map
	$(PY) -m pytest -p no:cacheprovider --durations=20 -n 2 --dist loadgroup -m "not e2e" $(PYTEST_ARGS)

# the long end-to-end tests: the lab's in order on one worker, the rest on the other beside them.
# CI runs `make test` and then this (.ci/run)
test-e2e: venv jars flink servers portal-map
	$(PY) -m pytest -p no:cacheprovider --durations=20 -n 2 --dist loadgroup -m e2e $(PYTEST_ARGS)

# both in one session (the lab's serial tests overlap the rest: the shortest way through all)
test-all: venv jars flink servers portal-map
	$(PY) -m pytest -p no:cacheprovider --durations=20 -n 2 --dist loadgroup $(PYTEST_ARGS)

# no JVM, no server, no root: what a change to the Python can be checked with in a few minutes
test-fast: venv
	$(PY) -m pytest -p no:cacheprovider -n 2 -m "not (spark or kafka or jvm or servers or e2e or browser)" $(PYTEST_ARGS)

test-infra: venv
	$(PY) -m pytest -p no:cacheprovider tests/test_infra_*.py $(PYTEST_ARGS)

plan: venv
	@test -n "$(TEAM)" || { echo "usage: make plan TEAM=<team> (a file in infra/teams/)"; exit 2; }
	$(PY) -m infra.plan infra/teams/$(TEAM).yaml

infra-check: venv
	$(PY) -m infra.validate
	$(PY) -m infra.codeowners --check

demo: venv jars servers portal-map
	$(PY) -m lab.demo

demo-preview: venv jars
	$(PY) -m dagger_runtime.demo

dashboards: venv
	$(PY) -m monitoring.dashboards --out out/dashboards

protos: venv
	$(PY) -m protos compile

lab-up: venv jars servers portal-map
	$(PY) -m lab up

lab-status: venv
	$(PY) -m lab status

lab-down: venv
	$(PY) -m lab down

# the hot paths first, on an idle machine; then the lab, for the scaling figures (which complete the
# results' JSON line and append it to the history) and the portal under load
bench: venv jars flink servers portal-map
	$(PY) -m bench --history ''
	$(PY) -m bench.commands
	$(PY) -m lab up
	$(PY) -m bench.scaling
	$(PY) -m bench.portal

clean:
	rm -rf $(JVM_DIR) $(VENV) .pytest_cache portal/static/build portal/web/node_modules
