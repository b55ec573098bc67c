"""Which parts of ``device`` a selector reads (translate.cel.reads): the key of the allocator's CEL cache."""

from __future__ import annotations

import pytest

from dra_bridge.translate.cel.reads import WHOLE_DEVICE, selector_reads

CASES = [
    ('device.driver == "x"', {("driver",)}),
    ('device.attributes["gpu.nvidia.com"].productName == "A100"', {("attributes", "gpu.nvidia.com", "productName")}),
    ('device.attributes[device.driver].model == "a"', {("driver",), ("attributes", None, "model")}),
    ("device.capacity['d.io']['memory'].compareTo(quantity('1Gi')) >= 0", {("capacity", "d.io", "memory")}),
    (
        '"numa" in device.attributes["d.io"] && has(device.attributes["d.io"].numa)',
        {("attributes", "d.io", "*"), ("attributes", "d.io", "numa")},
    ),
    ("device.allowMultipleAllocations", {("allowMultipleAllocations",)}),
    ("true", set()),
]


@pytest.mark.parametrize(("expression", "reads"), CASES, ids=[c[0] for c in CASES])
def test_the_reads_of_an_expression_come_from_its_syntax_tree(expression: str, reads: set[tuple[str, ...]]) -> None:
    assert selector_reads(expression) == frozenset(reads)


UNSURE = [
    "device.attributes.exists(d, d == 'x')",  # the whole attribute map
    "[1].all(device, device > 0) && device.driver == 'x'",  # `device` shadowed by a macro
    "cel.bind(device, 1, device > 0)",
    'device.attributes["a" + "b"].x == 1',  # a computed domain
    "device == device",
]


@pytest.mark.parametrize("expression", UNSURE)
def test_when_unsure_the_whole_device_is_read(expression: str) -> None:
    assert selector_reads(expression) == WHOLE_DEVICE
