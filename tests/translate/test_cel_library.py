"""Tests for the Kubernetes CEL libraries of translate.cel: quantity, semver, strings and lists."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from dra_bridge.translate.cel.quantity_semver import Quantity, Semver
from dra_bridge.translate.errors import SelectorError
from tests.translate.test_cel import NV, matches

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
