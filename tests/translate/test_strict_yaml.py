"""Configuration YAML is bounded like the manifests: an alias bomb is refused before it expands."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.errors import CatalogError, PolicyError
from dra_bridge.translate.policy import load_policy, load_policy_file
from dra_bridge.translate.strict_yaml import MAX_VALUES, StrictLoader, count_values, value_count

HEADER = "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\n"


def bomb(levels: int, fan: int = 9) -> str:
    """``levels`` mappings, each a list of ``fan`` aliases of the one before: fan**levels values."""
    lines = [f"a0: &a0 [{', '.join(['1'] * fan)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [7, 10, 30])
def test_a_policy_alias_bomb_is_refused_fast_naming_the_file(levels: int) -> None:
    for load in (load_policy, load_policy_file):
        started = time.monotonic()
        with pytest.raises(PolicyError, match=r"^policy.yaml: expands to more than 1,000,000 values") as info:
            load(bomb(levels), "policy.yaml")
        assert time.monotonic() - started < 0.5
        assert "aliases" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("levels", [7, 10, 30])
def test_a_catalog_alias_bomb_is_refused_fast_naming_the_file(levels: int) -> None:
    started = time.monotonic()
    with pytest.raises(CatalogError, match=r"^mine.yaml: expands to more than 1,000,000 values"):
        load_catalog(HEADER + bomb(levels), "mine.yaml")
    assert time.monotonic() - started < 0.5


def test_a_recursive_alias_is_refused_not_walked_forever() -> None:
    with pytest.raises(PolicyError, match=r"^policy.yaml: expands to more than"):
        load_policy("defaults: &d {x: [*d]}\n", "policy.yaml")


def test_aliases_are_counted_at_every_use_but_walked_once() -> None:
    shared = [1, 2, 3]
    doc = {"a": shared, "b": [shared, shared]}
    assert count_values(doc, 100) == 1 + 4 + 1 + 2 * 4  # the root, a, b and b's two uses of a
    assert count_values(doc, 14) == 14
    assert count_values(doc, 13) is None
    levels: list[Any] = [0] * 9
    for _ in range(40):  # 9**40 values once expanded: counted in 40 steps
        levels = [levels] * 9
    started = time.monotonic()
    assert count_values(levels, MAX_VALUES) is None
    assert time.monotonic() - started < 0.1


def test_aliases_within_the_budget_still_load() -> None:
    text = "rules:\n  - {name: a, match: &m {namespaces: [x]}}\n  - {name: b, match: *m}\n"
    policy = load_policy(text, "p.yaml")
    assert [rule.name for rule in policy.rules] == ["a", "b"]
    assert policy.rules[0].match == policy.rules[1].match


def test_an_integer_too_long_to_convert_is_a_yaml_error_naming_the_line() -> None:
    text = "a: 1\nb: " + "1" * 5001 + "\n"
    with pytest.raises(yaml.YAMLError) as refused:
        yaml.load(text, Loader=StrictLoader)
    assert "integer too long" in str(refused.value) and "line 2" in str(refused.value)
    assert yaml.load("a: 0x1f\nb: -12\nc: 1_000\n", Loader=StrictLoader) == {"a": 31, "b": -12, "c": 1000}


@pytest.mark.parametrize(
    ("tagged", "says"),
    [
        ("!!int abc", "'abc' is not an integer (tag !!int)"),
        ("!!int ''", "'' is not an integer (tag !!int)"),
        ("!!float abc", "'abc' is not a float (tag !!float)"),
        ("!!float ''", "'' is not a float (tag !!float)"),
        ("!!bool maybe", "'maybe' is not a boolean (tag !!bool)"),
        ("!!bool 1", "'1' is not a boolean (tag !!bool)"),
    ],
    ids=["int", "int-empty", "float", "float-empty", "bool", "bool-number"],
)
def test_a_tagged_scalar_that_is_not_of_its_tag_is_a_yaml_error_naming_the_value_and_line(
    tagged: str, says: str
) -> None:
    with pytest.raises(yaml.YAMLError) as refused:
        yaml.load(f"a: 1\nb: {tagged}\n", Loader=StrictLoader)
    assert says in str(refused.value) and "line 2" in str(refused.value), str(refused.value)


def test_tagged_scalars_of_their_tag_load_as_pyyaml_loads_them() -> None:
    text = "a: !!int '12'\nb: !!float '1.5'\nc: !!bool 'yes'\nd: !!float .inf\ne: !!bool off\nf: !!int 0o17\n"
    assert yaml.load(text, Loader=StrictLoader) == yaml.load(text, Loader=yaml.SafeLoader)


def test_a_value_without_shared_parts_counts_the_same_and_says_none_is_shared() -> None:
    doc = {"a": [1, 2, {"b": None}], "c": {}, "d": []}
    assert value_count(doc, 100) == (1 + 3 + 3 + 1, False)  # the root, a, c, d, a's items, b
    assert value_count(doc, 8) == (8, False)
    assert value_count(doc, 7) == (None, False)
    assert value_count("text", 1) == (1, False)


def test_a_value_reaching_a_list_twice_is_shared() -> None:
    shared = [1, 2, 3]
    assert value_count({"a": shared, "b": [shared, shared]}, 100) == (14, True)
    assert value_count({"a": shared, "b": [[1, 2, 3], [1, 2, 3]]}, 100) == (14, False)
    loop: list[Any] = []
    loop.append(loop)
    assert value_count(loop, 100) == (None, False)


@pytest.mark.parametrize(
    "text",
    [
        "base: &b {a: 1}\npod:\n  <<: *b\n  c: 3\n",
        "a: &s {g: 1}\nb: &l {g: 4}\nc:\n  <<: [*s, *l]\n",  # which g wins: kubectl 1, PyYAML 6.0.4 4
        "c: {<<: {x: 1, x: 2}}\n",  # a duplicate inside the merged mapping
        "l: &b {" + ", ".join(f"k{i}: v" for i in range(2000)) + "}\nm: {<<: [" + ", ".join(["*b"] * 2000) + "]}\n",
        "l0: &l0 {a: 1}\n" + "".join(f"l{k}: &l{k} {{<<: [*l{k - 1}, *l{k - 1}]}}\n" for k in range(1, 41)),
    ],
    ids=["merge", "precedence", "inner-duplicate", "quadratic", "exponential"],
)
def test_a_merge_key_is_a_yaml_error_naming_its_line_before_any_merge_is_made(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(yaml.YAMLError) as refused:
        yaml.load(text, Loader=StrictLoader)
    assert time.monotonic() - started < 1
    assert "a merge key (<<) is not read here" in str(refused.value) and "line " in str(refused.value)


def test_a_quoted_merge_key_is_an_ordinary_key() -> None:
    assert yaml.load('a: {"<<": 1, b: 2}\n', Loader=StrictLoader) == {"a": {"<<": 1, "b": 2}}


@pytest.mark.parametrize(
    "digits",
    ["0x" + "f" * 5000, "0b" + "1" * 20000, "0" + "7" * 6000, "1" + ":59" * 3000, "-0x" + "f" * 5000],
    ids=["hex", "binary", "octal", "sexagesimal", "negative-hex"],
)
def test_an_integer_of_any_base_too_large_to_print_is_a_yaml_error_naming_the_line(digits: str) -> None:
    """Python reads such an integer but cannot print it in decimal (more than
    ``sys.get_int_max_str_digits()`` digits): refused as it is read, not later as an internal error."""
    for text in (f"a: 1\nb: {digits}\n", f"a: 1\nb: !!int {digits}\n"):
        with pytest.raises(yaml.YAMLError) as refused:
            yaml.load(text, Loader=StrictLoader)
        assert "integer too long" in str(refused.value) and "line 2" in str(refused.value)
    assert yaml.load("a: 0xff\nb: 1:30\nc: 0b101\n", Loader=StrictLoader) == {"a": 255, "b": 90, "c": 5}
