# `make test` is the one test command: README and .ci/run both use it.
# It installs what the tests need (pip; as root also podman/runc/debootstrap for the container
# tier), runs the linters, then the whole pytest suite.
PYTHON ?= python3
export PATH := $(CURDIR)/.tools/bin:$(PATH)

.PHONY: test deps lint pytest bench image

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

pytest:
	$(PYTHON) -m pytest

bench:
	$(PYTHON) -m benchmarks quality --quick --json bench.json

# The image for PLATFORMS (comma-separated; default: this machine's), built with podman into the
# project's own store (.tools/podman) as the manifest list IMAGE plus IMAGE-<arch> per platform.
# As root it installs what is missing (podman, qemu-user-static + binfmt for a foreign platform,
# a debootstrap-built base image per platform). Example: make image PLATFORMS=linux/amd64,linux/arm64
image:
	PLATFORMS='$(PLATFORMS)' IMAGE='$(IMAGE)' bash scripts/build-image.sh
