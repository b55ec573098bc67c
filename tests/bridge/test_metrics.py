"""The agent's /metrics: every metric's type as served, and the slice-write counter."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.health import Health, Metrics, serve
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from tests.bridge.agent_fixtures import NODE, Clock, hand_over, publish
from tests.bridge.conftest import FakeApi, KubeletServer


async def scrape(metrics: Metrics) -> dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]:
    """GET /metrics of a served agent: family name -> (type, {labels: value}) of its samples."""
    runner = await serve(Health(), metrics, 0, 60)
    try:
        port = next(a[1] for a in runner.addresses if len(a) == 2)  # port 0: each family its own; IPv4
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as answer:
            text = await answer.text()
    finally:
        await runner.cleanup()
    return {
        family.name: (family.type, {tuple(sorted(s.labels.items())): s.value for s in family.samples})
        for family in text_string_to_metric_families(text)
    }


def writes(scraped: dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]) -> dict[str, float]:
    kind, samples = scraped["dra_bridge_slice_writes"]
    assert kind == "counter"
    return {dict(labels)["op"]: value for labels, value in samples.items() if value or labels}


async def test_slice_writes_is_a_counter_served_as_slice_writes_total(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    await legacy.tick()
    text = legacy.metrics.text().decode()
    assert "# TYPE dra_bridge_slice_writes_total counter" in text
    stats = legacy.publisher.stats
    assert stats.creates > 0
    assert f'dra_bridge_slice_writes_total{{op="creates"}} {float(stats.creates)}' in text
    assert writes(await scrape(legacy.metrics)) == {"creates": stats.creates, "updates": 0.0, "deletes": 0.0}


async def test_slice_writes_counts_each_write_once_across_ticks_and_a_withdrawal(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    for _ in range(3):  # steady state: no write, the counter stays
        await legacy.tick()
    created = legacy.publisher.stats.creates
    assert writes(await scrape(legacy.metrics))["creates"] == created
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
    await legacy.tick()
    await legacy.publisher.sync()  # withdraws: one delete per slice
    await legacy.tick()
    await legacy.tick()
    deleted = legacy.publisher.stats.deletes
    assert deleted > 0
    assert writes(await scrape(legacy.metrics)) == {"creates": created, "updates": 0.0, "deletes": deleted}


def test_slice_writes_never_falls_when_the_running_totals_do() -> None:
    metrics = Metrics()
    metrics.count_slice_writes({"creates": 3, "updates": 1, "deletes": 0})
    metrics.count_slice_writes({"creates": 5, "updates": 1, "deletes": 2})
    metrics.count_slice_writes({"creates": 1, "updates": 0, "deletes": 0})  # a new publisher starts from 0
    text = metrics.text().decode()
    assert 'dra_bridge_slice_writes_total{op="creates"} 5.0' in text
    assert 'dra_bridge_slice_writes_total{op="deletes"} 2.0' in text


async def test_every_agent_metric_is_served_with_its_documented_type() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bridge.md").read_text("utf-8")
    rows = [line for line in doc.split("## Metrics", 1)[1].splitlines() if line.startswith("| `dra_bridge_")]
    documented = {row.split("`")[1].split("{")[0]: row.split("|")[2].strip() for row in rows}
    served = {  # prometheus_client adds a gauge NAME_created beside a counter without labels
        name: kind for name, (kind, _) in (await scrape(Metrics())).items() if not name.endswith("_created")
    }
    exposed = {name + ("_total" if kind == "counter" else ""): kind for name, kind in served.items()}
    assert documented == exposed
