"""Tests for translate.cel: the DRA CEL environment for device selectors."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_bridge.translate.cel import MAX_EXPRESSION_BYTES, compile_selector, evaluate_selectors
from dra_bridge.translate.errors import SelectorError

DRIVER = "gpu.nvidia.com"

A100: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "gpu.nvidia.com/productName": {"string": "NVIDIA A100-SXM4-40GB"},
        "type": {"string": "gpu"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "driverVersion": {"version": "550.54.15"},
        "index": {"int": 0},
        "x": {"bool": True},
        "mig": {"bool": False},
        "other.example.com/zone": {"string": "a"},
    },
    "capacity": {"gpu.nvidia.com/memory": {"value": "40Gi"}, "cores": {"value": "1500m"}},
}

# The same device, v1beta1 shape: everything but the name inside "basic".
A100_V1BETA1: dict[str, Any] = {
    "name": "gpu-0",
    "basic": {"attributes": A100["attributes"], "capacity": A100["capacity"]},
}

BARE: dict[str, Any] = {"name": "gpu-9"}  # no attributes, no capacity at all

NV = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'


def matches(expression: str, device: dict[str, Any] = A100, driver: str = DRIVER) -> bool:
    return compile_selector(expression).matches(device, driver)


# ------------------------------------------------------------------ attribute reads


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(f'{NV}.productName == "NVIDIA A100-SXM4-40GB"', True, id="string-qualified"),
        pytest.param(f'{NV}.productName == "NVIDIA H100"', False, id="string-other-value"),
        pytest.param(f'{NV}.type == "gpu"', True, id="bare-name-in-driver-domain"),
        pytest.param(f"{NV}.index == 0", True, id="int"),
        pytest.param(f"{NV}.index > 0", False, id="int-ordering"),
        pytest.param(f"{NV}.x", True, id="bool-true"),
        pytest.param(f"{NV}.mig", False, id="bool-false"),
        pytest.param(f'{NV}.cudaComputeCapability == semver("8.0.0")', True, id="version-eq"),
        pytest.param(f'{NV}.cudaComputeCapability.isGreaterThan(semver("7.5.0"))', True, id="version-gt"),
        pytest.param(f"{NV}.cudaComputeCapability.major() == 8", True, id="version-major"),
        pytest.param('device.attributes["other.example.com"].zone == "a"', True, id="foreign-domain"),
        pytest.param(f'device.driver == "{DRIVER}"', True, id="driver"),
        pytest.param(f'{CAP}.memory.compareTo(quantity("40Gi")) == 0', True, id="capacity-quantity"),
        pytest.param(f'{CAP}.cores.isLessThan(quantity("2"))', True, id="capacity-bare-name-milli"),
        pytest.param(f"{NV}.index == 0.0", True, id="int-equals-double-heterogeneous"),
        pytest.param(f'{NV}.index == "0"', False, id="int-vs-string-equality-is-false"),
        pytest.param(f"{NV}.x == 1", False, id="bool-is-not-int"),
        pytest.param(f"{NV}.index < 0.5", True, id="cross-type-numeric-ordering"),
        pytest.param("!device.allowMultipleAllocations", True, id="allow-multiple-default"),
    ],
)
def test_attribute_reads(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_v1beta1_device_shape_reads_the_same_values() -> None:
    expression = (
        f'{NV}.productName == "NVIDIA A100-SXM4-40GB" && {NV}.index == 0 && '
        f'{CAP}.memory.compareTo(quantity("42949672960")) == 0'
    )
    assert matches(expression, A100_V1BETA1) is True
    assert matches(f"{NV}.index == 1", A100_V1BETA1) is False


def test_matches_does_not_modify_the_device() -> None:
    before = copy.deepcopy(A100)
    matches(f'{NV}.productName.lowerAscii() == "x"')
    assert before == A100


def test_list_attributes_become_lists() -> None:
    device = {"name": "d", "attributes": {"ids": {"ints": [1, 2]}, "v": {"versions": ["1.0.0"]}}}
    assert matches(f"2 in {NV}.ids && {NV}.v[0].major() == 1", device) is True


# ------------------------------------------------------------------ missing attributes


@pytest.mark.parametrize(
    ("expression", "device"),
    [
        pytest.param(f"has({NV}.nope)", A100, id="has-missing-id"),
        pytest.param(f'"nope" in {NV}', A100, id="in-missing-id"),
        pytest.param('has(device.attributes["x.example.com"].foo)', A100, id="has-unknown-domain"),
        pytest.param('"foo" in device.attributes["x.example.com"]', A100, id="in-unknown-domain"),
        pytest.param(f"has({NV}.productName)", BARE, id="has-on-bare-device"),
        pytest.param(
            f'has({NV}.productName) && {NV}.productName == "NVIDIA A100-SXM4-40GB"',
            BARE,
            id="guarded-and-short-circuits",
        ),
        pytest.param(
            f'"memory" in {CAP} && {CAP}.memory.isGreaterThan(quantity("1Gi"))',
            BARE,
            id="guarded-capacity",
        ),
    ],
)
def test_guarded_reads_of_missing_attributes_are_false(expression: str, device: Any) -> None:
    assert matches(expression, device) is False


def test_guarded_read_is_true_when_present() -> None:
    assert matches(f"has({NV}.productName)") is True
    assert matches(f'"productName" in {NV}') is True


@pytest.mark.parametrize(
    ("expression", "missing"),
    [
        pytest.param(f"{NV}.nope == 1", "nope", id="missing-id"),
        pytest.param('device.attributes["x.example.com"].foo == 1', "foo", id="unknown-domain"),
        pytest.param(f'{NV}["nope"] == 1', "nope", id="index-syntax"),
        pytest.param(f"{CAP}.nope.sign() == 1", "nope", id="missing-capacity"),
    ],
)
def test_unguarded_read_of_missing_key_raises(expression: str, missing: str) -> None:
    with pytest.raises(SelectorError) as info:
        matches(expression)
    message = str(info.value)
    assert message.startswith(f"selector on device {DRIVER}/gpu-0: CEL runtime error: ")
    assert f"no such key: {missing}" in message


def test_runtime_error_on_v1beta1_device_names_the_device() -> None:
    with pytest.raises(SelectorError, match=r"^selector on device d\.example\.com/gpu-0: CEL"):
        matches('device.attributes["d.example.com"].nope', A100_V1BETA1, "d.example.com")


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param(f"{NV}.productName > 1", id="string-vs-int-ordering"),
        pytest.param(f'{NV}.cudaComputeCapability.isGreaterThan("7.0.0")', id="semver-vs-string"),
        pytest.param(f'{NV}.index.lowerAscii() == "0"', id="string-function-on-int"),
        pytest.param(f'{CAP}.memory.compareTo(semver("1.0.0")) == 0', id="quantity-vs-semver"),
    ],
)
def test_type_mismatch_is_a_runtime_error(expression: str) -> None:
    with pytest.raises(SelectorError, match="CEL runtime error: no such overload"):
        matches(expression)


# ------------------------------------------------------------------ result type, compile errors


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param("device.driver", id="string"),
        pytest.param(f"{NV}.index", id="int"),
        pytest.param(f"{CAP}.memory", id="quantity"),
        pytest.param("[true]", id="list"),
    ],
)
def test_non_bool_result_is_an_error(expression: str) -> None:
    with pytest.raises(SelectorError, match="is not a bool"):
        matches(expression)


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        pytest.param(f"{NV}.index ==", "syntax error", id="syntax"),
        pytest.param(f"{NV}.?index", "syntax error", id="optional-syntax-unsupported"),
        pytest.param("nodeName == 'a'", "undeclared reference to 'nodeName'", id="unknown-var"),
        pytest.param(f"{NV}.productName.frobnicate()", "function 'frobnicate'", id="unknown-fn"),
        pytest.param("[1].all(x, y > 0)", "undeclared reference to 'y'", id="macro-scope"),
        pytest.param("cel.bind(1, 2, true)", "invalid arguments to bind()", id="bind-args"),
    ],
)
def test_compile_errors_name_expression_and_problem(expression: str, problem: str) -> None:
    with pytest.raises(SelectorError) as info:
        compile_selector(expression)
    assert repr(expression) in str(info.value)
    assert problem in str(info.value)


def test_expression_size_limit_is_10_kib() -> None:
    padding = MAX_EXPRESSION_BYTES - len("true || ") - len('""')
    at_limit = 'true || "' + "a" * padding + '"'
    assert len(at_limit.encode()) == MAX_EXPRESSION_BYTES
    assert matches(at_limit) is True
    with pytest.raises(SelectorError, match="CEL selector expression at most 10 KiB"):
        compile_selector(at_limit + " ")


def test_size_limit_counts_bytes_not_characters() -> None:
    text = '"' + "é" * 5200 + '" != ""'  # 5200 characters, 10400 bytes in UTF-8
    with pytest.raises(SelectorError, match="at most 10 KiB"):
        compile_selector(text)


def test_compiled_selectors_are_cached() -> None:
    assert compile_selector(f"{NV}.index == 0") is compile_selector(f"{NV}.index == 0")


def test_cel_bind_is_supported() -> None:
    expression = f'cel.bind(g, {NV}, has(g.productName) && g.productName.startsWith("NVIDIA"))'
    assert matches(expression) is True
    assert matches(expression, BARE) is False


# ------------------------------------------------------------------ evaluate_selectors


@pytest.mark.parametrize(
    ("expressions", "expected"),
    [
        pytest.param([], True, id="no-selectors"),
        pytest.param([f'{NV}.type == "gpu"', f"{NV}.index == 0"], True, id="all-match"),
        pytest.param([f'{NV}.type == "gpu"', f"{NV}.index == 1"], False, id="one-fails"),
        pytest.param([f"{NV}.index == 1", f"{NV}.nope == 1"], False, id="stops-at-first-false"),
    ],
)
def test_evaluate_selectors_is_a_conjunction(expressions: list[str], expected: bool) -> None:
    assert evaluate_selectors(expressions, A100, DRIVER) is expected


def test_evaluate_selectors_propagates_runtime_errors() -> None:
    with pytest.raises(SelectorError, match="no such key: nope"):
        evaluate_selectors([f"{NV}.index == 0", f"{NV}.nope == 1"], A100, DRIVER)


def test_other_driver_sees_bare_names_in_its_own_domain() -> None:
    device = {"name": "gpu-1", "attributes": {"model": {"string": "MI300X"}}}
    assert matches('device.attributes["amd.com"].model == "MI300X"', device, "amd.com") is True
    assert matches('has(device.attributes["gpu.nvidia.com"].model)', device, "amd.com") is False
