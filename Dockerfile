# syntax=docker/dockerfile:1
# The dra-bridge image for users: the three commands (dra-webhook, dra-bridge, dra-migrate) on
# a slim Python base, run as a non-root user, no compiler or package manager cache in the final
# stage. The chart (charts/dra-bridge) runs `dra-webhook serve` and `dra-bridge run` from it.
#
# The base image is named by digest (a tag moves; a digest is the exact image), and the Python
# dependencies install from requirements/image.lock with pip's hash-checking mode, so two
# builds of one commit install the same files (docs/design.md D47). Find the base's digest:
#
#   skopeo inspect --format '{{.Digest}}' docker://python:3.11-slim-bookworm
#   (or: crane digest python:3.11-slim-bookworm; docker buildx imagetools inspect python:3.11-slim-bookworm)
#   docker build --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest> -t REGISTRY/dra-bridge:0.1.0 .
#
# NOT BUILT HERE: the project's machines reach no container registry, so no base image can be
# pulled; tests/test_dockerfile.py checks this file's stages and rules instead (and runs the
# digest check below), and the e2e suite assembles an equivalent image from Debian packages,
# the same lock and the project's wheel (hack/image.sh).

# Required, no default: python:3.11-slim-bookworm@sha256:<64 hex> (the build stops without it).
ARG BASE_IMAGE

# Build stage: the locked dependencies and the project's wheel into a virtual environment.
# Dependencies come as binary wheels (grpcio, protobuf, cryptography publish them for linux
# amd64 and arm64); where one does not, the compiler lives here and never reaches the final stage.
FROM ${BASE_IMAGE} AS build
ARG BASE_IMAGE
# First: a base named by tag alone (or by anything but a sha256 digest) stops the build.
RUN case "$BASE_IMAGE" in *@sha256:*) digest="${BASE_IMAGE##*@sha256:}" ;; *) digest="" ;; esac; \
    if [ "${#digest}" -ne 64 ] || [ -n "$(printf '%s' "$digest" | tr -d 0-9a-f)" ]; then \
      echo "BASE_IMAGE must name the base image by digest (NAME@sha256:<64 hex>), got '$BASE_IMAGE'." >&2; \
      echo "Find it with: skopeo inspect --format '{{.Digest}}' docker://python:3.11-slim-bookworm" >&2; \
      echo "then: docker build --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest> ." >&2; \
      exit 1; \
    fi
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The build tools (setuptools, wheel) from their own lock, in a venv that stays in this stage.
COPY requirements/build.lock requirements/image.lock requirements/
RUN python -m venv /opt/build \
 && /opt/build/bin/pip install --require-hashes --no-deps -r requirements/build.lock \
 && python -m venv /opt/dra-bridge \
 && /opt/dra-bridge/bin/pip install --require-hashes --no-deps -r requirements/image.lock
COPY pyproject.toml README.md ./
COPY bridge bridge
COPY kube kube
COPY migrate migrate
COPY translate translate
COPY webhook webhook
# The wheel is built offline by the locked tools and installed without resolving anything: the
# lock holds every dependency, nvml's (the agent reads NVIDIA facts through NVML) included.
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --no-index -w /tmp/wheel . \
 && /opt/dra-bridge/bin/pip install --no-deps --no-index /tmp/wheel/*.whl \
 && /opt/dra-bridge/bin/pip check \
 && /opt/dra-bridge/bin/dra-migrate --version \
 && /opt/dra-bridge/bin/dra-webhook --version \
 && /opt/dra-bridge/bin/dra-bridge --version

# Final stage: the interpreter and the environment, nothing else.
FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="dra-bridge" \
      org.opencontainers.image.description="Device plugins to DRA: dra-webhook, dra-bridge, dra-migrate" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/dra-bridge /opt/dra-bridge
ENV PATH=/opt/dra-bridge/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A fixed non-root UID (the chart's runAsUser); the agent's pod overrides it with root, which it
# needs for the kubelet's sockets, still without any capability.
USER 65532:65532
WORKDIR /
# No ENTRYPOINT: the chart names the command (dra-webhook serve, dra-bridge run); by hand:
#   docker run --rm IMAGE dra-migrate convert -f - < manifests.yaml
CMD ["dra-migrate", "--help"]
