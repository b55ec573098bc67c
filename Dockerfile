# syntax=docker/dockerfile:1
# The dra-bridge image for users: the three commands (dra-webhook, dra-bridge, dra-migrate) on
# a slim Python base, run as a non-root user, no compiler or package manager cache in the final
# stage. The chart (charts/dra-bridge) runs `dra-webhook serve` and `dra-bridge run` from it.
#
#   docker build -t REGISTRY/dra-bridge:0.1.0 .
#
# NOT BUILT HERE: the project's machines reach no container registry, so no base image can be
# pulled; tests/test_dockerfile.py checks this file's stages and rules instead, and the e2e
# suite assembles an equivalent image from Debian packages and the project's wheel.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Build stage: the wheel and its dependencies into a virtual environment. Dependencies come as
# binary wheels (grpcio, protobuf, cryptography publish them for linux amd64 and arm64); where
# one does not, the compiler lives here and never reaches the final stage.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/dra-bridge
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bridge bridge
COPY kube kube
COPY migrate migrate
COPY translate translate
COPY webhook webhook
# nvml: the agent reads NVIDIA facts through NVML when the node's driver library is mounted.
RUN /opt/dra-bridge/bin/pip install '.[nvml]' \
 && /opt/dra-bridge/bin/dra-migrate --version \
 && /opt/dra-bridge/bin/dra-webhook --version \
 && /opt/dra-bridge/bin/dra-bridge --version

# Final stage: the interpreter and the environment, nothing else.
FROM ${PYTHON_IMAGE}
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
