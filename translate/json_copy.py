"""Copies of JSON-like values (what YAML/JSON decoding gives: dicts, lists, scalars).

``clone`` copies the containers and shares the immutable scalars. It is several times
faster than ``copy.deepcopy`` on pods (no memo table, no reduce protocol), which matters on
the webhook's admission path; other types (e.g. bytes from ``!!binary``) are shared as is.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


#: Values that are shared as they are, told apart without a call (most of a pod's leaves).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def clone(value: T) -> T:
    """A copy of ``value`` in which every dict and list is new."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else clone(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [v if type(v) in _SCALARS else clone(v) for v in value]  # type: ignore[attr-defined,return-value]
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [clone(v) for v in value]  # type: ignore[return-value]
    return value


def clone_mapping(value: Any) -> dict[str, Any]:
    """A new dict copied from any mapping (the object's containers are cloned)."""
    return {k: v if type(v) in _SCALARS else clone(v) for k, v in dict(value).items()}
