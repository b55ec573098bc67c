"""translate/fast_yaml.py gives PyYAML's own results: the same values (types, aliases), the same
text, the same errors (message and marks), on documents chosen to reach every fallback."""

from __future__ import annotations

import datetime
import io
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from yaml.constructor import BaseConstructor
from yaml.resolver import BaseResolver

from dra_bridge.translate.fast_yaml import (
    MEMO_LENGTH,
    MEMO_SIZE,
    FastConstructor,
    FastDumper,
    ScalarTags,
    resolve_method,
)
from dra_bridge.translate.strict_yaml import StrictLoader


class StockStrictLoader(StrictLoader):
    """StrictLoader as it was: PyYAML's own construct_document and resolve."""

    construct_document = BaseConstructor.construct_document
    resolve = BaseResolver.resolve


class FastSafeLoader(FastConstructor, yaml.CSafeLoader):
    """The fast constructor over stock CSafeLoader (timestamps, !!binary bytes, merge keys)."""


FastSafeLoader.resolve = resolve_method(FastSafeLoader)  # type: ignore[method-assign]

LONG = "x" * 20_000
DOCUMENTS = {
    "plain": "a: 1\nb: [1, 2, {c: d}]\n",
    "aliases": "shared: &s [1, 2]\nagain: *s\nmap: &m {k: v}\nmap2: *m\nempty: &e []\nempty2: *e\n",
    "aliased-map-in-lists": "- &a {x: [1, 2]}\n- *a\n- [*a, *a]\n",
    "recursive-map": "&r {self: *r}\n",
    "recursive-list": "&l [*l, 1]\n",
    "merge-key": "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n",
    "merge-key-list": "child:\n  <<: [{a: 1}, {b: 2}]\n  c: 3\n",
    "value-key": "= : equals\n",
    "duplicate-key": "a: 1\nb: 2\na: 3\n",
    "duplicate-keys-nested-and-top": "outer:\n  inner: {k: 1, k: 2}\nfirst: {z: 1, z: 2}\n",
    "duplicate-int-keys": "{1: a, 0x1: b}\n",
    "duplicate-int-bool-keys": "{1: a, true: b}\n",
    "duplicate-float-int-keys": "{1.0: a, 1: b}\n",
    "list-key": "[1, 2]: unhashable\n",
    "map-key": "{a: 1}: unhashable\n",
    "set-key": "? !!set {a, b}\n: x\n",
    "ints": "ints: [0, -1, +1, 0x1f, 0o17, 017, 0b101, 1_000, 190:20:30, 12345678901234567890]\n",
    "floats": "floats: [1.5, -0.0, .5, 1e3, 1.0e+3, .inf, -.Inf, .NaN, 6.8523015e+5, 190:20:30.15]\n",
    "bools-nulls": "bools: [yes, No, TRUE, false, on, OFF, y, n]\nnulls: [~, null, Null, NULL, '', \"\"]\nnone:\n",
    "quoted": "quoted: ['1', \"2\", 'true', 'null', '~', '1e3', '0x1f', '2001-12-14', ' lead', 'trail ', '']\n",
    "timestamps": "ts: [2001-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10, !!timestamp 2002-12-14]\n",
    "binary": "bin: !!binary |\n  R0lGODlhDAAMAIQAAP//9/X\n  17unp5WZmZgAAAOfn515eXv\n",
    "explicit-tags": "tags: [!!str 12, !!int '7', !!float '3', !!bool 'yes', !!null '', !!str [a], !!map {a: 1}]\n",
    "bad-int": "bad_int: !!int abc\n",
    "bad-float": "bad_float: !!float abc\n",
    "bad-bool": "bad_bool: !!bool maybe\n",
    "bad-map": "bad_map: !!map scalar\n",
    "bad-seq": "bad_seq: !!seq {a: 1}\n",
    "unknown-tag": "unknown: !foo bar\n",
    "python-tag": "local: !!python/name:os.system x\n",
    "omap-pairs-set": "omap: !!omap [a: 1, b: 2]\npairs: !!pairs [a: 1, a: 2]\nset: !!set {a, b}\n",
    "long-unicode-blocks": f"long: {LONG}\nunicode: 'h\u00e9llo \u2603 \U0001f600'\nmulti: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "empties": "empty_map: {}\nempty_list: []\nnested: [[], [[]], [{}], [[1, [2, [3]]]]]\n",
    "complex-keys": "? complex\n: key\n? [a]\n: not hashable\n",
    "huge-int": "a: " + "9" * 5000 + "\n",
    "deep-lists": "nested: " + "[" * 200 + "]" * 200 + "\n",
    "deep-maps": "deep: " + "{a: " * 60 + "1" + "}" * 60 + "\n",
    "scalar-document": "scalar document\n",
    "int-document": "42\n",
    "several-documents": "--- a\n--- [1]\n--- {b: c}\n---\n",
    "empty-stream": "",
}


def shape(value: Any) -> Any:
    """``value``'s types and values, and which lists and mappings are the same object."""
    seen: dict[int, int] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, dict | list):
            if id(node) in seen:
                return ("alias", seen[id(node)])
            seen[id(node)] = len(seen)
            if isinstance(node, dict):
                return ("map", [(walk(k), walk(v)) for k, v in node.items()])
            return ("seq", [walk(item) for item in node])
        if isinstance(node, float) and node != node:
            return ("float", "nan")
        return (type(node).__name__, repr(node))

    return walk(value)


def outcome(text: str, loader: type[Any]) -> Any:
    """Every document's shape, or the error raised (type, message with its marks)."""
    try:
        return [shape(doc) for doc in yaml.load_all(text, Loader=loader)]
    except Exception as exc:  # the exception itself is compared
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("text", list(DOCUMENTS.values()), ids=list(DOCUMENTS))
def test_the_strict_loader_loads_as_it_did_value_and_error_alike(text: str) -> None:
    assert outcome(text, StrictLoader) == outcome(text, StockStrictLoader)


@pytest.mark.parametrize("text", list(DOCUMENTS.values()), ids=list(DOCUMENTS))
def test_the_fast_constructor_over_the_stock_safe_loader_loads_as_it_does(text: str) -> None:
    assert outcome(text, FastSafeLoader) == outcome(text, yaml.CSafeLoader)


def test_the_documents_reach_each_path() -> None:
    """The tricky documents above are what they claim: duplicate keys, merge keys, aliases and
    scalar errors fail or load as the stock loader makes them."""
    assert outcome(DOCUMENTS["duplicate-key"], StrictLoader)[2].startswith("while constructing a mapping")
    assert "found duplicate key 'a'" in outcome(DOCUMENTS["duplicate-key"], StrictLoader)[2]
    assert "line 3, column 1" in outcome(DOCUMENTS["duplicate-key"], StrictLoader)[2]
    nested_and_top = outcome(DOCUMENTS["duplicate-keys-nested-and-top"], StrictLoader)[2]
    assert "found duplicate key 'z'" in nested_and_top  # the stock order: the top level's first
    assert yaml.load(DOCUMENTS["merge-key"], Loader=FastSafeLoader)["child"] == {"x": 1, "y": 3}
    assert "a merge key (<<) is not read here" in outcome(DOCUMENTS["merge-key"], StrictLoader)[2]
    shared = yaml.load(DOCUMENTS["aliases"], Loader=StrictLoader)
    assert shared["shared"] is shared["again"] and shared["map"] is shared["map2"]
    recursive = yaml.load(DOCUMENTS["recursive-map"], Loader=StrictLoader)
    assert recursive["self"] is recursive
    assert yaml.load(DOCUMENTS["timestamps"], Loader=StrictLoader)["ts"][0] == "2001-12-14"
    assert isinstance(yaml.load(DOCUMENTS["timestamps"], Loader=FastSafeLoader)["ts"][0], datetime.date)


_SCALAR_TEXTS = [
        "", " ", "~", "null", "Null", "NULL", "true", "y", "n", "yes", "Off", "0", "-1", "+1", "0x1f",
        "0o17", "017", "1_000", "1e3", "1.5", ".5", ".inf", "-.inf", ".nan", "190:20:30", "2001-12-14",
        "2001-12-14 21:59:43.10", "<<", "=", "!", "&", "*", "abc", "nvidia.com/gpu", "name", "on", "é",
]  # fmt: skip


@pytest.mark.parametrize("value", _SCALAR_TEXTS, ids=[repr(v) for v in _SCALAR_TEXTS])
def test_scalar_tags_are_the_resolvers_tags(value: str) -> None:
    for cls in (StrictLoader, yaml.CSafeLoader, yaml.CSafeDumper):
        stock: Any = cls.__new__(cls)
        BaseResolver.__init__(stock)
        resolve: Any = BaseResolver.resolve
        expected = resolve(stock, yaml.ScalarNode, value, (True, False))
        assert ScalarTags(cls.yaml_implicit_resolvers)(value) == expected, (cls, value)
        tags = ScalarTags(cls.yaml_implicit_resolvers)
        assert [tags(value), tags(value)] == [expected, expected]  # the memo answers the same


def test_the_memo_stays_bounded() -> None:
    tags = ScalarTags(yaml.CSafeDumper.yaml_implicit_resolvers)
    for i in range(3 * MEMO_SIZE):
        assert tags(f"n{i}") == "tag:yaml.org,2002:str"
        assert tags(str(i)) == "tag:yaml.org,2002:int"
    assert len(tags.memo) <= MEMO_SIZE
    assert tags("1" * (MEMO_LENGTH + 1)) == "tag:yaml.org,2002:int" and "1" * (MEMO_LENGTH + 1) not in tags.memo


def test_a_class_with_path_resolvers_keeps_the_stock_resolve() -> None:
    class Pathed(yaml.CSafeLoader):
        pass

    Pathed.add_path_resolver("!x", ["a"], dict)
    with pytest.raises(ValueError, match="path resolvers"):
        resolve_method(Pathed)


def _shared_values() -> list[Any]:
    shared_list: list[Any] = [1, "two"]
    shared_map: dict[str, Any] = {"k": shared_list}
    empty: list[Any] = []
    recursive: dict[str, Any] = {"name": "r"}
    recursive["self"] = recursive
    looped: list[Any] = ["a"]
    looped.append(looped)
    return [
        {"a": shared_list, "b": shared_list, "c": shared_map, "d": [shared_map, shared_map], "e": empty, "f": empty},
        recursive,
        looped,
        [shared_list, (1, 2), (), ("x",), {"t": (shared_list, shared_list)}],
        {"s": {1, 2}, "date": datetime.date(2001, 12, 14), "when": datetime.datetime(2001, 12, 14, 21, 59, 43)},
        {"same_date": [datetime.date(2020, 1, 1)] * 2, "bytes": b"\x00\x01binary", "n": [None, None]},
    ]


PLAIN: list[Any] = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {}},
    {
        "strings": ["", " ", " lead", "trail ", "~", "null", "true", "yes", "no", "on", "1", "1.0", "1e3", "0x1f"],
        "more": ["2001-12-14", "12:30", "<<", "=", "- dash", "a: b", "#c", "quote'", 'dq"', "multi\nline", "tab\t"],
        "unicode": ["h\u00e9llo", "\u2603", "\U0001f600", "\x85", "\u2028", "\ufeff", "\x07bell"],
        "long": [LONG, "word " * 5000],
        "numbers": [0, -1, 10**30, 1.5, -0.0, 1e17, float("inf"), float("-inf"), float("nan"), True, False, None],
        "keys": {1: "int", 2.5: "float", False: "bool", None: "null", "": "empty", "1": "str one"},
        "nested": [[], [[]], [{}], {}, [[1, [2, [3, []]]]], {"a": {"b": {"c": {}}}}],
    },
]


@pytest.mark.parametrize("values", [PLAIN, _shared_values()], ids=["plain", "shared"])
@pytest.mark.parametrize(
    "options",
    [
        {"sort_keys": False, "default_flow_style": False, "width": 100000},  # dra-migrate's writer
        {},  # yaml.dump_all's defaults: sorted keys
        {"sort_keys": False, "default_flow_style": None},
        {"sort_keys": False, "default_style": '"'},
        {"sort_keys": False, "default_flow_style": True, "explicit_start": True, "allow_unicode": True},
    ],
    ids=["writer", "defaults", "best-flow-style", "double-quoted", "flow-unicode"],
)
def test_the_fast_dumper_writes_the_stock_dumpers_bytes(values: list[Any], options: dict[str, Any]) -> None:
    expected = yaml.dump_all(values, Dumper=yaml.CSafeDumper, **options)
    assert yaml.dump_all(values, Dumper=FastDumper, **options) == expected


def test_the_shared_values_give_anchors_and_aliases() -> None:
    text = yaml.dump_all(_shared_values(), Dumper=FastDumper, sort_keys=False, default_flow_style=False)
    assert "&id001" in text and "*id001" in text
    one = {"x": "shared string", "y": 7}
    assert "&" not in yaml.dump({"a": one["x"], "b": one["x"], "c": 7, "d": 7}, Dumper=FastDumper)


def test_the_fast_dumper_streams_one_document_at_a_time_as_the_stock_one() -> None:
    outputs = []
    for dumper in (yaml.CSafeDumper, FastDumper):
        out = io.StringIO()
        emitter = dumper(out, sort_keys=False, default_flow_style=False, width=100000)
        emitter.open()
        for value in [*PLAIN, *_shared_values()]:
            emitter.represent(value)
        emitter.close()
        emitter.dispose()
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]


class _ClaimsToBeAStr:
    """An object whose ``__class__`` says str: the representers dispatch on its type."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


@pytest.mark.parametrize(
    "value",
    [object(), {"a": object()}, [1, {"b": [object()]}], {"a": {1, object}}, {"k": _ClaimsToBeAStr()}],
    ids=["object", "in-a-map", "deep-in-lists", "in-a-set", "claims-to-be-a-str"],
)
def test_a_value_neither_can_write_fails_alike(value: Any) -> None:
    errors = []
    for dumper in (yaml.CSafeDumper, FastDumper):
        with pytest.raises(yaml.YAMLError) as info:
            yaml.dump(value, Dumper=dumper, sort_keys=False)
        errors.append((type(info.value), info.value.args[0]))
    assert errors[0] == errors[1]


_SCALARS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["~", "null", "yes", "No", "0x1f", "1e3", ".inf", "2001-12-14", "<<", "=", "", " a"]),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4),
    max_leaves=25,
)


@pytest.mark.property
@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_any_plain_value_round_trips_as_with_stock_pyyaml(value: Any) -> None:
    options: dict[str, Any] = {"sort_keys": False, "default_flow_style": False, "width": 100000}
    text = yaml.dump(value, Dumper=yaml.CSafeDumper, **options)
    assert yaml.dump(value, Dumper=FastDumper, **options) == text
    assert outcome(text, StrictLoader) == outcome(text, StockStrictLoader)
    assert outcome(text, FastSafeLoader) == outcome(text, yaml.CSafeLoader)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_loaders_count_is_the_walks_count(name: str) -> None:
    """A document the fast constructor built reaching no list or mapping twice carries the count
    the value-budget walk would make (the reader spends the budget by it, without the walk); any
    other carries None (the walk counts it)."""
    from dra_bridge.translate.strict_yaml import value_count

    loader = StrictLoader(DOCUMENTS[name])
    try:
        while True:
            try:
                if not loader.check_data():
                    break
                doc = loader.get_data()
            except Exception:  # an error document (some are PyYAML's own bare errors): nothing counted
                return
            count, shared = value_count(doc, 10**9)
            if loader.plain_values is not None:
                assert not shared and loader.plain_values == count
    finally:
        loader.dispose()


def test_no_count_for_aliases_or_the_stock_constructor() -> None:
    loader = StrictLoader("a: &x [1, 2]\nb: *x\n---\nplain: [1, {c: 2}]\n---\n!!set {a, b}\n")
    try:
        counts = []
        while loader.check_data():
            loader.get_data()
            counts.append(loader.plain_values)
    finally:
        loader.dispose()
    assert counts == [None, 5, None]


def test_path_tracking_is_a_no_op_without_path_resolvers() -> None:
    """The loader and dumper's descend/ascend calls cost no Python frame, and give what PyYAML's
    give without path resolvers (nothing)."""
    for cls in (StrictLoader, FastDumper):
        assert not cls.yaml_path_resolvers
        assert cls.ascend_resolver() == ()
        assert cls.descend_resolver(None, 0) is False
