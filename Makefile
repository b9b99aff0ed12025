# Two entry points (see README.md):
#   make book   create .venv if missing, run every notebook on the default profile, build the book
#   make test   create .venv if missing, run ruff, mypy and lint-imports, then the whole test suite (every tier;
#               the unit tier on every core, the others on two workers, then those marked `alone` one at a time)
#   make test-unit   the fast tier alone (tests/unit on every core, under a minute: 36-46 s on 2 cores in CI on
#                    2026-11-29, bare Keras 1533 img/s; what trains or starts a process is in tests/smoke)
#   make test-extras only the tests that need an optional part (marker `extras`): on two workers, then those marked
#                    `alone` one at a time
#   make fuzz        a larger sample of valid parameter sets drawn from the schemas, each run and rendered, and
#                    every example a user is shown, run whatever it costs
#   make front-page  docs/front-page.png from the built published book (needs Chromium; see tools/front_page_png.py)
#   make mutation    mutation testing of the verdict modules (mutmut; not in CI: tens of minutes here)
PYTHON ?= python3
VENV   ?= .venv
PROFILE ?= smoke
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test test-unit test-extras fuzz mutation lint env run benchmark clean front-page
book: $(STAMP)
	$(BIN)/repro run all --profile $(PROFILE)
	$(BIN)/repro book --profile $(PROFILE)

test: lint  # the fast tier on every core, as make test-unit runs it; the other tiers on two workers, then the ones
	# marked `alone` (they time something, or read the smoke runs one session makes once) one at a time
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=5 tests/unit
	$(BIN)/python -m pytest -v --durations=15 -n 2 --dist loadfile -m "not alone" --ignore=tests/unit
	$(BIN)/python -m pytest -v --durations=15 -m alone --ignore=tests/unit

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=15 tests/unit

fuzz: $(STAMP)  # a larger sample of valid parameter sets (repro.core.paramfuzz) over every experiment, and every
	# example a user is shown, the ones that train for minutes to hours included (not in CI: hours on 2 cores)
	REPRO_FUZZ_N=$${REPRO_FUZZ_N:-24} REPRO_FUZZ_ALL=1 REPRO_EXAMPLES_ALL=1 $(BIN)/python -m pytest -v \
		tests/smoke/test_param_fuzz.py tests/smoke/test_examples_run.py

test-extras: $(STAMP)  # on two workers, then the ones marked `alone` one at a time
	$(BIN)/python -m pytest -v --durations=10 -n 2 --dist loadfile -m "extras and not alone"
	$(BIN)/python -m pytest -v --durations=10 -m "extras and alone"

mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[mutation]"
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2 || true
	$(BIN)/mutmut export-cicd-stats && cat mutants/mutmut-cicd-stats.json && echo
	$(BIN)/mutmut results

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports

env: $(STAMP)

$(STAMP): pyproject.toml tools/install_horovod.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[cpu,test]"
	tools/install_horovod.sh --optional $(BIN)/python
	$(BIN)/python -m ipykernel install --sys-prefix --name repro --display-name "Python (repro)" >/dev/null
	touch $(STAMP)

front-page: $(STAMP)  # docs/front-page.png from the built published book (headless Chromium, 1280 px)
	$(BIN)/python tools/front_page_png.py --out docs/front-page.png

benchmark: $(STAMP)
	$(BIN)/python benchmarks/training_overhead.py

clean:
	rm -rf _build
