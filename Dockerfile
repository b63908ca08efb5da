# tf-thread-advisor: measures TensorFlow intra-op/inter-op thread settings for the CPUs a pod really
# has and prints (or publishes) them as a ConfigMap. Usable as a base image for a baked-in model:
#   FROM tf-thread-advisor
#   COPY model /model
#   CMD ["run", "--model", "/model", "--output", "-"]
# Build: docker build -t tf-thread-advisor .   (details: docs/deploy.md)
# Both architectures, from this same text:
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/tf-thread-advisor:TAG --push .
# Here (podman, no registry): make image PLATFORMS=linux/amd64,linux/arm64 (scripts/build-image.sh).
#
# Cross-build: the Python environment is put together on the build machine's own platform
# ($BUILDPLATFORM) from the target's wheels (docker/pip-for-arch.py); only the final stage's apt-get
# runs as the target, under emulation when that is foreign. The venv holds no compiled code of its
# own (symlinks to /usr/bin/python3, which is 3.11 on both architectures, and .pyc files, which
# are the same on both), so nothing in it depends on where pip ran.
#
# Size of the linux/amd64 image, `podman image inspect --format '{{.Size}}'`; each step measured
# with `du -sb` on the previous image (2026-11, TF 2.21):
#   before this diet                                                  1,983.3 MB (1,891 MiB)
#   - apt caches left by apt-get update (/var/cache/apt/*.bin)            -78.2 MB
#   - base trimmed like Docker's -slim (no docs, man pages, locales:
#     scripts/image-setup.sh; the registry's bookworm-slim already is)   -43.1 MB
#   - tensorflow/include: C++ headers for building custom ops           -276.4 MB
#   - strip --strip-unneeded on TensorFlow's shared libraries, shipped
#     unstripped (libtensorflow_cc.so.2 alone: 788 -> 583 MB). Not the
#     other packages' (e.g. numpy.libs): auditwheel-patched, and stripped
#     they no longer load ("ELF load command ... not page-aligned")      -252.9 MB
#   - kubernetes/aio: the asyncio client; the advisor uses the sync one   -66.3 MB
#   - libclang: a TF dependency for its code generators, unused at run   -64.1 MB
#   - pip, setuptools, wheel: installers, not needed to run               -20.6 MB
#   - test suites shipped inside packages (numpy, ...)                    -18.3 MB
#   after                                                             1,158.7 MB (1,105 MiB)
# linux/arm64 (tensorflow 2.21 aarch64 wheel, same steps):              1,147.5 MB (1,094 MiB)

# checkov:skip=CKV_DOCKER_7: the base is the tagged debian:bookworm-slim below; checkov cannot resolve the ARG
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# ---- stage 1: python3, an empty venv and the target's strip, on the build machine --------------
FROM --platform=$BUILDPLATFORM ${BASE_IMAGE} AS python
ARG TARGETARCH
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# binutils for the target's architecture (binutils-x86-64-linux-gnu, binutils-aarch64-linux-gnu):
# its strip, whichever machine this runs on
RUN case "$TARGETARCH" in \
      amd64) binutils=binutils-x86-64-linux-gnu strip=x86_64-linux-gnu-strip ;; \
      arm64) binutils=binutils-aarch64-linux-gnu strip=aarch64-linux-gnu-strip ;; \
      *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; \
    esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates "$binutils" \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "/usr/bin/$strip" /usr/local/bin/target-strip
RUN python3 -m venv /opt/tf-thread-advisor
COPY docker/requirements.txt docker/pip-for-arch.py /src/docker/

# ---- stage 2: the dependencies' venv, for the target (rebuilt only when requirements.txt changes)
FROM python AS deps
ARG TARGETARCH
# Only for builds behind a TLS-intercepting proxy: path of a CA bundle mounted into the build
# (`--build-arg PIP_CERT=/run/host-ca.crt -v host-ca.crt:/run/host-ca.crt:ro`); never in the image.
ARG PIP_CERT
# One RUN, so that the removed files never land in a layer. What each removal saves: see the top.
# --no-deps: every package is pinned with its hash, so pip resolves nothing here.
# (SC2046: the platform arguments are separate words on purpose.)
# hadolint ignore=SC2046
RUN set -eu; \
    venv=/opt/tf-thread-advisor; site="$venv/lib/python3.11/site-packages"; \
    py="$venv/bin/python"; helper=/src/docker/pip-for-arch.py; \
    "$py" "$helper" requirements "$TARGETARCH" /src/docker/requirements.txt >/tmp/requirements.txt; \
    "$py" -m pip install --no-deps --require-hashes --target "$site" --upgrade \
        $("$py" "$helper" platform-args "$TARGETARCH") -r /tmp/requirements.txt; \
    rm -rf "${site:?}/tensorflow/include" "$site/clang" "$site"/libclang-*.dist-info \
        "$site/kubernetes/aio" "${site:?}/bin" \
        "$site/pip" "$site"/pip-*.dist-info "$site/setuptools" "$site"/setuptools-*.dist-info \
        "$site/_distutils_hack" "$site/distutils-precedence.pth" "$site/pkg_resources" \
        "$site/wheel" "$site"/wheel-*.dist-info \
        "$venv"/bin/pip* "$venv"/bin/activate* /tmp/requirements.txt; \
    find "$site" -depth -type d -name tests -exec rm -rf {} +; \
    find "$site/tensorflow" -type f -name '*.so*' -exec target-strip --strip-unneeded {} +

# ---- stage 3: the advisor itself (pure Python), built in a small venv at the same path ----------
# Kept apart from the large deps stage: a code change rebuilds only small layers, and the final
# stage lays the result over the cached venv.
FROM python AS build
ARG TARGETARCH
ARG PIP_CERT
RUN /opt/tf-thread-advisor/bin/python /src/docker/pip-for-arch.py requirements "$TARGETARCH" \
        /src/docker/requirements.txt setuptools wheel >/tmp/build-requirements.txt \
 && /opt/tf-thread-advisor/bin/pip install --no-deps --require-hashes -r /tmp/build-requirements.txt
COPY pyproject.toml README.md /src/
COPY advisor /src/advisor
RUN /opt/tf-thread-advisor/bin/pip install --no-deps --no-build-isolation /src \
 && site="$(/opt/tf-thread-advisor/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
 && mkdir -p "/pkg${site}" /pkg/opt/tf-thread-advisor/bin \
 && cp -a "${site}/advisor" "${site}"/tf_thread_advisor-*.dist-info "/pkg${site}/" \
 && cp -a /opt/tf-thread-advisor/bin/tf-thread-advisor /pkg/opt/tf-thread-advisor/bin/

# ---- final stage: python3 + the venv, nothing else -----------------------------------------------
# (--platform is what `docker build` assumes anyway; podman 4.3 needs it spelled out after a stage
# that named another platform, or it builds this stage for that one)
# hadolint ignore=DL3065
FROM --platform=$TARGETPLATFORM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="tf-thread-advisor" \
      org.opencontainers.image.description="TensorFlow CPU thread settings for Kubernetes pods, measured on the node" \
      org.opencontainers.image.licenses="Apache-2.0"
# apt-get update leaves ~78 MB of package caches in /var/cache/apt: removed with the lists.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log
# Read-only root: everything that writes (Python, Keras, TF, matplotlib, the trials) goes to /tmp,
# which a Job mounts as an emptyDir and `docker run --read-only` as a tmpfs.
ENV PATH=/opt/tf-thread-advisor/bin:/usr/local/bin:/usr/bin:/bin \
    HOME=/tmp \
    TMPDIR=/tmp \
    KERAS_HOME=/tmp/.keras \
    MPLCONFIGDIR=/tmp/.matplotlib \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /tmp
# Numeric user so Kubernetes can prove runAsNonRoot without a passwd lookup. (Set before the
# COPYs, which it does not affect, so the large layers come last and metadata changes stay cheap.)
USER 65532:65532
# checkov:skip=CKV_DOCKER_2: a batch CLI run by a Job, not a service; there is nothing to health-check
ENTRYPOINT ["tf-thread-advisor"]
CMD ["run", "--output", "-"]
# The venv in two layers: the dependencies (large, cached) and the advisor over them (small).
COPY --from=deps /opt/tf-thread-advisor /opt/tf-thread-advisor
COPY --from=build /pkg/ /
