"""Fixtures for e2e tests against a real control plane (see ``controlplane.py``).

- ``control_plane`` (session): etcd, kube-apiserver, kube-controller-manager and
  kube-scheduler on 127.0.0.1. The API server's ``--runtime-config`` is
  ``DEFAULT_RUNTIME_CONFIG`` unless ``DRA_BRIDGE_RUNTIME_CONFIG`` is set (or the fixture is
  parametrized indirectly with a runtime-config string).
- ``kube`` (session): a :class:`KubeClient` authenticated as cluster-admin.
- ``namespace`` (function): a fresh namespace, deleted afterwards.

Missing binaries: the tests fail in CI (``CI=true``) and skip locally, saying how to build.
On a failing test the tail of every component's log is added to the report.
``DRA_BRIDGE_KEEP_LOGS=1`` keeps the working directory (logs, certificates, etcd data).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator

import pytest

from tests.e2e.controlplane import (
    DEFAULT_RUNTIME_CONFIG,
    BinariesMissing,
    ControlPlane,
    find_binaries,
)
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace

_running: list[ControlPlane] = []


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    try:
        bin_dir = find_binaries()
    except BinariesMissing as err:
        if _in_ci():
            pytest.fail(f"e2e: {err}", pytrace=False)
        pytest.skip(f"e2e: {err}")
    runtime_config = (
        getattr(request, "param", None) or os.environ.get("DRA_BRIDGE_RUNTIME_CONFIG") or DEFAULT_RUNTIME_CONFIG
    )
    cp = ControlPlane(bin_dir=bin_dir, runtime_config=runtime_config)
    cp.start()
    print(f"\ncontrol plane {cp.version} (etcd {cp.etcd_version}) up in {cp.startup_seconds:.1f}s at {cp.server}")
    _running.append(cp)
    try:
        yield cp
    finally:
        _running.remove(cp)
        cp.stop(keep_workdir=os.environ.get("DRA_BRIDGE_KEEP_LOGS") == "1")


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> KubeClient:
    return control_plane.client()


@pytest.fixture
def namespace(kube: KubeClient) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    create_namespace(kube, name)
    yield name
    kube.delete(api_path("v1", "namespaces", name=name), ignore_missing=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and _running:
        for cp in _running:
            report.sections.append((f"control plane logs ({cp.log_dir})", cp.log_tails()))
    return report
