# Fresh machine: `make demo` sets up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-slow test-real test-real-random test-spark-cluster bench clean rocketmq rocketmq-jars rocketmq-jars-soft recorder diff-reports browser catalogue go-client java5-client grpc-client

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	@# setuptools' note on editable installs (a folder named like the package: here by design) is noise
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) rocketmq-jars-soft

# The main job on its built-in defaults: simulate the default scenario and check its trace.
demo: $(STAMP)
	$(BIN)/rocketspec demo

# (the Spark tests share one local Spark session: they run in one process, after the rest)
test: $(STAMP) browser rocketmq-jars-soft
	$(BIN)/python -m pytest -q -n 2 -m 'not slow and not real and not spark'
	$(BIN)/python -m pytest -q -p no:xdist -m 'spark and not slow and not real'

# Debian's chromium, for the test of explain's HTML in a real headless browser
# (tests/test_explain_browser.py); installed as a system package, never downloaded by a tool.
# apt-get waits up to APT_LOCK_TIMEOUT s for another package manager's lock (DPkg::Lock::Timeout
# covers dpkg's lock; `update`, whose lists lock it may not cover, is retried). If the install still
# fails, or there is no root or apt, the tests run anyway: that test skips, and fails under
# ROCKETSPEC_REQUIRE_REAL=1 (as in CI). `make browser` tries again on its own.
APT_LOCK_TIMEOUT ?= 300
APT_GET := apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT)
BROWSER_SKIPS := tests/test_explain_browser.py will skip (and fail under ROCKETSPEC_REQUIRE_REAL=1)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (apt-get, waiting up to $(APT_LOCK_TIMEOUT) s for the package manager's lock) for the headless browser test"; \
	    n=0; until out=$$($(APT_GET) update -qq 2>&1); do \
	      echo "$$out" >&2; \
	      case "$$out" in *lock*) ;; *) echo "note: apt-get update failed; installing from the package lists as they are"; break;; esac; \
	      n=$$((n + 5)); if [ $$n -gt $(APT_LOCK_TIMEOUT) ]; then \
	        echo "note: the package lists stayed locked for $(APT_LOCK_TIMEOUT) s; installing from them as they are"; break; fi; \
	      sleep 5; done; \
	    if DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq chromium >/dev/null; then :; else \
	      echo "note: chromium could not be installed (apt-get install failed, above): $(BROWSER_SKIPS); \`make browser\` tries again"; fi; \
	  else echo "note: chromium is missing (apt-get install chromium, as root): $(BROWSER_SKIPS)"; fi; }

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

test-real: $(STAMP)
	$(BIN)/python -m pytest -q -m real

# Random scenarios on real RocketMQ (4.9.8 by default; RANDOM_RELEASE=5.5.1, 5.5.0 or 5.3.3 for the
# 5.x line; RANDOM_POP=1 for POP scenarios, 5.x only), each checked (white-box) and judged against
# RocketMQ's own records (black-box): the table of agreed runs, false alarms, missed losses and
# findings (docs/recorder.md). Exit 1 on a false alarm or a missed loss. About 30 s of wall time
# per run.
RANDOM_RUNS    ?= 50
RANDOM_SEED    ?= 1
RANDOM_RELEASE ?= 4.9.8
RANDOM_POP     ?=
RANDOM_OUT     ?= build/real-random-$(RANDOM_RELEASE)$(if $(RANDOM_POP),-pop)
test-real-random: $(STAMP) recorder rocketmq-jars
	nice -n 10 $(BIN)/rocketspec record --random $(RANDOM_RUNS) --seed $(RANDOM_SEED) --release $(RANDOM_RELEASE) \
		$(if $(RANDOM_POP),--pop) --out $(RANDOM_OUT)

# rocketspec replay on a loopback standalone Spark cluster (a master, two workers), with an
# executor killed mid-run, and spark-submit with rocketspec shipped in --py-files (docs/replay.md);
# also part of test-slow
test-spark-cluster: $(STAMP)
	$(BIN)/python -m pytest -q -p no:xdist -m slow tests/test_replay_cluster.py

# Real RocketMQ 4.9.8 (../shared/rocketmq: sources and build.sh), compiled with javac into
# $(RMQ_BUILD); ROCKETMQ_CLASSPATH, when set, is used instead. The registry here serves no 4.9.8
# namesrv or broker jar, so 4.9.8 is not among the pinned jars below (third_party/rocketmq/README.md).
RMQ_SHARED ?= ../shared/rocketmq
RMQ_BUILD  ?= build/rocketmq

# One build at a time (tests on two workers may both ask): the lock conformance/realdiff.py takes too.
rocketmq:
	@if [ -z "$$ROCKETMQ_CLASSPATH" ]; then mkdir -p build && flock build/rocketmq.lock bash $(RMQ_SHARED)/build.sh $(RMQ_BUILD); fi

# Pinned release jars from Maven Central (third_party/rocketmq/VERSION: pom.xml, jars.lock), each
# checked against its lock into build/rocketmq-VERSION/ (lib/, classpath.txt); a jar that differs
# stops the install, named. Once installed, a release is only re-hashed: no Maven, no network.
RMQ_RELEASES ?= $(patsubst third_party/rocketmq/%/jars.lock,%,$(wildcard third_party/rocketmq/*/jars.lock))
# A release's gRPC proxy (third_party/rocketmq/VERSION/proxy) installs with it, into build/rocketmq-VERSION-proxy/.
RMQ_PROXIES ?= $(patsubst third_party/rocketmq/%/jars.lock,%,$(wildcard third_party/rocketmq/*/proxy/jars.lock))
rocketmq-jars:
	@$(PYTHON) traces/rocketmq_jars.py install $(RMQ_RELEASES) $(RMQ_PROXIES)

# setup and test install the pinned jars too (the real 5.x test records on them). A failed install
# does not stop them: tests/test_real_5x.py then skips, and fails under ROCKETSPEC_REQUIRE_REAL=1
# (as in CI); `make rocketmq-jars` tries again.
rocketmq-jars-soft:
	@$(MAKE) -s rocketmq-jars || echo "note: the pinned RocketMQ jars could not be installed (above): tests/test_real_5x.py will skip (and fail under ROCKETSPEC_REQUIRE_REAL=1); \`make rocketmq-jars\` tries again"

# The recorder and scenario driver (traces/recorder) for each release at hand: 4.9.8 against the
# classpath above, each installed pinned release against its jars. traces/recorder_build.py builds
# one release into build/recorder-RELEASE/ and only when a source or the classpath changed.
recorder:
	@if [ -z "$$ROCKETMQ_CLASSPATH" ]; then $(MAKE) -s rocketmq; fi
	@cp="$${ROCKETMQ_CLASSPATH:-$(RMQ_BUILD)/classpath.txt}"; \
	 case "$$cp" in *.txt) cp="$$(cat $$cp)";; esac; \
	 [ -d "$$cp" ] && [ -f "$$cp/classpath.txt" ] && cp="$$(cat $$cp/classpath.txt)"; \
	 $(PYTHON) traces/recorder_build.py 4.9.8 "$$cp" >/dev/null
	@for v in $(RMQ_RELEASES); do if [ -f build/rocketmq-$$v/classpath.txt ]; then \
	   $(PYTHON) traces/recorder_build.py $$v "$$(cat build/rocketmq-$$v/classpath.txt)" >/dev/null || exit 1; fi; done

# The Go client under test (clients/go: our driver program; upstream's rocketmq-client-go v2 as
# pinned in clients/go/go.mod and go.sum, fetched by go through the module proxy, never committed).
GO ?= go
go-client:
	@command -v $(GO) >/dev/null 2>&1 || { echo "make go-client: Go is not installed ($(GO) not on PATH): install Go 1.21 or newer (https://go.dev/dl/), or GO=/path/to/go" >&2; exit 2; }
	cd clients/go && $(GO) build -mod=readonly -o ../../build/go-client/rocketspec-go-client .

# The 5.x Java remoting client under test (clients/java5: our driver program over upstream's
# rocketmq-client 5.5.0 DefaultMQPushConsumer, compiled against the pinned jars of rocketmq-jars,
# never committed): build/java5-client/classes and its launcher rocketspec-java5-client. Rebuilt
# only when a source changed, into a fresh folder swapped in whole (a running client keeps its classes).
JAVA5_CP  := build/rocketmq-5.5.0/classpath.txt
JAVA5_SRC := $(wildcard clients/java5/src/rocketspec/java5client/*.java)
java5-client: rocketmq-jars build/java5-client/classes/.built build/java5-client/rocketspec-java5-client

build/java5-client/classes/.built: $(JAVA5_SRC)
	@command -v javac >/dev/null 2>&1 || { echo "make java5-client: javac is not installed: install a JDK 17 (Debian: openjdk-17-jdk-headless)" >&2; exit 2; }
	@test -f $(JAVA5_CP) || { echo "make java5-client: $(JAVA5_CP) is missing: the pinned 5.5.0 jars did not install (make rocketmq-jars)" >&2; exit 2; }
	rm -rf build/java5-client/classes.new && mkdir -p build/java5-client/classes.new
	javac -nowarn -encoding UTF-8 -d build/java5-client/classes.new -cp "$$(cat $(JAVA5_CP))" $(JAVA5_SRC)
	touch build/java5-client/classes.new/.built
	rm -rf build/java5-client/classes && mv build/java5-client/classes.new build/java5-client/classes

build/java5-client/rocketspec-java5-client: clients/java5/rocketspec-java5-client
	@mkdir -p build/java5-client
	install -m 755 $< $@

# The Java gRPC SimpleConsumer under test (clients/grpc-java: our driver program over upstream's
# rocketmq-client-java, pinned in third_party/rocketmq/client-java/5.2.0, never committed):
# build/grpc-client/classes and its launcher rocketspec-grpc-client. Its scenarios run on the
# 5.5.0 proxy (record starts it; `make rocketmq-jars` installs 5.5.0/proxy).
GRPC_CP := build/rocketmq-client-java-5.2.0/classpath.txt
grpc-client:
	@command -v javac >/dev/null 2>&1 || { echo "make grpc-client: javac is not installed: install a JDK 17 (Debian: openjdk-17-jdk-headless)" >&2; exit 2; }
	@$(PYTHON) traces/rocketmq_jars.py install client-java/5.2.0
	rm -rf build/grpc-client/classes && mkdir -p build/grpc-client/classes
	javac -nowarn -encoding UTF-8 -d build/grpc-client/classes -cp "$$(cat $(GRPC_CP))" clients/grpc-java/src/rocketspec/grpcclient/*.java
	install -m 755 clients/grpc-java/rocketspec-grpc-client build/grpc-client/rocketspec-grpc-client

# Differential reports (docs/differential/): the reference against each real scenario's trace,
# the committed fixtures by default; RECORD=1 records fresh real traces first (needs Java).
diff-reports: $(STAMP)
	$(BIN)/python -m rocketspec.traces.reports.diff_reports $(if $(RECORD),--record)

# The counterexample catalogue (docs/catalogue/): one minimal failing trace per invariant, with
# its timeline and story; tests/test_catalogue.py checks the committed one still matches.
catalogue: $(STAMP)
	$(BIN)/python -m rocketspec.traces.reports.catalogue

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
