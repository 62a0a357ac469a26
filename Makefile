# The single entry point. `make test` alone works on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Empty: the demo picks ~/.claude/projects when it holds a transcript, else
# ../shared/corpus/claude-projects when present, else fixtures/projects.
# Passed single-quoted (a ' in it escaped), so a path with spaces or $ reaches the demo whole.
CORPUS ?=
squote = '$(subst ','\'',$(1))'

.PHONY: install test lint fmt run demo bench bench-quick bench-team reliability clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# One worker per core (-n auto); a file's tests stay on one worker (--dist loadfile), so a module's
# shared fixtures (an ingested corpus, the browser's sites) are built once. (loadgroup would pin the
# PostgreSQL tests to one worker, but pytest-xdist 3.8 cannot set its groups under pytest 9.)
# The tests' files go to tmpfs when the machine has one (TMPDIR, which tmp_path and tempfile follow):
# every new database commits its migrations with synchronous=FULL, and waiting on those fsyncs, not
# the CPU, was a third of the wall time (CHANGELOG.md, "Measured").
# `make test TEST_TMPDIR=` keeps $$TMPDIR; `make reliability` stays on it (a real disk).
# Only a roomy one: a container's /dev/shm is often 64 MiB, and a run writes hundreds of MB.
# PYTHONWARNINGS above: setuptools' editable-install banner is advice to the package's authors.
TEST_TMPDIR ?= $(shell d=/dev/shm; [ -d $$d ] && [ -w $$d ] && \
	[ "$$(df -Pk $$d 2>/dev/null | awk 'NR==2 {print $$4}')" -gt 4194304 ] 2>/dev/null && echo $$d)
# -rfEs: every skip summarised with its reason at the end (a skipped test says why, never only a
# count), beside the failures and errors (-rs alone would drop them from the summary: -r replaces -rfE)
test: $(STAMP)
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/pytest -m "not slow" -n auto --dist loadfile -rfEs

lint: $(STAMP)
	$(BIN)/ruff check ingestd tests bench
	$(BIN)/ruff format --check ingestd tests bench
	$(BIN)/mypy ingestd bench

fmt: $(STAMP)
	$(BIN)/ruff format ingestd tests bench
	$(BIN)/ruff check --fix ingestd tests bench

run: $(STAMP)
	$(BIN)/ingestd serve

demo: $(STAMP)
	$(BIN)/python -m ingestd.demo $(call squote,$(CORPUS))

# bench.sidebyside: the one-run table (floor, ccusage 20, cold ingest, restart, replay,
# cost, size; interleaved rounds). Add a column for another source tree with SIDE_SRC="--src main=DIR".
SIDE_SRC ?=
bench: $(STAMP)
	$(BIN)/python -m bench.run --full
	$(BIN)/python -m bench.sidebyside --corpus c100 --corpus c1000 --rounds 3 $(SIDE_SRC)
	$(BIN)/python -m bench.framing
	$(BIN)/python -m bench.statusline
	$(BIN)/python -m bench.prio --src this=. --corpus bench/cache/c1000 --rounds 1 --max-s 900 --section BENCHMARKS.md

bench-quick: $(STAMP)
	$(BIN)/python -m bench.run --quick
	$(BIN)/python -m bench.sidebyside --corpus c20 --rounds 3 $(SIDE_SRC)
	$(BIN)/python -m bench.statusline --runs 50
	$(BIN)/python -m bench.prio --src this=. --corpus bench/cache/c20 --rounds 1 --section BENCHMARKS.md

bench-team: $(STAMP)
	$(BIN)/python -m bench.team

# the long and the kill -9 tests (marker `slow`), one at a time
reliability: $(STAMP)
	$(BIN)/pytest -m slow

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
