# The few targets people use.  `make test` is what CI runs (.ci/run).
PY ?= python3
VENV ?= .venv
VPY = $(VENV)/bin/python

.PHONY: install test lint format lit pytest demo bench zoo zoo-check opinfo opinfo-inductor fuzz clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

install: $(VPY)
	$(VPY) -m pip install -q torch==2.13.0 -e '.[test]'

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

lit: install
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -sv lit/

pytest: install
	$(VENV)/bin/pytest -q tests

test: lint lit pytest

demo: install
	$(VPY) -m mlirc.demo

bench: install
	$(VPY) -m pip install -q -e '.[test,bench]'
	$(VPY) benchmarks/run.py --results benchmarks/results

# Real architectures (benchmarks/zoo.py); the timed run is long on 2 cores (run it in
# parts by naming cases: `.venv/bin/python benchmarks/run.py --suite zoo resnet18@1 ...`).
zoo-check: install
	$(VPY) -m pip install -q -e '.[test,bench]'
	$(VPY) benchmarks/zoo.py --check

zoo: install
	$(VPY) -m pip install -q -e '.[test,bench]'
	$(VPY) benchmarks/run.py --suite zoo --repeat 10 --results benchmarks/results

# The OpInfo sweep's summary (CI runs the same sample through tests/test_opinfo.py).
opinfo: install
	$(VPY) tests/opinfo_sweep.py

# The reference point: the same harness with Inductor (slow: a C++ compile per case).
opinfo-inductor: install
	$(VPY) tests/opinfo_sweep.py --backend inductor --dtypes float32 --json opinfo-inductor.json

# The differential fuzzer beyond CI's fixed-seed sample (random graphs vs eager), and
# mlirc-opt on mutated lit inputs.  FUZZ_SEED=n picks another sample.
FUZZ_COUNT ?= 2000
FUZZ_SEED ?= 1
fuzz: install
	cd tests && ../$(VPY) fuzz_graphs.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED)
	cd tests && ../$(VPY) fuzz_mlirc_opt.py --count 1000 --seed $(FUZZ_SEED)

clean:
	rm -rf $(VENV) build *.egg-info lit/**/Output
