"""Differential test: ``simulate`` answers exactly as the upstream allocator library does.

The oracle (tests/oracle, built by hack/oracle.sh from k8s.io/dynamic-resource-allocation
v0.36.3, the library of Kubernetes 1.36.3) is given kube-scheduler 1.36's default features, so
the library runs the variant the scheduler runs by default ("incubating"; checked below).
Hypothesis draws scenarios (tests/translate/alloc_oracle.py); on each, our outcome, devices,
results and node selector (shareIDs left out) or error text must equal upstream's.
Counterexamples it found are rows of tests/data/alloc/oracle.yaml; every table row with the
default gates (re-typed upstream cases too) is checked against the oracle as well.

``DRA_ORACLE_EXAMPLES`` sets the number of examples (default 150: CI stays fast; run with
thousands to hunt for disagreements).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dra_bridge.translate.alloc import parse_gates, simulate
from tests.translate.alloc_oracle import Oracle, oracle_binary, scenarios, verdict_of_oracle, verdict_of_simulation
from tests.translate.alloc_scenarios import documents, load

EXAMPLES = int(os.environ.get("DRA_ORACLE_EXAMPLES", "150"))


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    process = Oracle(oracle_binary())
    yield process
    process.close()


@pytest.mark.property
def test_the_oracle_runs_the_variant_the_scheduler_runs_by_default(oracle: Oracle) -> None:
    scenario = {
        "slices": [{"name": "s", "driver": "driver-a", "pool": "p", "nodeName": "node-1", "devices": [{"name": "d"}]}],
        "claims": [
            {
                "requests": [
                    {"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1}}
                ]
            }
        ],
    }
    answer = oracle.ask(scenario)
    assert answer["variant"] == "incubating", answer
    assert verdict_of_oracle(answer) == verdict_of_simulation(_ours(scenario))


def _ours(scenario: dict[str, Any]) -> list[Any]:
    result = simulate(documents(scenario), parse_gates(None), node=scenario.get("node", ["node-1"])[0])
    return [c for c in result.claims if c.name != "held"]


@pytest.mark.property
@pytest.mark.timeout(max(60.0, EXAMPLES * 0.2))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_simulate_equals_the_upstream_allocator(oracle: Oracle, scenario: dict[str, Any]) -> None:
    theirs = verdict_of_oracle(oracle.ask(scenario))
    ours = verdict_of_simulation(_ours(scenario))
    assert ours == theirs, json.dumps(scenario)


ROWS = [s for s in load() if not s.get("gates")]


@pytest.mark.property
@pytest.mark.parametrize("scenario", ROWS, ids=[s["upstream"] for s in ROWS])
def test_every_table_row_with_default_gates_is_upstreams_answer(oracle: Oracle, scenario: dict[str, Any]) -> None:
    assert verdict_of_simulation(_ours(scenario)) == verdict_of_oracle(oracle.ask(scenario))
