"""The agent with its DRA kubelet plugin: converted claims match what it publishes, prepared
claims counted on the Node, alarms only when a published or prepared device is offered again;
and its kubelet-reachability log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dra_bridge.bridge.agent import CONDITION_TYPE, Agent
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel.environment import evaluate_selectors
from dra_bridge.translate.inventory import internal_form
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.workloads import convert_object
from tests.bridge.agent_fixtures import (
    LABELS,
    NODE,
    Clock,
    MakeAgent,
    hand_over,
    plugin_of,
    publish,
    start_dra_plugin,
)
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.factories import gpu, make_container, make_pod


def _devices_matching(catalog: Catalog, template: dict[str, object], slices: dict[str, dict[str, object]]) -> set[str]:
    """deviceIDs of the published devices that the template's one request (class selectors and
    its own) selects, evaluated in our DRA CEL environment."""
    (request,) = internal_from_template(template)["requests"]
    (device_class,) = [
        c
        for c in catalog.device_classes(list(catalog.mig_profiles))
        if c["metadata"]["name"] == request["deviceClassName"]
    ]
    expressions = [s["cel"]["expression"] for s in device_class["spec"].get("selectors", [])]
    expressions += list(request["selectors"])
    out = set()
    for rendered in slices.values():
        spec = internal_form(rendered)["spec"]
        for device in spec["devices"]:
            if evaluate_selectors(expressions, device, spec["driver"]):
                out.add(device["attributes"]["dra-bridge.io/deviceID"]["string"])
    return out


@pytest.mark.parametrize(
    ("resource", "ids"),
    [
        ("nvidia.com/gpu", {"GPU-aaaa", "GPU-bbbb"}),
        ("nvidia.com/mig-1g.5gb", {"MIG-cccc"}),
    ],
    ids=["whole-gpu", "mig"],
)
async def test_a_converted_claim_matches_the_devices_the_bridge_publishes(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, resource: str, ids: set[str]
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert {internal_form(s)["spec"]["driver"] for s in api.slices.values()} == {catalog.bridge_driver}
    converted = convert_object(make_pod([make_container("main", gpu(1, resource))]), catalog)
    (template,) = converted.templates
    assert _devices_matching(catalog, template, api.slices) == ids


async def test_kubelet_reachable_again_is_logged_only_after_a_failure(
    make_agent: MakeAgent,
    kubelet: KubeletServer,
    api: FakeApi,
    tmp_path: Path,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.add_node(NODE, dict(LABELS), {})
    agent = make_agent(tmp_path / "state")
    caplog.set_level(logging.INFO, logger="dra_bridge.bridge.observe")
    await agent.tick()
    assert "reachable again" not in caplog.text, "first contact is not a recovery"
    await kubelet.stop()
    await agent.tick()
    assert "unavailable" in caplog.text and "reachable again" not in caplog.text
    await kubelet.start()
    await agent.tick()
    assert caplog.text.count("reachable again") == 1


async def test_the_prepared_claim_count_on_the_node_is_the_plugins(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    from dra_bridge.kube.resources import RESOURCE_CLAIMS
    from tests.bridge.draplugin_fixtures import Kubelet, claim

    paths, index = await start_dra_plugin(legacy, kubelet, api)
    uid = "0a1b2c3d-0000-4000-8000-000000000001"
    api.put(RESOURCE_CLAIMS, claim(uid, "c", [("gpu", catalog.bridge_driver, NODE, sorted(index)[0])]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        assert (await client.prepare((uid, "c"))).claims[uid].error == ""
        api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
        await legacy.tick()
        (condition,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
        assert condition["status"] == "True" and condition["message"].startswith("1 prepared claim")
        assert legacy.health.alive(60) and "dra_bridge_prepared_claims 1.0" in legacy.metrics.text().decode()
        assert (await client.unprepare((uid, "c"))).claims[uid].error == ""  # after the node left DRA mode
        await legacy.tick()
        (condition,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
        assert condition["message"].startswith("0 prepared claim")
        assert legacy.plugin is not None
        await plugin_of(legacy).stop()
        await legacy.tick()
        assert not legacy.health.alive(60) and "registration socket" in legacy.health.plugin
    finally:
        await client.close()


async def test_labelling_before_the_plugin_is_off_refuses_without_an_alarm(
    legacy: Agent, api: FakeApi, clock: Clock
) -> None:
    # the operator labels first: the device plugin still serves and the kubelet still offers its
    # devices, but nothing was published or prepared, so this is a refusal, not an alarm
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "dra"
    for _ in range(2):
        report = await legacy.tick()
        clock.now += 61
    assert "kubelet-offers" in [r.interlock for r in report.refusals]
    assert report.alarm is None
    assert not any(e["reason"] == "DeviceOfferedAgain" for e in api.events)
    assert "dra_bridge_alarms_total 0.0" in legacy.metrics.text().decode()


async def test_a_prepared_claims_device_held_by_a_legacy_container_raises_the_alarm(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    from dra_bridge.kube.resources import RESOURCE_CLAIMS
    from tests.bridge.draplugin_fixtures import Kubelet, claim

    paths, index = await start_dra_plugin(legacy, kubelet, api)
    uid = "0a1b2c3d-0000-4000-8000-000000000002"
    (name,) = [n for n, d in index.items() if d.device_id == "GPU-aaaa"]
    api.put(RESOURCE_CLAIMS, claim(uid, "c", [("gpu", catalog.bridge_driver, NODE, name)]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        assert (await client.prepare((uid, "c"))).claims[uid].error == ""
        report = await legacy.tick()
        assert report.publishing and report.alarm is None
        kubelet.fake.held = {"team-a/legacy-pod": {"main": [("nvidia.com/gpu", "GPU-aaaa")]}}
        report = await legacy.tick()
        await legacy.publisher.sync()
        assert report.alarm and "GPU-aaaa" in report.alarm and "legacy-pod" in report.alarm
        assert not report.publishing and api.slices == {}  # the device (with the pool) is no longer published
        assert [e["reason"] for e in api.events].count("DeviceOfferedAgain") == 1
        assert "dra_bridge_alarms_total 1.0" in legacy.metrics.text().decode()
        # rolled back while the claim is still prepared, and the device plugin returns: the alarm again
        kubelet.fake.held = {}
        api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
        kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0])]
        report = await legacy.tick()
        assert report.alarm and "offers it again" in report.alarm and "GPU-aaaa" in report.alarm
        assert "dra_bridge_alarms_total 2.0" in legacy.metrics.text().decode()
        assert (await client.unprepare((uid, "c"))).claims[uid].error == ""
        report = await legacy.tick()
        assert report.alarm is None
    finally:
        await client.close()
        assert legacy.plugin is not None
        await plugin_of(legacy).stop()
