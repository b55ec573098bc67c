"""Tests for translate.cel: the DRA CEL environment for device selectors."""

from __future__ import annotations

import copy
import itertools
from fractions import Fraction
from typing import Any

import pytest

from translate.cel import MAX_EXPRESSION_BYTES, compile_selector, evaluate_selectors
from translate.cel_values import Quantity, Semver
from translate.errors import SelectorError

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


# ------------------------------------------------------------------ quantity library


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param('quantity("40Gi").compareTo(quantity("42949672960")) == 0', True, id="Gi-eq"),
        pytest.param('quantity("40Gi") == quantity("42949672960")', True, id="Gi-eq-operator"),
        pytest.param('quantity("40G").isLessThan(quantity("40Gi"))', True, id="G-lt-Gi"),
        pytest.param('quantity("15360Mi").compareTo(quantity("15Gi")) == 0', True, id="Mi-vs-Gi"),
        pytest.param('quantity("1500m").compareTo(quantity("1.5")) == 0', True, id="milli"),
        pytest.param('quantity("1e3").compareTo(quantity("1k")) == 0', True, id="exponent"),
        pytest.param('quantity("1E-3").compareTo(quantity("1m")) == 0', True, id="neg-exponent"),
        pytest.param('quantity("1E").compareTo(quantity("1e18")) == 0', True, id="exa-suffix"),
        pytest.param('quantity("1Ki").isGreaterThan(quantity("1k"))', True, id="Ki-gt-k"),
        pytest.param('quantity("1").compareTo(quantity("2")) == -1', True, id="compare-lt"),
        pytest.param('quantity("3").compareTo(quantity("2")) == 1', True, id="compare-gt"),
        pytest.param('quantity("1500m").isInteger()', False, id="milli-not-integer"),
        pytest.param('quantity("2k").isInteger()', True, id="k-integer"),
        pytest.param('quantity("2k").asInteger() == 2000', True, id="as-integer"),
        pytest.param('quantity("1500m").asApproximateFloat() == 1.5', True, id="approx-float"),
        pytest.param('quantity("-5").sign() == -1', True, id="sign-negative"),
        pytest.param('quantity("0Gi").sign() == 0', True, id="sign-zero"),
        pytest.param('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True, id="add-q"),
        pytest.param('quantity("1k").add(24) == quantity("1024")', True, id="add-int"),
        pytest.param('quantity("1").sub(quantity("1500m")).sign() == -1', True, id="sub-q"),
        pytest.param('quantity("1Gi").sub(1) == quantity("1073741823")', True, id="sub-int"),
        pytest.param('isQuantity("1.5Gi")', True, id="isQuantity-ok"),
        pytest.param('isQuantity("1GB")', False, id="isQuantity-bad-suffix"),
        pytest.param('isQuantity("1 Gi")', False, id="isQuantity-space"),
        pytest.param('isQuantity("")', False, id="isQuantity-empty"),
        pytest.param('isQuantity("1K")', False, id="isQuantity-upper-K"),
    ],
)
def test_quantity_library(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param('quantity("abc") == quantity("1")', "quantities must match", id="invalid"),
        pytest.param('quantity("1500m").asInteger() == 1', "cannot convert", id="fraction"),
        pytest.param('quantity("1E").add(quantity("9E")).asInteger() > 0', "cannot convert", id="int64-overflow"),
        pytest.param('quantity("1Gi") < quantity("2Gi")', "no such overload", id="no-less-op"),
    ],
)
def test_quantity_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        matches(expression)


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        pytest.param("40Gi", 40 * 2**30, id="Gi"),
        pytest.param("42949672960", 42949672960, id="plain"),
        pytest.param("1500m", 1.5, id="milli"),
        pytest.param("1e3", 1000, id="e3"),
        pytest.param("15360Mi", 15 * 2**30, id="Mi"),
        pytest.param("+.5", 0.5, id="leading-dot"),
        pytest.param("-2u", -0.000002, id="micro-negative"),
        pytest.param("1e-10", 1e-9, id="rounds-up-to-nano"),
    ],
)
def test_quantity_parse_is_exact(text: str, exact: float) -> None:
    assert Quantity.parse(text).value == Fraction(str(exact))


# ------------------------------------------------------------------ semver library


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param('semver("1.2.3").isLessThan(semver("1.10.0"))', True, id="numeric-not-lexical"),
        pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True, id="pre-lt-rel"),
        pytest.param(
            'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
            True,
            id="numeric-id-lt-alnum",
        ),
        pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True, id="shorter-lt"),
        pytest.param(
            'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
            True,
            id="pre-numeric-compare",
        ),
        pytest.param('semver("1.0.0+build.1").compareTo(semver("1.0.0")) == 0', True, id="build-ignored"),
        pytest.param('semver("2.0.0").compareTo(semver("1.9.9")) == 1', True, id="compare-gt"),
        pytest.param('semver("2.0.0").isGreaterThan(semver("2.0.0"))', False, id="gt-equal"),
        pytest.param('semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3', True, id="minor-patch"),
        pytest.param('semver("v1.2", true) == semver("1.2.0")', True, id="normalize-v-minor"),
        pytest.param('semver("01.002.0003", true) == semver("1.2.3")', True, id="normalize-leading-zeros"),
        pytest.param('semver("v3", true).major() == 3', True, id="normalize-major-only"),
        pytest.param('isSemver("1.2.3")', True, id="isSemver-ok"),
        pytest.param('isSemver("v1.2.3")', False, id="isSemver-v-strict"),
        pytest.param('isSemver("v1.2.3", true)', True, id="isSemver-v-normalized"),
        pytest.param('isSemver("1.2")', False, id="isSemver-two-parts"),
        pytest.param('isSemver("01.2.3")', False, id="isSemver-leading-zero"),
        pytest.param('isSemver("1.2.3-01")', False, id="isSemver-pre-leading-zero"),
    ],
)
def test_semver_library(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_invalid_semver_is_a_runtime_error() -> None:
    with pytest.raises(SelectorError, match="invalid semver"):
        matches('semver("1.2").major() == 1')


def test_device_with_invalid_version_attribute_is_an_error() -> None:
    device = {"name": "d", "attributes": {"v": {"version": "v1"}}}
    with pytest.raises(SelectorError, match="semantic version"):
        matches("true", device)


def test_semver_sorting_matches_spec_example() -> None:
    # semver.org 2.0.0 rule 11 example, in ascending order.
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ]
    versions = [Semver.parse(text) for text in ordered]
    for lower, higher in itertools.pairwise(versions):
        assert lower.compare(higher) == -1
        assert higher.compare(lower) == 1


# ------------------------------------------------------------------ strings and lists


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(
            f'{NV}.productName.lowerAscii().replace(" ", "-") == "nvidia-a100-sxm4-40gb"',
            True,
            id="normalise-product-name",
        ),
        pytest.param(f'{NV}.productName.upperAscii() == "NVIDIA A100-SXM4-40GB"', True, id="upperAscii"),
        pytest.param('"ÄbC".lowerAscii() == "Äbc"', True, id="lowerAscii-only-ascii"),
        pytest.param('"a-b-c".replace("-", "", 1) == "ab-c"', True, id="replace-n"),
        pytest.param('"a,b,c".split(",") == ["a", "b", "c"]', True, id="split"),
        pytest.param('"a,b,c".split(",", 2) == ["a", "b,c"]', True, id="split-n"),
        pytest.param('"a,b,c".split(",", 0) == []', True, id="split-zero"),
        pytest.param(f'{NV}.productName.split(" ")[1] == "A100-SXM4-40GB"', True, id="split-index"),
        pytest.param('"NVIDIA A100".substring(7) == "A100"', True, id="substring"),
        pytest.param('"NVIDIA A100".substring(0, 6) == "NVIDIA"', True, id="substring-range"),
        pytest.param('"  a b \\t".trim() == "a b"', True, id="trim"),
        pytest.param('"abcabc".indexOf("c") == 2', True, id="indexOf"),
        pytest.param('"abcabc".indexOf("c", 3) == 5', True, id="indexOf-offset"),
        pytest.param('"abcabc".indexOf("x") == -1', True, id="indexOf-missing"),
        pytest.param('"abcabc".lastIndexOf("a") == 3', True, id="lastIndexOf"),
        pytest.param('"abcabc".lastIndexOf("a", 2) == 0', True, id="lastIndexOf-offset"),
        pytest.param('"héllo".indexOf("l") == 2', True, id="indexOf-code-points"),
        pytest.param('"héllo".charAt(1) == "é"', True, id="charAt"),
        pytest.param('"ab".charAt(2) == ""', True, id="charAt-end"),
        pytest.param('["a", "b"].join("-") == "a-b"', True, id="join-sep"),
        pytest.param('["a", "b"].join() == "ab"', True, id="join"),
        pytest.param(f'{NV}.productName.contains("A100")', True, id="contains"),
        pytest.param(f'{NV}.productName.startsWith("NVIDIA")', True, id="startsWith"),
        pytest.param(f'{NV}.productName.endsWith("40GB")', True, id="endsWith"),
        pytest.param(f'{NV}.productName.matches("A100-SXM4-(40|80)GB$")', True, id="matches"),
        pytest.param(f"{NV}.productName.size() == 21", True, id="size"),
        pytest.param(f'{NV}.productName in ["NVIDIA A100-SXM4-40GB", "NVIDIA H100"]', True, id="in-list"),
        pytest.param(f'{NV}.productName in ["NVIDIA H100", "NVIDIA L4"]', False, id="not-in-list"),
        pytest.param(f"{NV}.index in [0, 1]", True, id="int-in-list"),
        pytest.param(f'{NV}.index in ["0", 1]', False, id="in-mixed-list-no-error"),
        pytest.param("[1, 3, 2].indexOf(3) == 1", True, id="list-indexOf"),
        pytest.param("[1, 2, 3].isSorted() && [1, 2, 3].sum() == 6", True, id="list-sorted-sum"),
        pytest.param("[1, 5, 2].max() == 5 && [4, 2].min() == 2", True, id="list-max-min"),
    ],
)
def test_string_and_list_functions(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param('"abc".substring(4) == ""', "index out of range", id="substring-range"),
        pytest.param('"abc".substring(2, 1) == ""', "invalid substring range", id="start-gt-end"),
        pytest.param('"ab".charAt(3) == ""', "index out of range", id="charAt-range"),
        pytest.param('[1, "a"].join() == ""', "no such overload", id="join-non-strings"),
    ],
)
def test_string_function_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        matches(expression)


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
