"""First-fit placement over many nodes (translate.alloc.placement) equals trying every node in order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_bridge.translate.alloc import AllocatedState, Node, NodeAllocator, SelectorCache, gather_pools, parse_gates
from dra_bridge.translate.alloc.placement import place
from dra_bridge.translate.errors import AllocationError

CLASSES = {"gpu": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}], "config": []}}
MODEL = 'device.attributes["gpu.example.com"].model == "{}"'


def _slice(node: int, models: list[str]) -> tuple[str, dict[str, Any]]:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"model": {"string": m}, "uuid": {"string": f"n{node}-{i}"}}}
        for i, m in enumerate(models)
    ]
    return (
        f"node-{node}",
        {
            "driver": "gpu.example.com",
            "nodeName": f"node-{node}",
            "pool": {"name": f"node-{node}", "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    )


def _claim(count: int, model: str | None) -> dict[str, Any]:
    exact: dict[str, Any] = {
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": count,
        "selectors": [{"cel": {"expression": MODEL.format(model)}}] if model else [],
    }
    return {"devices": {"requests": [{"name": "gpu", "exactly": exact}], "constraints": [], "config": []}}


def _naive(
    pods: list[tuple[str, Any]], nodes: list[Node], slices: list[Any], cumulative: bool = True
) -> list[tuple[str, str | None]]:
    features = parse_gates(None)
    allocators = [
        NodeAllocator(n, gather_pools(slices, n), CLASSES, features, AllocatedState(), SelectorCache()) for n in nodes
    ]
    out: list[tuple[str, str | None]] = []
    for _, claims in pods:
        for allocator in allocators:
            try:
                results = allocator.allocate(claims)
            except AllocationError:
                results = None
            if results is not None:
                for result in results if cumulative else ():
                    allocator.state.add_allocation(result)
                out.append(("allocated", allocator.node.name))
                break
        else:
            out.append(("unsatisfiable", None))
    return out


@pytest.mark.property
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    models=st.lists(st.lists(st.sampled_from("ab"), min_size=1, max_size=4), min_size=1, max_size=5),
    pods=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([None, "a", "b", "c"])), max_size=25),
    cumulative=st.booleans(),
)
def test_placement_equals_trying_every_node_in_order(
    models: list[list[str]], pods: list[tuple[int, Any]], cumulative: bool
) -> None:
    nodes = [Node(f"node-{i}") for i in range(len(models))]
    slices = [_slice(i, m) for i, m in enumerate(models)]
    claims = [(f"ns/pod-{i}", [(f"ns/claim-{i}", _claim(count, model))]) for i, (count, model) in enumerate(pods)]
    placed = place(claims, nodes, slices, CLASSES, parse_gates(None), cumulative=cumulative)
    assert [(p.outcome, p.node) for p in placed] == _naive(claims, nodes, slices, cumulative)


def test_a_network_attached_device_taken_through_one_node_is_taken_for_all() -> None:
    # one allNodes slice with one device, two nodes: the second pod finds it held (one cluster state)
    shared = (
        "fabric",
        {
            "driver": "gpu.example.com",
            "allNodes": True,
            "devices": [{"name": "gpu-0"}],
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
        },
    )
    pods = [(f"ns/pod-{i}", [(f"ns/claim-{i}", _claim(1, None))]) for i in range(2)]
    placed = place(pods, [Node("node-0"), Node("node-1")], [shared], CLASSES, parse_gates(None))
    assert [(p.outcome, p.node) for p in placed] == [("allocated", "node-0"), ("unsatisfiable", None)]


def test_requests_reused_by_signature_see_what_is_held_since() -> None:
    # the allocator reuses the requests it validated for a signature (and what they remember of
    # the node's devices), never what was free then
    node = Node("node-0")
    allocator = NodeAllocator(
        node,
        gather_pools([_slice(0, ["a", "b", "a"])], node),
        CLASSES,
        parse_gates(None),
        AllocatedState(),
        SelectorCache(),
    )
    picked = []
    for i in range(3):
        found = allocator.allocate([(f"ns/c-{i}", _claim(1, "a"))], "one a")
        if found is not None:
            allocator.state.add_allocation(found[0])
            picked.append(found[0]["devices"]["results"][0]["device"])
    assert picked == ["gpu-0", "gpu-2"]
