"""The webhook's reads at cluster scale (issue 27, item 3), on the objects-only cluster of
``scale_cluster.py`` (5,000 Nodes, 5,000 ResourceSlices, 20 Namespaces, 20,000 Pods).

- The real API server trims what a metadata-only list or watch answers (``PartialObjectMetadata``:
  no status, no spec), pages a list by ``limit``, and the webhook's view asks that way
  (its requests are in tests/webhook/test_view_reads.py).
- The webhook's peak RSS once its views have synced: with the built-in policy (ResourceSlices
  not read: no setting needs them) and with ``deferToKEP5004`` (every slice listed and watched).
  Printed, for the chart's default memory limit and the sizing table of charts/dra-bridge/README.md.

The 1.36 pass only (no ``server_version`` mark).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import connect
from dra_bridge.kube.resources import NODES
from dra_bridge.webhook.certs import write_certs
from tests.e2e.controlplane import REPO_ROOT
from tests.e2e.scale_cluster import NODES as NODE_COUNT
from tests.e2e.scale_cluster import ScaleCluster, node, seed
from tests.e2e.scale_cluster import _prepared as prepared
from tests.e2e.webhook_cluster import Webhook, start_webhook

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
V1 = "resource.k8s.io/v1"
#: The chart's default memory limit of the webhook (charts/dra-bridge/values.yaml), in MiB.
CHART_LIMIT_MIB = int(
    yaml.safe_load((REPO_ROOT / "charts" / "dra-bridge" / "values.yaml").read_text())["webhook"]["resources"]["limits"][
        "memory"
    ].removesuffix("Mi")
)


async def _metadata_reads(kubeconfig: Path, etcd_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    client = await connect(str(kubeconfig), None)
    try:
        api = ApiServer(client)
        page = await api.list(NODES, limit=500, metadata_only=True)
        rv = str(page["metadata"]["resourceVersion"])
        seed(etcd_url, [prepared(node(NODE_COUNT + 1), "v1", "Node")])
        async with asyncio.timeout(30):
            async for _type, obj in api.watch(NODES, resource_version=rv, timeout=30, metadata_only=True):
                return page, obj
        raise AssertionError("the watch ended without an event")
    finally:
        await client.close()


def test_the_api_server_trims_metadata_only_lists_and_watches(scale_cluster: ScaleCluster) -> None:
    cp = scale_cluster.control_plane
    page, event = asyncio.run(_metadata_reads(cp.kubeconfig, cp.etcd_url))
    assert page["kind"] == "PartialObjectMetadataList" and len(page["items"]) == 500
    assert page["metadata"]["continue"]
    first = page["items"][0]
    assert set(first) == {"apiVersion", "kind", "metadata"} and first["kind"] == "PartialObjectMetadata"
    assert first["metadata"]["labels"]["kubernetes.io/hostname"] == first["metadata"]["name"]
    assert event["kind"] == "PartialObjectMetadata" and "status" not in event
    assert event["metadata"]["name"] == f"scale-node-{NODE_COUNT + 1:05d}"


def _views(webhook: Webhook, ca: Path) -> dict[str, str]:
    ctx = ssl.create_default_context(cafile=str(ca))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{webhook.port}/readyz", context=ctx, timeout=5) as resp:
            detail = json.load(resp)
    except OSError:
        return {}
    cluster = detail.get("cluster") if isinstance(detail.get("cluster"), dict) else detail
    views: dict[str, str] = cluster.get("views") or {}
    return views


def _peak_mib(pid: int) -> float:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(status["VmHWM"].split()[0]) / 1024


def _measure(cluster: ScaleCluster, workdir: Path, name: str, extra: tuple[str, ...]) -> tuple[float, float]:
    """(seconds until every view the webhook reads synced, its peak RSS in MiB)."""
    cp = cluster.control_plane
    certs = write_certs(workdir / f"certs-{name}", "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))
    began = time.monotonic()
    webhook = start_webhook(cp, certs, workdir, V1, name=name, extra_args=extra)
    try:
        wanted = ("Node", "Namespace", "ResourceQuota", "DeviceClass") + (("ResourceSlice",) if extra else ())
        deadline = time.monotonic() + 120
        while not all((views := _views(webhook, certs.ca_cert)).get(k) == "synced" for k in wanted):
            assert time.monotonic() < deadline, f"views not synced: {views}\n{webhook.tail()}"
            time.sleep(0.5)
        synced = time.monotonic() - began
        if not extra:
            assert views["ResourceSlice"].startswith("not watched"), views
        time.sleep(2)  # the watches settle
        return synced, _peak_mib(webhook.proc.pid)
    finally:
        webhook.stop()


def test_webhook_memory_at_5000_nodes_and_slices(scale_cluster: ScaleCluster, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  deferToKEP5004: true\n")
    plain_s, plain = _measure(scale_cluster, tmp_path, "plain", ())
    slices_s, with_slices = _measure(scale_cluster, tmp_path, "slices", ("--policy", str(policy)))
    print(
        f"\nwebhook over {NODE_COUNT} nodes, 20 namespaces: peak RSS {plain:.0f} MiB (synced in {plain_s:.1f} s); "
        f"with deferToKEP5004 and {NODE_COUNT} ResourceSlices: {with_slices:.0f} MiB ({slices_s:.1f} s); "
        f"chart limit {CHART_LIMIT_MIB} MiB"
    )
    assert with_slices < 0.85 * CHART_LIMIT_MIB  # room for admissions above the synced views
