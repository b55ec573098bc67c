"""A Kubernetes label selector (metav1.LabelSelector) and whether it selects a set of labels. Pure.

    LabelSelector(match_labels, match_expressions)   .selects(labels) -> bool; .empty
    LabelSelector.from_mapping(doc)                  from the chart's values (matchLabels, matchExpressions)
    LabelSelector.from_json(text)                    from a flag's JSON, its shape checked (ValueError)
    .as_mapping()                                    its YAML/JSON form again

The API server's rules: every ``matchLabels`` pair and every requirement must hold (AND); ``In``
needs the key with one of the values, ``NotIn`` holds when the key is absent or has none of them,
``Exists`` / ``DoesNotExist`` look at the key only. An empty selector selects everything. Used by
:mod:`translate.enrolment` for the chart's extra ``namespaceSelector`` and ``objectSelector`` terms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LabelSelector", "Requirement"]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
_OPERATORS: tuple[Operator, ...] = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def holds(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` meet this requirement."""
        match self.operator:
            case "In":
                return self.key in labels and labels[self.key] in self.values
            case "NotIn":
                return self.key not in labels or labels[self.key] not in self.values
            case "Exists":
                return self.key in labels
            case "DoesNotExist":
                return self.key not in labels


@dataclass(frozen=True)
class LabelSelector:
    """``matchLabels`` (sorted pairs) and ``matchExpressions``."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when it selects everything."""
        return not self.match_labels and not self.match_expressions

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether every pair and every requirement holds for ``labels``."""
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        return all(r.holds(labels) for r in self.match_expressions)

    def as_mapping(self) -> dict[str, Any]:
        """Its YAML/JSON form (``{}`` when empty)."""
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in self.match_expressions
            ]
        return out

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any] | None) -> LabelSelector:
        """A selector from its YAML form (the chart's schema has checked its shape); ValueError
        on an unknown operator."""
        if not doc:
            return cls()
        requirements = []
        for e in doc.get("matchExpressions") or ():
            op = e["operator"]
            if op not in _OPERATORS:
                raise ValueError(f"label selector: unknown operator {op!r} (known: {', '.join(_OPERATORS)})")
            requirements.append(Requirement(str(e["key"]), op, tuple(str(v) for v in e.get("values") or ())))
        pairs = tuple(sorted((str(k), str(v)) for k, v in (doc.get("matchLabels") or {}).items()))
        return cls(pairs, tuple(requirements))

    @classmethod
    def from_json(cls, text: str) -> LabelSelector:
        """A selector from its JSON form (a flag's value: the chart passes ``toJson``), every
        field checked as the API server would; ValueError saying what is wrong."""
        try:
            doc = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg})") from None
        _check_shape(doc)
        return cls.from_mapping(doc)


def _check_shape(doc: Any) -> None:
    if not isinstance(doc, dict):
        raise ValueError("not a label selector (a JSON object of matchLabels, matchExpressions)")
    unknown = sorted(set(doc) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (a label selector has matchLabels, matchExpressions)")
    pairs = doc.get("matchLabels") or {}
    if not isinstance(pairs, dict) or not all(isinstance(v, str) for v in pairs.values()):
        raise ValueError("matchLabels: an object of label keys to string values")
    expressions = doc.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError("matchExpressions: a list of {key, operator, values}")
    for e in expressions:
        if not isinstance(e, dict) or not isinstance(e.get("key"), str) or not e["key"]:
            raise ValueError("matchExpressions: each entry needs a key (a string)")
        values = e.get("values") or []
        if set(e) - {"key", "operator", "values"} or not isinstance(values, list):
            raise ValueError(f"matchExpressions {e['key']!r}: only key, operator and values (a list)")
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"matchExpressions {e['key']!r}: values must be strings")
        op = e.get("operator")
        if op not in _OPERATORS:
            raise ValueError(f"matchExpressions {e['key']!r}: unknown operator {op!r} (known: {', '.join(_OPERATORS)})")
        if (op in ("In", "NotIn")) != bool(values):
            need = "needs values" if op in ("In", "NotIn") else "takes no values"
            raise ValueError(f"matchExpressions {e['key']!r}: {op} {need}")
