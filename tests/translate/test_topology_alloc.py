"""Issue 14: the allocation engine (translate/alloc) places the topology scenarios as the real scheduler does.

``tests/topology_scenarios.py`` holds the scenarios and the outcome the real scheduler gives
(``tests/e2e/test_topology_e2e.py`` checks that outcome against it and compares its devices
with the engine's); here the engine must give the same outcome, and its devices must follow
the allocator's first-fit order over the slice (devices in the kubelet's ID order).
"""

from __future__ import annotations

import pytest

from dra_bridge.translate.catalog import Catalog
from tests.topology_scenarios import CASES, TopologyCase, engine_placement

NODE = "numa"


def _ids(catalog: Catalog, case: TopologyCase, names: tuple[str, ...]) -> list[str]:
    by_name = {
        d["name"]: d["attributes"]["dra-bridge.io/deviceID"]["string"]
        for s in case.node.slices(catalog, NODE)
        for d in s["spec"]["devices"]
    }
    return [by_name[n] for n in names]


#: First fit in ID order with GPU-0 held: NUMA node 0 holds GPU-2, 4, 6 free, node 1 GPU-1, 3, 5, 7.
DEVICES = {
    "numa-2-gpus": ["GPU-1", "GPU-3"],
    "numa-4-gpus": ["GPU-1", "GPU-3", "GPU-5", "GPU-7"],
    "pcie-2-gpus": ["GPU-1", "GPU-3"],
    "numa-5-gpus": [],
    "none-2-gpus": ["GPU-1", "GPU-2"],
    "none-4-gpus": ["GPU-1", "GPU-2", "GPU-3", "GPU-4"],
    "none-5-gpus": ["GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5"],
}


def test_every_case_has_expected_devices() -> None:
    assert set(DEVICES) == {c.id for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_engine_gives_the_real_schedulers_outcome(catalog: Catalog, case: TopologyCase) -> None:
    placement = engine_placement(case, catalog, NODE)
    assert placement.outcome == case.outcome, placement.reason
    assert _ids(catalog, case, placement.devices) == DEVICES[case.id]
    if case.outcome == "unschedulable":
        assert "cannot allocate all claims" in placement.reason
