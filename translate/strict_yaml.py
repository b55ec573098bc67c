"""YAML text as Kubernetes tools read it (pure: text in, values out).

:class:`StrictLoader` is libyaml's safe loader (the pure-Python one where libyaml is
missing) that refuses duplicate mapping keys, as kubectl does: a silent "last one wins"
would change a pod or a policy. Timestamps stay strings (Kubernetes objects carry RFC 3339
text), also when tagged ``!!timestamp``, and a ``!!binary`` value stays its base64 text (the
JSON form of Kubernetes' byte fields): every value loaded is one JSON can write. A scalar tagged
``!!int``, ``!!float`` or ``!!bool`` that is not one is a YAML error naming its text and line (PyYAML
raises ValueError, IndexError or KeyError there, which no reader expects from a load). A merge
key (``<<``) is a YAML error naming its line: PyYAML and kubectl's parser do not agree on which
of two merged mappings wins a key they share (PyYAML 6.0.4 decides by the key's identity, so by
its length), and PyYAML expands merges while it builds the mapping, before any budget can count
them (a merge list of one alias repeated is quadratic). Used by
``dra-migrate`` for manifests and by ``dra-webhook`` for its policy and catalog files.

:func:`too_deep` finds the first value nested deeper than a limit (the configuration files use
:data:`MAX_CONFIG_DEPTH`), walking iteratively: a value as deep as the parser allows cannot
exhaust the stack.

:func:`count_values` bounds what a document expands to (an alias counts at every use, the
"billion laughs"): every reader of YAML text allows :data:`MAX_VALUES` plus a value per byte
(:func:`value_budget`), and :func:`load_bounded` loads one configuration document under it. The
count visits each list or mapping once (the loader builds an alias as the same object), so a
bomb of 9**40 values is refused in 40 steps, before any walk over its expansion.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import yaml

from dra_bridge.translate.fast_yaml import FastConstructor, install_resolver

#: Nesting allowed in a configuration file (policy, catalog): theirs is at most 6 levels deep.
MAX_CONFIG_DEPTH = 20

#: Values a YAML input may expand to beyond one per byte of its text (aliases counted at each use).
MAX_VALUES = 1_000_000

MERGE_TAG = "tag:yaml.org,2002:merge"
MERGE_REFUSED = "a merge key (<<) is not read here: write the merged keys out"

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available


class StrictLoader(FastConstructor, _BaseLoader):  # type: ignore[misc,valid-type]
    """Safe loader refusing duplicate mapping keys (ConstructorError naming the key and line);
    a merge key (``<<``) is refused, naming its line (see the module docstring).
    Plain documents are built by :class:`translate.fast_yaml.FastConstructor` (the same values);
    any other, a duplicate key included, by the methods below."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, MERGE_REFUSED, key_node.start_mark
                )
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: let the base class report it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


StrictLoader.yaml_implicit_resolvers = {
    k: [(tag, regexp) for tag, regexp in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _scalar_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _base64_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return "".join(str(loader.construct_scalar(node)).split())


def _shown(value: object) -> str:
    """A scalar's text as an error quotes it: ``repr`` of its first 40 characters."""
    text = str(value)
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def _refused(node: yaml.ScalarNode, what: str) -> yaml.constructor.ConstructorError:
    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    return yaml.constructor.ConstructorError(
        None, None, f"{_shown(node.value)} is not {what} (tag {tag})", node.start_mark
    )


#: Characters an integer's text may have: more than any value that prints within Python's limit
#: of decimal digits needs in any YAML base (binary's 14,284 included); a longer one is refused
#: before any conversion (a base-60 value of many parts costs quadratic time to build).
MAX_INTEGER_TEXT = 16_384


def _too_long(node: yaml.ScalarNode) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None, None, f"an integer too long to read ({len(str(node.value))} characters)", node.start_mark
    )


def _integer(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An integer, or a YAML error naming the line: a value tagged ``!!int`` that is not one, and
    one Python cannot print in decimal (more than ``sys.get_int_max_str_digits()`` digits: in
    decimal it refuses to read it, in another base it reads it and refuses to print it later)."""
    if len(str(node.value)) > MAX_INTEGER_TEXT:
        raise _too_long(node)
    limit = sys.get_int_max_str_digits()
    try:
        value = int(loader.construct_yaml_int(node))
    except (ValueError, IndexError) as exc:
        digits = str(node.value).replace("_", "").lstrip("+-")
        if not (digits.isdigit() and len(digits) > limit > 0):
            raise _refused(node, "an integer") from exc
        raise _too_long(node) from exc
    if limit and value.bit_length() > int(limit * math.log2(10)):  # below 2**that: at most `limit` digits
        raise _too_long(node)
    return value


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """A float, or a YAML error naming the line for a value tagged ``!!float`` that is not one."""
    try:
        return float(loader.construct_yaml_float(node))
    except (ValueError, IndexError) as exc:
        raise _refused(node, "a float") from exc


def _boolean(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    """A boolean, or a YAML error naming the line for a value tagged ``!!bool`` that is not one."""
    try:
        return bool(loader.construct_yaml_bool(node))
    except KeyError as exc:
        raise _refused(node, "a boolean") from exc


StrictLoader.add_constructor("tag:yaml.org,2002:int", _integer)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _float)
StrictLoader.add_constructor("tag:yaml.org,2002:bool", _boolean)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _scalar_text)
StrictLoader.add_constructor("tag:yaml.org,2002:binary", _base64_text)
install_resolver(StrictLoader)  # its table is final: timestamps left out above


def too_deep(value: Any, limit: int = MAX_CONFIG_DEPTH) -> str | None:
    """The key path (``rules[0].match``) of the first value nested more than ``limit`` mappings
    or lists deep in ``value``, or None when it is not."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth >= limit:
            return path or "(top level)"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            step = f"[{key}]" if isinstance(node, list) else (f".{key}" if path else str(key))
            stack.append((child, path + step, depth + 1))
    return None


def value_budget(size: int) -> int:
    """The values a YAML text of ``size`` bytes (or characters) may expand to."""
    return MAX_VALUES + size


def expansion_refused(name: str, where: str = "") -> str:
    """The message for ``name`` expanding past its :func:`value_budget` (``where``: ", at ...")."""
    return f"{name}: expands to more than {MAX_VALUES:,} values beyond its size{where} (nested YAML aliases?)"


def count_values(value: Any, limit: int) -> int | None:
    """The values in ``value`` (every mapping value and list item, and ``value`` itself; a list
    or mapping reached twice counts twice), or None once more than ``limit`` or when one holds
    itself. Each list or mapping is visited once: the cost is that of the text, not its expansion."""
    return value_count(value, limit)[0]


def value_count(value: Any, limit: int) -> tuple[int | None, bool]:
    """:func:`count_values` of ``value``, and whether a list or mapping in it is reached more than
    once (what a YAML alias gives; False when the count is None)."""
    if not isinstance(value, dict | list):
        return (1 if limit >= 1 else None), False
    # First each list and mapping once: with none reached twice, the count is the values seen
    # (and the values seen so far never exceed the count: past the limit is past it).
    seen: set[int] = set()
    pending: list[Any] = [value]
    total = 1
    containers = (dict, list)  # a tuple: isinstance is faster with one than with a union
    while pending:
        node = pending.pop()
        key = id(node)
        if key in seen:
            return _expanded_count(value, limit)
        seen.add(key)
        children = node.values() if isinstance(node, dict) else node
        total += len(children)
        if total > limit:
            return None, False
        pending += [c for c in children if isinstance(c, containers)]
    return total, False


def _expanded_count(value: Any, limit: int) -> tuple[int | None, bool]:
    """:func:`value_count` of a value that reaches a list or mapping more than once."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if closing:
            open_ids.discard(key)
            size = 1 + sum(sizes[id(c)] if isinstance(c, dict | list) else 1 for c in children)
            if size > limit:
                return None, False
            sizes[key] = size
        elif key in open_ids:
            return None, False  # a recursive alias: no end to its expansion
        elif key not in sizes:
            open_ids.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if isinstance(c, dict | list) and id(c) not in sizes)
    return sizes[id(value)], True


def load_bounded(text: str, name: str, error: type[Exception]) -> Any:
    """The one YAML document in ``text`` (:class:`StrictLoader`; yaml.YAMLError as it raises
    them); ``error`` naming ``name`` when the document expands past its :func:`value_budget`."""
    doc = yaml.load(text, Loader=StrictLoader)
    if count_values(doc, value_budget(len(text))) is None:
        raise error(expansion_refused(name))
    return doc
