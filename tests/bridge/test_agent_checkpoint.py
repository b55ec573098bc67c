"""The agent and its checkpoint: an unreadable checkpoint is an unknown count, not zero (the
condition Unknown, readiness failing, every recorded device held); entries whose claim is gone are
collected safely; the Node condition's heartbeat is written every 5 minutes, not every poll."""

from __future__ import annotations

import json
from typing import Any

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.node_condition import CONDITION_TYPE, HEARTBEAT_INTERVAL
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import DeviceId
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from tests.bridge.agent_fixtures import NODE, Clock, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import Kubelet, claim

NEWER = {"apiVersion": "checkpoint.dra-bridge.io/v2", "kind": "PreparedClaims", "claims": {}}


def _whole_gpu(index: dict[str, DeviceId]) -> str:
    return min(n for n, d in index.items() if d.device_id == "GPU-aaaa")


def condition(api: FakeApi) -> dict[str, Any]:
    (found,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
    return dict(found)


def condition_writes(api: FakeApi) -> int:
    return sum(1 for verb, plural, _ in api.writes if (verb, plural) == ("patch", "nodes"))


async def test_an_unreadable_checkpoint_is_unknown_not_zero(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    # an image rollback meets a newer checkpoint, while the device plugin serves (legacy mode)
    state = kubelet.dir / "state"
    state.mkdir()
    (state / "prepared-claims.json").write_text(json.dumps(NEWER))
    await start_dra_plugin(legacy, kubelet, api)
    try:
        report = await legacy.tick()
        found = condition(api)
        assert (found["status"], found["reason"]) == ("Unknown", "CheckpointUnreadable")
        assert "prepared claim(s)" not in found["message"] and "v2" in found["message"]
        assert not legacy.health.ready and "checkpoint.dra-bridge.io/v1" in legacy.health.detail()["checkpoint"]
        assert legacy.health.alive(60), "a restart cannot repair the file: liveness stays green"
        metrics = legacy.metrics.text().decode()
        assert "dra_bridge_checkpoint_readable 0.0" in metrics
        # every recorded device counts as held: the kubelet offering them is the alarm
        assert report.alarm and "GPU-aaaa" in report.alarm
        assert any(e["reason"] == "DeviceOfferedAgain" for e in api.events)
        # rolled forward (or repaired): readable again, the count is known
        (state / "prepared-claims.json").write_text(json.dumps(NEWER | {"apiVersion": "checkpoint.dra-bridge.io/v1"}))
        clock.now += 1
        report = await legacy.tick()
        found = condition(api)
        assert (found["status"], found["message"]) == ("False", "0 prepared claim(s) on this node")
        assert legacy.health.ready and legacy.health.detail()["checkpoint"] == "ok"
        assert "dra_bridge_checkpoint_readable 1.0" in legacy.metrics.text().decode()
        assert report.alarm is None
    finally:
        await plugin_of(legacy).stop()


async def test_the_heartbeat_is_written_every_five_minutes_not_every_poll(
    legacy: Agent, api: FakeApi, clock: Clock
) -> None:
    first = condition(api)
    writes = condition_writes(api)
    for _ in range(3):
        clock.now += 30
        await legacy.tick()
    assert condition_writes(api) == writes, "an unchanged condition is not written on a poll"
    clock.now += HEARTBEAT_INTERVAL
    await legacy.tick()
    assert condition_writes(api) == writes + 1
    beat = condition(api)
    assert beat["lastHeartbeatTime"] > first["lastHeartbeatTime"]
    assert beat["lastTransitionTime"] == first["lastTransitionTime"], "the status did not change"


async def test_an_entry_whose_claim_is_gone_is_collected_after_the_grace_period(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    names = sorted(n for n, d in index.items() if d.device_id in ("GPU-aaaa", "GPU-bbbb"))
    uids = ["0a1b2c3d-0000-4000-8000-00000000000a", "0a1b2c3d-0000-4000-8000-00000000000b"]
    for uid, name, device in zip(uids, ("gone", "used"), names, strict=False):
        api.put(RESOURCE_CLAIMS, claim(uid, name, [("gpu", catalog.bridge_driver, NODE, device)]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        for uid, name in zip(uids, ("gone", "used"), strict=True):
            assert (await client.prepare((uid, name))).claims[uid].error == ""
        # the kubelet lost its DRA state: nobody will unprepare; both claims are deleted, but a
        # container of the second (its pod force-deleted) still runs with its device
        kubelet.fake.dynamic = {"ns/p": {"main": [("other", "x", catalog.bridge_driver, NODE, names[1])]}}
        api.remove(RESOURCE_CLAIMS, "gone", "ns")
        api.remove(RESOURCE_CLAIMS, "used", "ns")
        api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
        await legacy.tick()
        assert condition(api)["message"] == "2 prepared claim(s) on this node"
        clock.now += legacy.settings.claim_grace_period - 1
        await legacy.tick()
        assert condition(api)["message"] == "2 prepared claim(s) on this node", "within the grace period"
        clock.now += 1
        await legacy.tick()
        assert condition(api)["message"] == "1 prepared claim(s) on this node"
        assert set(plugin_of(legacy).preparer.checkpoint.claims) == {uids[1]}
        kubelet.fake.dynamic = {}  # the container ended: its claim is read from now on
        await legacy.tick()
        assert condition(api)["message"] == "1 prepared claim(s) on this node"
        clock.now += legacy.settings.claim_grace_period
        await legacy.tick()
        found = condition(api)
        assert (found["status"], found["message"]) == ("False", "0 prepared claim(s) on this node")
    finally:
        await client.close()
        await plugin_of(legacy).stop()


async def test_a_claim_still_on_the_api_server_is_never_collected(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    uid = "0a1b2c3d-0000-4000-8000-00000000000c"
    api.put(RESOURCE_CLAIMS, claim(uid, "kept", [("gpu", catalog.bridge_driver, NODE, _whole_gpu(index))]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        assert (await client.prepare((uid, "kept"))).claims[uid].error == ""
        for _ in range(3):
            clock.now += legacy.settings.claim_grace_period
            await legacy.tick()
        assert condition(api)["message"] == "1 prepared claim(s) on this node"
        api.fail = "connection refused"  # unanswered reads are no news: nothing collected
        clock.now += legacy.settings.claim_grace_period
        await legacy.tick()
        api.fail = ""
        assert list(plugin_of(legacy).preparer.checkpoint.claims) == [uid]
    finally:
        await client.close()
        await plugin_of(legacy).stop()
