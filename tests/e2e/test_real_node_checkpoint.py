"""The agent's prepared-claim checkpoint on the real node (``bridge_node.py``, ``realnode.py``):
an unreadable checkpoint is an unknown count, not zero, and entries whose claim is gone are
collected (docs/design.md D29, D30).

The agent starts on a checkpoint of a newer, unknown apiVersion (an image rolled back): the Node
condition says Unknown / CheckpointUnreadable (never status False with 0, the guide's gate),
``/readyz`` fails with the reason, ``dra_bridge_checkpoint_readable`` is 0 and ``/healthz`` stays
200. Rolled forward (a v1 checkpoint of a newer minor): one entry's claim exists, the other's was
never there; after the short ``--claim-grace-period`` the gone one is collected, the fields the
agent does not know are written back unchanged, then the other claim is deleted and the count
reaches 0. Nothing is left behind (the condition is removed from the Node at the end).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.bridge_node import V1, bridge_kubeconfig, prepared_claims, seed_inventory, start_bridge
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.node_pods import cleanup
from tests.e2e.processes import free_port
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

UUID = "GPU-0a1b2c3d-0000-4000-8000-0000000000c1"
CONDITION = "DRABridgePreparedClaims"
GRACE = 3.0


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def condition(kube: KubeClient, node: str) -> dict[str, Any]:
    for c in kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions") or []:
        if c["type"] == CONDITION:
            return dict(c)
    return {}


def write_checkpoint(state: Path, doc: dict[str, Any]) -> None:
    """Atomically, as the agent writes it (it may read the file at any moment)."""
    tmp = state / "prepared-claims.json.tmp"
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, state / "prepared-claims.json")


def entry(namespace: str, name: str, node: str) -> dict[str, Any]:
    device = {
        "requestNames": ["gpu"],
        "poolName": node,
        "deviceName": "gpu-c1",
        "cdiDeviceIDs": [f"nvidia.com/gpu={UUID}"],
        "resourceName": "nvidia.com/gpu",
        "deviceID": UUID,
    }
    return {"namespace": namespace, "name": name, "devices": [device]}


def test_an_unreadable_checkpoint_is_unknown_and_gone_claims_are_collected(
    real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    node = real_node.name
    state = tmp_path / "state"
    seed_inventory(state, node, [("nvidia.com/gpu", UUID)])
    write_checkpoint(state, {"apiVersion": "checkpoint.dra-bridge.io/v2", "kind": "PreparedClaims", "claims": {}})
    port = free_port()
    bridge = None
    try:
        with bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc:
            bridge = start_bridge(
                real_node,
                kc,
                state,
                tmp_path / "bridge.log",
                [f"--health-port={port}", f"--claim-grace-period={GRACE}"],
            )
            running = bridge

            def unknown() -> bool:
                running.check_alive()
                return condition(kube, node).get("status") == "Unknown"

            wait_for(unknown, 30, "the condition Unknown", observe=lambda: condition(kube, node))
            found = condition(kube, node)
            assert found["reason"] == "CheckpointUnreadable" and "prepared claim(s)" not in found["message"], found
            status, body = get(port, "/readyz")
            assert status == 503 and "checkpoint.dra-bridge.io/v1" in json.loads(body)["checkpoint"], body
            assert get(port, "/healthz")[0] == 200
            assert "dra_bridge_checkpoint_readable 0.0" in get(port, "/metrics")[1]
            for _ in range(6):  # no gate opens: the unknown count never reads as zero
                time.sleep(0.5)
                assert condition(kube, node).get("status") == "Unknown"
                assert get(port, "/healthz")[0] == 200 and bridge.alive()

            # rolled forward: v1 of a newer minor, with fields this agent does not know
            kept = kube.create(
                api_path(V1, "resourceclaims", namespace),
                {
                    "apiVersion": V1,
                    "kind": "ResourceClaim",
                    "metadata": {"name": "kept"},
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x.example"}}]}},
                },
            )
            kept_uid, gone_uid = kept["metadata"]["uid"], str(uuid.uuid4())
            newer = {
                "apiVersion": "checkpoint.dra-bridge.io/v1",
                "kind": "PreparedClaims",
                "minor": 7,
                "bootID": "",
                "sharedWith": {"agent": "newer"},
                "claims": {
                    kept_uid: entry(namespace, "kept", node) | {"adminAccess": False},
                    gone_uid: entry(namespace, "never-created", node),
                },
            }
            write_checkpoint(state, newer)
            wait_for(
                lambda: running.check_alive() or set(prepared_claims(state)) == {kept_uid},
                30,
                "the gone claim's entry collected",
                observe=lambda: (prepared_claims(state), condition(kube, node)),
            )
            written = json.loads((state / "prepared-claims.json").read_text())
            assert written["minor"] == 7 and written["sharedWith"] == {"agent": "newer"}, written
            assert written["claims"][kept_uid]["adminAccess"] is False, written
            wait_for(
                lambda: condition(kube, node).get("message") == "1 prepared claim(s) on this node",
                30,
                "the count 1",
                observe=lambda: condition(kube, node),
            )
            assert condition(kube, node)["status"] == "True"
            assert get(port, "/readyz")[0] == 200
            assert "dra_bridge_checkpoint_readable 1.0" in get(port, "/metrics")[1]
            events = kube.list(api_path("v1", "events", "default"), field_selector="reason=PreparedClaimCollected")
            assert any(gone_uid in e["message"] for e in events), events

            # the other claim is deleted: collected after the grace period, the count reaches 0
            kube.delete(api_path(V1, "resourceclaims", namespace, "kept"))
            wait_for(
                lambda: condition(kube, node).get("message") == "0 prepared claim(s) on this node",
                30,
                "the count 0",
                observe=lambda: (prepared_claims(state), condition(kube, node)),
            )
            assert condition(kube, node)["status"] == "False" and prepared_claims(state) == {}
            assert "Traceback" not in bridge.log_text(), bridge.log_text()
    finally:
        cleanup(kube, real_node, namespace, bridge)
        conditions = kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions") or []
        for i, c in reversed(list(enumerate(conditions))):
            if c["type"] == CONDITION:
                kube.patch_status(
                    api_path("v1", "nodes", name=node), [{"op": "remove", "path": f"/status/conditions/{i}"}], "json"
                )
