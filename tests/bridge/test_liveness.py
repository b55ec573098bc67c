"""Liveness of the agent's DRA plugin (item 4 of issue 11): ``/healthz`` fails while either the
registration socket or the DRA service socket does not answer a dial, whatever else is down;
prepare and unprepare are counted, their errors counted and their latency observed."""

from __future__ import annotations

import pytest

from dra_bridge.bridge.agent import Agent
from tests.bridge.agent_fixtures import Clock, hand_over, plugin_of, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import Kubelet


@pytest.mark.parametrize("api_down", [False, True], ids=["api-up", "api-down"])
async def test_a_dead_dra_socket_fails_liveness_while_registration_answers(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, api_down: bool
) -> None:
    await start_dra_plugin(legacy, kubelet, api)
    assert legacy.plugin is not None
    await legacy.tick()
    assert legacy.health.alive(60)
    api.fail = "connection refused" if api_down else ""
    try:
        await plugin_of(legacy).servers[0].stop(None)  # the DRA service dies, registration still answers GetInfo
        await legacy.tick()
        assert legacy.health.ready is not api_down
        assert not legacy.health.alive(60) and legacy.health.plugin.startswith("DRA socket"), legacy.health.plugin
    finally:
        await plugin_of(legacy).stop()


async def test_unprepare_is_counted_and_timed(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, _ = await start_dra_plugin(legacy, kubelet, api)
    hand_over(kubelet, api)
    client = Kubelet(paths.dra_socket)
    try:
        await client.unprepare(("0a1b2c3d-0000-4000-8000-000000000001", "gone"))
        text = legacy.metrics.text().decode()
        assert 'dra_bridge_claim_operations_total{op="unprepare"} 1.0' in text
        assert 'dra_bridge_claim_operation_errors_total{op="unprepare"} 0.0' in text
        assert 'dra_bridge_claim_operation_seconds_count{op="unprepare"} 1.0' in text
    finally:
        await client.close()
        assert legacy.plugin is not None
        await plugin_of(legacy).stop()
