"""Which parts of the ``device`` variable a CEL selector reads, found in its syntax tree.

Pure (no I/O). The allocator caches a selector's result per distinct values of what it reads
(issue 12: every device has a unique uuid, so caching on whole devices gains nothing):
``selector_reads(expression)`` returns a frozenset of reads, each one of

- ``("driver",)``, ``("allowMultipleAllocations",)``;
- ``("attributes" | "capacity", domain, id)``: ``device.attributes["<domain>"].<id>``,
  ``...["<id>"]``, ``has(...)`` of it; ``domain`` is None for ``device.attributes[device.driver]``
  (the driver's own domain; ``("driver",)`` is then read too);
- ``("attributes" | "capacity", domain, "*")``: the whole map of one domain
  (``"id" in device.attributes["<domain>"]``, ``.size()``, ...);

or :data:`WHOLE_DEVICE` when unsure: ``device`` used whole or shadowed by a macro or
``cel.bind`` variable, a computed domain or id, the whole ``attributes``/``capacity`` map.
Raises :class:`translate.errors.SelectorError` when the expression does not parse.
"""

from __future__ import annotations

import functools
from typing import Any, Final

import celpy
import lark
from celpy.celparser import CELParseError

from dra_bridge.translate.errors import SelectorError, TranslateError

__all__ = ["WHOLE_DEVICE", "Read", "selector_reads"]

Read = tuple[Any, ...]
WHOLE_DEVICE: Final[frozenset[Read]] = frozenset({("*",)})
_MAPS: Final = ("attributes", "capacity")


class _Unsure(TranslateError):
    """A selector whose reads cannot be known (caught in this module: the whole device)."""


def _flatten(tree: lark.Tree[Any]) -> tuple[Any, list[tuple[str, Any]]]:
    """A ``member`` chain as (its root, [("dot", name) | ("index", expr tree), ...])."""
    steps: list[tuple[str, Any]] = []
    node: Any = tree
    while isinstance(node, lark.Tree) and node.data == "member":
        child = node.children[0]
        if isinstance(child, lark.Tree) and child.data == "member_dot":
            steps.append(("dot", str(child.children[1])))
            node = child.children[0]
        elif isinstance(child, lark.Tree) and child.data == "member_index":
            steps.append(("index", child.children[1]))
            node = child.children[0]
        else:
            node = child
    steps.reverse()
    return node, steps


def _single(tree: Any, data: str) -> Any:
    """The only leaf under a chain of one-child trees, if it is a ``data`` tree; else None."""
    while isinstance(tree, lark.Tree) and tree.data != data and len(tree.children) == 1:
        tree = tree.children[0]
    return tree if isinstance(tree, lark.Tree) and tree.data == data else None


def _is_device(root: Any) -> bool:
    ident = _single(root, "ident")
    return ident is not None and str(ident.children[0]) == "device"


def _string(tree: Any) -> str | None:
    literal = _single(tree, "literal")
    if literal is None:
        return None
    text = str(literal.children[0])
    plain = len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and "\\" not in text
    if plain and text[:3] not in ('"""', "'''"):
        return text[1:-1]
    return None


def _is_device_driver(tree: Any) -> bool:
    member = _single(tree, "member")
    if member is None:
        return False
    root, steps = _flatten(member)
    return _is_device(root) and steps == [("dot", "driver")]


def _device_read(steps: list[tuple[str, Any]], reads: set[Read]) -> int:
    """Record what a chain rooted at ``device`` reads; returns how many steps it consumed."""
    if not steps:
        raise _Unsure
    kind, name = steps[0]
    if kind == "dot" and name in ("driver", "allowMultipleAllocations") and len(steps) == 1:
        reads.add((name,))
        return 1
    if kind != "dot" or name not in _MAPS or len(steps) < 2 or steps[1][0] != "index":
        raise _Unsure
    if _is_device_driver(steps[1][1]):
        domain: str | None = None
        reads.add(("driver",))
    else:
        domain = _string(steps[1][1])
        if domain is None:
            raise _Unsure
    if len(steps) == 2:
        reads.add((name, domain, "*"))
        return 2
    key_kind, key = steps[2]
    ident = key if key_kind == "dot" else _string(key)
    if ident is None:
        raise _Unsure
    reads.add((name, domain, ident))
    return 3


def _walk(tree: Any, reads: set[Read]) -> None:
    if not isinstance(tree, lark.Tree):
        return
    if tree.data == "member":
        root, steps = _flatten(tree)
        if _is_device(root):
            used = _device_read(steps, reads)
            for kind, value in steps[used:]:
                if kind == "index":
                    _walk(value, reads)
            return
        _walk(root, reads)
        for kind, value in steps:
            if kind == "index":
                _walk(value, reads)
        return
    if tree.data == "member_dot_arg" and len(tree.children) > 2:
        first = tree.children[2].children[0] if tree.children[2].children else None
        if first is not None and _is_device(first):
            raise _Unsure  # a macro or cel.bind variable named `device`
    if tree.data == "ident" and str(tree.children[0]) == "device":
        raise _Unsure
    for child in tree.children:
        _walk(child, reads)


@functools.lru_cache(maxsize=1024)
def selector_reads(expression: str) -> frozenset[Read]:
    """The reads of ``expression`` (see the module docstring), or WHOLE_DEVICE when unsure."""
    try:
        tree = celpy.Environment().compile(expression)
    except CELParseError as exc:
        raise SelectorError(f"CEL selector {expression!r} does not parse: {exc}") from exc
    reads: set[Read] = set()
    try:
        _walk(tree, reads)
    except _Unsure:
        return WHOLE_DEVICE
    return frozenset(reads)
