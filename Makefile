# `make test` is the one test command: README and .ci/run both use it.
# It installs what the tests need (pip; as root also podman/runc/debootstrap for the container
# tier), runs the linters, then the whole pytest suite.
PYTHON ?= python3
export PATH := $(CURDIR)/.tools/bin:$(PATH)

.PHONY: test deps lint pytest e2e cluster cluster-down bench image

test: deps lint pytest

deps:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	# the tests' warmup files are written with TF Serving's own protos (the advisor needs none)
	PYTHON=$(PYTHON) bash scripts/install-serving-api.sh
	bash scripts/install-test-tools.sh

#: every directory holding the project's Python (docker/: the image's build helper)
PY_DIRS := advisor tests benchmarks testkit docker

lint:
	$(PYTHON) -m ruff check $(PY_DIRS)
	$(PYTHON) -m ruff format --check $(PY_DIRS)
	$(PYTHON) -m mypy
	lint-imports

# every tier but e2e, then the e2e tier on its own, so the real cluster runs beside no timed test
pytest:
	$(PYTHON) -m pytest -m "not e2e"
	$(MAKE) e2e

# the e2e tier alone: brings the real cluster up (testkit/realcluster), runs tests/e2e, takes it down
e2e:
	$(PYTHON) -m pytest tests/e2e

# the real single-node cluster by hand: `export KUBECONFIG=$$(make -s cluster | tail -1)`
cluster:
	$(PYTHON) -m testkit.realcluster up

cluster-down:
	$(PYTHON) -m testkit.realcluster down

bench:
	$(PYTHON) -m benchmarks quality --quick --json bench.json

# The image for PLATFORMS (comma-separated; default: this machine's), built with podman into the
# project's own store (.tools/podman) as the manifest list IMAGE plus IMAGE-<arch> per platform.
# As root it installs what is missing (podman, qemu-user-static + binfmt for a foreign platform,
# a debootstrap-built base image per platform). Example: make image PLATFORMS=linux/amd64,linux/arm64
image:
	PLATFORMS='$(PLATFORMS)' IMAGE='$(IMAGE)' bash scripts/build-image.sh
