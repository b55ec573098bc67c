"""Fixtures for e2e tests against a real control plane (see ``controlplane.py``).

- ``control_plane`` (session): etcd, kube-apiserver, kube-controller-manager and
  kube-scheduler on 127.0.0.1. The API server's ``--runtime-config`` is
  ``DEFAULT_RUNTIME_CONFIG`` unless ``DRA_BRIDGE_RUNTIME_CONFIG`` is set (or the fixture is
  parametrized indirectly with a runtime-config string). Its audit log holds every ResourceSlice
  write by anyone (``audit.SLICE_AUDIT_POLICY``, read by ``audit.slice_writes``).
- ``kube`` (session): a :class:`KubeClient` authenticated as cluster-admin.
- ``namespace`` (function): a fresh namespace, deleted afterwards.
- ``scale_cluster`` (session): an objects-only API server of its own holding 5,000 Nodes,
  20,000 Pods and 5,000 ResourceSlices (``scale_cluster.py``), for the tests at cluster scale;
  started by the first test that asks for it (about 40 s here).
- ``real_node`` (function; tests marked ``real_node``): a real kubelet + containerd node
  (``realnode.py``) registered with the control plane, started once and shared: a test that
  stops it gets a fresh one in the next; one on which a device plugin registered is reset first
  (kubelet restarted with the device manager's checkpoint removed, Node object recreated).
  Only against a control plane at least as new as the kubelet (v1.36).
- ``cluster`` (module; tests marked ``real_node``): the module's own control plane on the host's
  address with an audit log, a real node, kube-proxy and the image of ``hack/image.sh``
  (``podcluster.py``), for pods of the product's image.

Missing binaries: the tests fail in CI (``CI=true``) and skip locally, saying how to build. A real
node held by another test run on this machine (one kubelet per machine): the same.
On a failing test the tail of every component's log is added to the report.
``DRA_BRIDGE_KEEP_LOGS=1`` keeps the working directory (logs, certificates, etcd data).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator

import pytest

from tests.e2e.audit import SLICE_AUDIT_POLICY
from tests.e2e.controlplane import (
    DEFAULT_RUNTIME_CONFIG,
    BinariesMissing,
    ControlPlane,
    find_binaries,
)
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace
from tests.e2e.podcluster import ImageMissing, PodCluster, pod_cluster
from tests.e2e.realnode import NodeBusy, PartsMissing, RealNode, find_parts
from tests.e2e.scale_cluster import ScaleCluster, start_scale_cluster
from tests.e2e.serviceproxy import ProxyMissing

_running: list[ControlPlane] = []
_nodes: list[RealNode] = []


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
    cp = ControlPlane(bin_dir=bin_dir, runtime_config=runtime_config, audit_policy=SLICE_AUDIT_POLICY)
    cp.start()
    print(f"\ncontrol plane {cp.version} (etcd {cp.etcd_version}) up in {cp.startup_seconds:.1f}s at {cp.server}")
    _running.append(cp)
    try:
        yield cp
    finally:
        _running.remove(cp)
        cp.stop(keep_workdir=os.environ.get("DRA_BRIDGE_KEEP_LOGS") == "1")


@pytest.fixture(scope="session")
def scale_cluster() -> Iterator[ScaleCluster]:
    try:
        bin_dir = find_binaries()
    except BinariesMissing as err:
        if _in_ci():
            pytest.fail(f"e2e: {err}", pytrace=False)
        pytest.skip(f"e2e: {err}")
    cluster = start_scale_cluster(bin_dir)
    print(
        f"\nscale cluster up in {cluster.setup_seconds:.1f}s (objects written in {cluster.seed_seconds:.1f}s) "
        f"at {cluster.control_plane.server}"
    )
    _running.append(cluster.control_plane)
    try:
        yield cluster
    finally:
        _running.remove(cluster.control_plane)
        cluster.stop(keep_workdir=os.environ.get("DRA_BRIDGE_KEEP_LOGS") == "1")


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> KubeClient:
    return control_plane.client()


@pytest.fixture
def namespace(kube: KubeClient) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    create_namespace(kube, name)
    yield name
    kube.delete(api_path("v1", "namespaces", name=name), ignore_missing=True)


def _minor(version: str) -> int:
    return int(version.lstrip("v").split(".")[1])


@pytest.fixture(scope="session")
def _real_node_parts(control_plane: ControlPlane) -> Iterator[list[RealNode]]:
    """The parts' directory checked once; the one running node (if any) stopped at the end."""
    try:
        parts = find_parts()
    except PartsMissing as err:
        if _in_ci():
            pytest.fail(f"real_node: {err}", pytrace=False)
        pytest.skip(f"real_node: {err}")
    kubelet = dict(line.split("=", 1) for line in (parts / "node.env").read_text().split())["KUBELET_VERSION"]
    if _minor(control_plane.version) < _minor(kubelet):
        pytest.skip(f"real_node: kubelet {kubelet} may not be newer than the API server {control_plane.version}")
    holder: list[RealNode] = []
    yield holder
    for node in holder:
        errors = node.stop(keep_workdir=os.environ.get("DRA_BRIDGE_KEEP_LOGS") == "1")
        assert not errors, f"real node teardown: {errors}"


@pytest.fixture
def real_node(_real_node_parts: list[RealNode], control_plane: ControlPlane) -> Iterator[RealNode]:
    holder = _real_node_parts
    if holder and not holder[0].running:
        holder.clear()
    if not holder:
        node = RealNode(parts=find_parts(), control_plane=control_plane)
        try:
            node.start()
        except NodeBusy as err:
            if _in_ci():
                raise
            pytest.skip(f"real_node: {err}")
        print(f"\nreal node {node.name} up in {node.timings['start']:.1f}s ({node.node_ip})")
        holder.append(node)
    elif holder[0].device_plugins_seen():
        holder[0].reset()
    _nodes[:] = holder
    try:
        yield holder[0]
    finally:
        _nodes.clear()


@pytest.fixture(scope="module")
def cluster(_real_node_parts: list[RealNode]) -> Iterator[PodCluster]:
    """A module's own control plane, real node, kube-proxy and the product's image
    (``podcluster.py``), for tests whose pods run the image. The session's node, if one runs in
    this process, is stopped first (one kubelet per machine; the next ``real_node`` test starts a
    fresh one). A missing part or a busy node: skipped locally, failed in CI."""
    for node in _real_node_parts:
        if node.running:
            assert not node.stop(), "stopping the session's real node"
    _real_node_parts.clear()
    try:
        with pod_cluster() as c:
            yield c
    except (NodeBusy, ImageMissing, PartsMissing, ProxyMissing) as err:
        if _in_ci():
            raise
        pytest.skip(f"real_node: {err}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and _running:
        for cp in _running:
            report.sections.append((f"control plane logs ({cp.log_dir})", cp.log_tails()))
        for node in _nodes:
            report.sections.append((f"real node logs ({node.log_dir})", node.log_tails()))
    return report
