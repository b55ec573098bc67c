"""Where the API server drops device taints (the DRADeviceTaints gate off, 1.33-1.35), judged from
the object a write returned: the unhealthy device is left out of the slice instead, without a
write loop (tests/bridge/test_agent_taints.py has the gate on)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.kube.resources import Resource
from tests.bridge.agent_fixtures import Clock, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.test_agent_taints import slice_devices, tick


class DroppingApi(FakeApi):
    """An API server with the DRADeviceTaints gate off: device taints vanish from what it stores."""

    @staticmethod
    def _strip(body: dict[str, Any]) -> dict[str, Any]:
        for d in body.get("spec", {}).get("devices", []):
            d.pop("taints", None)
            (d.get("basic") or {}).pop("taints", None)
        return body

    async def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        return await super().create(
            resource, self._strip(copy.deepcopy(body)) if resource.plural == "resourceslices" else body, namespace
        )

    async def replace(
        self, resource: Resource, name: str, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        if resource.plural == "resourceslices":
            body = self._strip(copy.deepcopy(body))
        return await super().replace(resource, name, body, namespace)


@pytest.fixture
def api() -> FakeApi:
    return DroppingApi()


async def test_where_taints_are_dropped_the_unhealthy_device_is_left_out(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, index = await start_dra_plugin(legacy, kubelet, api)
    try:
        (name,) = [n for n, d in index.items() if d.device_id == "GPU-aaaa"]
        hand_over(kubelet, api)
        await publish(legacy, clock)
        published = set(slice_devices(api))
        assert legacy.publisher.taints_supported is None  # no taint written yet: nothing judged
        monkeypatch.setattr(plugin_of(legacy), "unhealthy_devices", lambda: frozenset({name}))
        await tick(legacy, clock, 1)
        await tick(legacy, clock, 60)  # tainted: the returned object lost the taint
        assert legacy.publisher.taints_supported is False
        await tick(legacy, clock, 1)
        assert set(slice_devices(api)) == published - {name}
        writes = len(api.writes)
        for _ in range(3):
            await tick(legacy, clock, 1)
        assert len(api.writes) == writes, "no write loop"
        (event,) = [e for e in api.events if e["reason"] == "DeviceTainted"]
        assert name in event["message"]
    finally:
        await plugin_of(legacy).stop()
