# Set-up and everyday commands. `make demo` and `make test` work on a fresh machine:
# each creates .venv and installs the project (with test extras for `make test`) first.
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin

$(BIN)/arbiter: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,cluster]'
	touch $(BIN)/arbiter

.PHONY: demo test hostile coverage bench tournament
demo: $(BIN)/arbiter
	$(BIN)/arbiter demo

# The slow part of the hostile-engine suite (@pytest.mark.hostile) is left to `make hostile`.
# Two files at a time (pytest-xdist; a file's tests stay in one worker), the tests that measure
# time on a quiet machine (@pytest.mark.serial) with nothing beside them (tests/conftest.py):
# ~7 min on 2 cores instead of ~10.5. Three at a time flaked timing tests here (2 runs of 5).
PARALLEL = -n 2 --dist loadfile
test: $(BIN)/arbiter
	$(BIN)/pytest -q -m "not hostile" $(PARALLEL)

# The whole hostile-engine suite (issue 11): every attack an entrant could try, fast ones included.
hostile: $(BIN)/arbiter
	$(BIN)/pytest -q tests/test_hostile.py tests/test_remote_hostile.py

# The same suite under coverage (engine subprocesses and tournament workers included; see
# [tool.coverage.*] in pyproject.toml), ending with the line and branch totals. CI runs this.
# It costs about 3x the time of `make test` (the C tracer of Python 3.11 on the rules' hot loops).
coverage: $(BIN)/arbiter
	rm -rf .coverage-data coverage.json && mkdir -m 1777 .coverage-data  # engines write there under uids of their own
	ARBITER_PASS_ENV=COVERAGE_PROCESS_CONFIG ARBITER_SANDBOX_WRITABLE=$(CURDIR)/.coverage-data \
	    $(BIN)/coverage run -m pytest -q -m "not hostile" $(PARALLEL)
	$(BIN)/coverage combine -q
	@# An engine killed while writing its data leaves a file combine cannot read (it warns once): dropped
	rm -f .coverage-data/coverage.*
	$(BIN)/coverage report
	$(BIN)/coverage json -q -o coverage.json
	@$(BIN)/python -c 'import json; t = json.load(open("coverage.json"))["totals"]; \
	print("coverage: lines %.1f %%, branches %.1f %%" % (100 * t["covered_lines"] / t["num_statements"], \
	      100 * t["covered_branches"] / t["num_branches"]))'
	@# The Catalonia planner runs only as an engine subprocess in the suite: unmeasured, the engines were.
	@$(BIN)/python -c 'import json, sys; f = json.load(open("coverage.json"))["files"]; \
	n = sum(v["summary"]["covered_lines"] for k, v in f.items() if k.endswith("catalonia_planner.py")); \
	sys.exit(0 if n else "coverage: engine subprocesses were not measured (sample_engines/catalonia_planner.py: 0 lines)")'

bench: $(BIN)/arbiter
	$(BIN)/python bench/bench_foundation.py

# resume, not run: it starts the tournament the first time and continues (or just reports) after.
tournament: $(BIN)/arbiter
	$(BIN)/arbiter-tournament resume tournaments/examples/einstein_olympiad.toml
