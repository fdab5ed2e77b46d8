# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

# The install byte-compiles src/ once, as a wheel install does: where PYTHONDONTWRITEBYTECODE is set, an
# editable install would compile every module at every start (`knetsim up` ready in 2.3 s instead of 0.8).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

# The main job on the built-in example: the cluster Kubernetes would build from examples/shop,
# then the doctor on a broken twin (it exits 1 because it finds the error, which is the point).
run: $(STAMP)
	$(BIN)/knetsim overview -f examples/shop
	@echo "--- knetsim doctor -f examples/broken/selector-typo"
	@$(BIN)/knetsim doctor -f examples/broken/selector-typo || test $$? -eq 1

# The in-process suite runs on every core (pytest-xdist: its tests share nothing but read-only examples). The
# live suite mostly waits (on kubectl, on a crash loop's back-off, on a probe's period: about half a core in a
# serial run), so three of its modules run side by side, each module on one worker with its own cluster
# (--dist loadfile: about a core and a half in all); the few tests that compare latency with a quiet machine
# (marked `alone`) run last, alone.
test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -m "not live" -n auto
	$(BIN)/python -m pytest -m "live and not alone" -n 3 --dist loadfile
	$(BIN)/python -m pytest -m "live and alone"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
