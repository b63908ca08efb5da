# tf-thread-advisor: measures TensorFlow intra-op/inter-op thread settings for the CPUs a pod really
# has and prints (or publishes) them as a ConfigMap. Usable as a base image for a baked-in model:
#   FROM tf-thread-advisor
#   COPY model /model
#   CMD ["run", "--model", "/model", "--output", "-"]
# Build: docker build -t tf-thread-advisor .   (details: docs/deploy.md)

# checkov:skip=CKV_DOCKER_7: the base is the tagged debian:bookworm-slim below; checkov cannot resolve the ARG
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# ---- stage 1: a venv with the pinned dependencies (rebuilt only when requirements.txt changes) --
FROM ${BASE_IMAGE} AS deps
# Only for builds behind a TLS-intercepting proxy: path of a CA bundle mounted into the build
# (`--build-arg PIP_CERT=/run/host-ca.crt -v host-ca.crt:/run/host-ca.crt:ro`); never in the image.
ARG PIP_CERT
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/tf-thread-advisor
COPY docker/requirements.txt /src/docker/requirements.txt
RUN /opt/tf-thread-advisor/bin/pip install --no-deps -r /src/docker/requirements.txt \
 && /opt/tf-thread-advisor/bin/pip check

# ---- stage 2: the advisor itself, built in a small venv at the same path ---------------------------
# Kept apart from the 1.5 GB deps stage (same first steps, so they come from the cache): a code
# change rebuilds only small layers, and the final stage lays the result over the cached venv.
FROM ${BASE_IMAGE} AS build
ARG PIP_CERT
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/tf-thread-advisor
COPY docker/requirements.txt /src/docker/requirements.txt
RUN /opt/tf-thread-advisor/bin/pip install --no-deps -c /src/docker/requirements.txt setuptools wheel
COPY pyproject.toml README.md /src/
COPY advisor /src/advisor
RUN /opt/tf-thread-advisor/bin/pip install --no-deps --no-build-isolation /src \
 && site="$(/opt/tf-thread-advisor/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
 && mkdir -p "/pkg${site}" /pkg/opt/tf-thread-advisor/bin \
 && cp -a "${site}/advisor" "${site}"/tf_thread_advisor-*.dist-info "/pkg${site}/" \
 && cp -a /opt/tf-thread-advisor/bin/tf-thread-advisor /pkg/opt/tf-thread-advisor/bin/

# ---- final stage: python3 + the venv, nothing else -----------------------------------------------
FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="tf-thread-advisor" \
      org.opencontainers.image.description="TensorFlow CPU thread settings for Kubernetes pods, measured on the node" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
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
