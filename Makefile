# `make test` is the one test command: README and .ci/run both use it.
# It installs what the tests need (pip; as root also podman/runc/debootstrap for the container
# tier), runs the linters, then the whole pytest suite.
PYTHON ?= python3
export PATH := $(CURDIR)/.tools/bin:$(PATH)

.PHONY: test deps lint pytest bench

test: deps lint pytest

deps:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	bash scripts/install-test-tools.sh

lint:
	$(PYTHON) -m ruff check advisor tests benchmarks
	$(PYTHON) -m ruff format --check advisor tests benchmarks
	$(PYTHON) -m mypy
	lint-imports

pytest:
	$(PYTHON) -m pytest

bench:
	$(PYTHON) benchmarks/advice_quality.py --quick --json bench.json
