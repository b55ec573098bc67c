"""``simulate`` agrees with upstream's allocator on the scenarios re-typed from its shared test table.

Each scenario of tests/data/alloc/*.yaml names its upstream case (k8s.io/dynamic-resource-allocation
structured/internal/allocatortesting/allocator_testing.go); the claims are allocated together
(one Pod) on the scenario's node, and every claim must have the expected outcome, allocation or
error text.
"""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.alloc import parse_gates, simulate
from tests.translate.alloc_scenarios import compare, documents, load

SCENARIOS = load()


def test_at_least_25_upstream_scenarios_are_re_typed() -> None:
    names = [s["upstream"] for s in SCENARIOS]
    assert len(set(names)) == len(names) >= 25


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["upstream"] for s in SCENARIOS])
def test_simulate_agrees_with_the_upstream_allocator(scenario: dict[str, Any]) -> None:
    result = simulate(documents(scenario), parse_gates(scenario.get("gates")))
    expect = scenario["expect"]
    claims = [c for c in result.claims if c.name != "held"]
    assert claims
    for claim in claims:
        assert claim.outcome == expect["outcome"], (claim.name, claim.reason)
        if expect["outcome"] == "error":
            # Upstream's table matches a part of the message; rows found by the oracle the whole.
            assert expect["error"] == claim.reason if expect.get("exact") else expect["error"] in claim.reason
        if expect["outcome"] == "allocated":
            assert claim.allocation is not None
            assert compare(expect["allocations"][claim.name], claim.allocation), claim.allocation
