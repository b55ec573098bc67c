"""Does a ResourceSlice (or a device of one) target a node? Node selectors as Kubernetes reads them.

Pure (no I/O). Rules (k8s.io/dynamic-resource-allocation ``structured`` ``NodeMatches``, with
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` for the selector):

- ``nodeName`` matches the node of that name; ``allNodes: true`` matches every node;
- a ``nodeSelector`` matches when any of its terms matches; a term matches when all its
  ``matchExpressions`` (on labels) and ``matchFields`` (only ``metadata.name``) hold; a term
  with no requirements matches nothing;
- operators: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt`` (integers; a
  label that is not an integer does not match).

:class:`Node` is the node's name and labels. An unknown operator raises
:class:`translate.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.errors import InputError

__all__ = ["Node", "node_matches", "selector_matches"]


@dataclass(frozen=True)
class Node:
    """A node's ``metadata.name`` and ``metadata.labels``."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    operator = req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(value or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > want if operator == "Gt" else have < want
    raise InputError(
        f"node selector requirement {req.get('key')!r}: unknown operator {operator!r} "
        "(In, NotIn, Exists, DoesNotExist, Gt, Lt)"
    )


def selector_matches(selector: Mapping[str, Any], node: Node) -> bool:
    """Whether a core/v1 NodeSelector (``{"nodeSelectorTerms": [...]}``) selects ``node``."""
    for term in selector.get("nodeSelectorTerms") or []:
        expressions = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not expressions and not fields:
            continue
        if all(_requirement(r, node.labels.get(str(r.get("key")))) for r in expressions) and all(
            _requirement(r, node.name if r.get("key") == "metadata.name" else None) for r in fields
        ):
            return True
    return False


def node_matches(node: Node, node_name: str | None, all_nodes: bool, selector: Mapping[str, Any] | None) -> bool:
    """``NodeMatches``: the fields of a slice (or of a device with per-device node selection)."""
    if node_name:
        return node_name == node.name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False
