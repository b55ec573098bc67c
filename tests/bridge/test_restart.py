"""Restarts and surge rollouts of the agent (docs/design.md D43, D44), against the fake kubelet
and API server: a restart neither withdraws the slices nor settles again, the kubelet's own
wipes are repaired on the first tick, and of two overlapping instances only the newest writes
slices."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.translate.catalog import Catalog
from tests.bridge.agent_fixtures import CAPACITY, INVENTORY, LABELS, NODE, Clock, MakeAgent, hand_over, publish
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.test_publisher import make_devices

OLD, NEW = "6f1c2a3b-0000-4000-8000-00000000000a", "6f1c2a3b-0000-4000-8000-00000000000b"


async def test_the_publisher_writes_nothing_before_its_first_decision(catalog: Catalog, api: FakeApi) -> None:
    first = Publisher(api, "node-a", "dra-bridge.io")
    first.update(make_devices(catalog, 2))
    await first.sync()
    stored = dict(api.slices)
    restarted = Publisher(api, "node-a", "dra-bridge.io")
    stop = asyncio.Event()
    runner = asyncio.create_task(restarted.run(stop, resync=0.05))
    await asyncio.sleep(0.3)  # several resyncs, no decision yet
    stop.set()
    await runner
    assert restarted.stats.writes == 0 and api.slices == stored
    assert restarted.state == "unknown"


async def test_a_publisher_that_may_not_write_forgets_its_desired_state(catalog: Catalog, api: FakeApi) -> None:
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 2))
    pub.may_write = lambda: False
    assert await pub.sync() is False
    assert pub.state == "unknown" and api.slices == {} and pub.stats.writes == 0


async def _restarted(make_agent: MakeAgent, state: Path, clock: Clock, pod_uid: str = "") -> Agent:
    clock.now += 5
    return make_agent(state, settle_period=120, pod_uid=pod_uid)  # a settle period it must not wait


async def test_a_restart_that_finds_the_interlocks_holding_resumes_at_once(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, make_agent: MakeAgent, tmp_path: Path
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    record = json.loads((tmp_path / "state" / "publishing.json").read_text())
    assert record["kind"] == "Publishing" and record["since"] == clock.now
    writes = len(api.writes)
    agent = await _restarted(make_agent, tmp_path / "state", clock)
    await agent.publisher.sync()  # before the first decision: nothing
    report = await agent.tick()
    assert report.publishing and report.refusals == ()
    assert agent.prepare_gate().publishing
    await agent.publisher.sync()
    assert agent.publisher.stats.writes == 0 and len(api.writes) == writes
    assert json.loads((tmp_path / "state" / "publishing.json").read_text()) == record  # since T, unchanged


async def test_after_the_kubelets_wipe_a_restart_republishes_on_its_first_tick(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, make_agent: MakeAgent, tmp_path: Path
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    names = sorted(api.slices)
    for name in names:  # the kubelet, 30 s after the plugin went away, or at its own start
        api.delete_by_hand(name)
    agent = await _restarted(make_agent, tmp_path / "state", clock)
    assert (await agent.tick()).publishing
    await agent.publisher.sync()
    assert sorted(api.slices) == names and agent.publisher.stats.deletes == 0


async def test_a_restart_settles_again_when_the_interlocks_do_not_hold_or_the_inventory_changed(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, make_agent: MakeAgent, tmp_path: Path
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    kubelet.plugin_socket("nvidia-gpu.sock")  # the device plugin came back while the agent was down
    agent = await _restarted(make_agent, tmp_path / "state", clock)
    report = await agent.tick()
    assert not report.publishing and "plugin-socket" in [r.interlock for r in report.refusals]
    assert not (tmp_path / "state" / "publishing.json").exists()  # withdrawn: the record goes too
    kubelet.plugin_socket("nvidia-gpu.sock", present=False)
    agent = await _restarted(make_agent, tmp_path / "state", clock)
    assert [r.interlock for r in (await agent.tick()).refusals] == ["settle"]


async def test_a_record_of_another_inventory_does_not_skip_the_settle_period(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, make_agent: MakeAgent, tmp_path: Path
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    path = tmp_path / "state" / "publishing.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"inventory": "0" * 64}))
    agent = await _restarted(make_agent, tmp_path / "state", clock)
    assert [r.interlock for r in (await agent.tick()).refusals] == ["settle"]


async def test_in_a_surge_rollout_the_newest_instance_publishes_and_the_old_one_writes_nothing(
    kubelet: KubeletServer, api: FakeApi, clock: Clock, make_agent: MakeAgent, tmp_path: Path
) -> None:
    kubelet.fake.devices = list(INVENTORY)
    kubelet.plugin_socket("nvidia-gpu.sock")
    api.add_node(NODE, dict(LABELS), dict(CAPACITY))
    state = tmp_path / "state"
    old = make_agent(state, pod_uid=OLD)
    await old.tick()  # legacy: records
    hand_over(kubelet, api)
    await publish(old, clock)
    assert api.slices and json.loads((state / "owner.json").read_text())["podUID"] == OLD
    names, writes = sorted(api.slices), len(api.writes)

    new = await _restarted(make_agent, state, clock, pod_uid=NEW)
    assert (await new.tick()).publishing  # takes over, resumes at once
    await new.publisher.sync()
    assert json.loads((state / "owner.json").read_text())["podUID"] == NEW
    assert len(api.writes) == writes  # the same slices: no delete/create

    before = old.publisher.stats.writes
    for name in names:  # the slices go (by hand, or a kubelet's wipe): only the owner repairs them
        api.delete_by_hand(name)
    await old.publisher.sync()  # a watch event wakes the old publisher between two ticks
    assert old.publisher.stats.writes == before and api.slices == {}
    report = await old.tick()
    await old.publisher.sync()
    assert old.publisher.state == "unknown" and old.publisher.stats.writes == before and not report.publishing
    await new.tick()
    await new.publisher.sync()
    assert sorted(api.slices) == names and new.publisher.stats.deletes == 0
    for _ in range(3):  # no loop: ticks of both write nothing more
        clock.now += 1
        for agent in (old, new):
            await agent.tick()
            await agent.publisher.sync()
    assert old.publisher.stats.writes == before and new.publisher.stats.writes == len(names)
