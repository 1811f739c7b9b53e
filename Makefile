# Craits Arena: the README's commands are `make demo` and `make test`.
# Everything else here is what those two need, plus developer conveniences.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: help setup proto demo test test-deps kits lint bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(STAMP): pyproject.toml clients/python/pyproject.toml proto/python/pyproject.toml proto/craits/v1/referee.proto
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet grpcio-tools
	$(PY) proto/python/gen_proto.py
	@# -qq: errors only (setuptools prints a 10-line box per editable install of a flat layout)
	$(PY) -m pip install -qq -e proto/python -e clients/python -e '.[dev]'
	@if [ -f clients/js/package.json ]; then cd clients/js && npm ci --no-audit --no-fund --loglevel=error; fi
	@touch $@

setup: $(STAMP)  ## create .venv with the referee, the bot kit and the JS bot's packages (and bubblewrap, as root)
	@bash scripts/system-deps.sh setup

proto: $(STAMP)  ## regenerate the Python protocol code from proto/ (the one codegen command)
	$(PY) proto/python/gen_proto.py

demo: setup proto  ## run the demo tournament of the bundled bots (SQLite, replays and logs under logs/)
	$(VENV)/bin/craits demo

test-deps:  ## install what the tests need from Debian (chromium, bubblewrap, postgresql, caddy; needs root)
	@bash scripts/system-deps.sh test

kits:  ## build the Java and C++ bot kits and their example bots with Debian's packages (build/kits/)
	@bash scripts/system-deps.sh kits
	bash clients/java/build-debian.sh build/kits/java
	bash clients/cpp/build-debian.sh build/kits/cpp

# Three test files at a time on two cores: most tests wait on bot processes, clocks, browsers and
# databases (the outage test sleeps 90 s), so two workers left the cores idle 40% of the time
# (a whole run used about 700 s of CPU in 600 s on two cores). TEST_WORKERS=0: one at a time.
TEST_WORKERS ?= 3

# `make kits` first (the tests build nothing else): where the Java or C++ toolchain is missing it
# says so, and their tests skip (fail under CI, which has them: scripts/system-deps.sh test).
# compileall: the tests start the referee's command and bots in a few hundred fresh Python
# processes; each would compile the project's modules again where bytecode is not written on
# import (PYTHONDONTWRITEBYTECODE set), so they are compiled once here (Python still reads them).
test: setup proto test-deps  ## run the whole test suite (TEST_WORKERS=N files at a time, default 3)
	-@$(MAKE) --no-print-directory kits
	@# (-qq || true: a file that does not compile is pytest's to report, with its test)
	@$(PY) -m compileall -qq -j 0 server tournaments participants clients/python/craits_bot proto/python/craits tests || true
	$(PY) -m pytest -q $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

lint: setup  ## ruff and mypy
	$(VENV)/bin/ruff check server tournaments participants tests bench clients/python/craits_bot
	$(VENV)/bin/mypy

bench: setup proto  ## all benchmarks, quick mode (each prints a machine-readable last line)
	$(PY) -m pip install --quiet -e '.[dev,bench]'  # the engine bench's peers (OpenSpiel, RLCard)
	$(PY) bench/engine.py --quick
	$(PY) bench/referee.py --quick
	$(PY) bench/tournament.py --quick
	$(PY) bench/sandbox.py --quick

clean:  ## remove the virtual environment, generated code and the kits' builds
	rm -rf $(VENV) build/kits proto/python/craits/v1/*_pb2*.py proto/python/craits/v1/*_pb2*.pyi
