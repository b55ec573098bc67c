"""Findings: what the migration did, or could not do, with each legacy value.

A finding names the source path in the object (JSON-pointer-like, e.g.
``spec.containers[0].resources.limits[nvidia.com/gpu]``), the legacy value, the outcome and
a reason a person can act on. Outcomes and their severity (design decision 1):

    translated, ignored        0
    left-for-webhook           1
    partial                    2
    kept-legacy, unsupported   3

``--fail-on LEVEL`` fails when any finding's severity is at or above LEVEL's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["translated", "ignored", "left-for-webhook", "partial", "kept-legacy", "unsupported"]

SEVERITY: dict[str, int] = {
    "translated": 0,
    "ignored": 0,
    "left-for-webhook": 1,
    "partial": 2,
    "kept-legacy": 3,
    "unsupported": 3,
}


@dataclass(frozen=True)
class Finding:
    """One observation about one legacy value: ``path`` in the object, the ``legacy`` value
    as text, the ``outcome`` and the ``reason``."""

    path: str
    legacy: str
    outcome: Outcome
    reason: str

    @property
    def severity(self) -> int:
        """0 (fine) .. 3 (the value stays on the device plugin or cannot move)."""
        return SEVERITY[self.outcome]

    def as_dict(self) -> dict[str, str]:
        """JSON form: ``{"path", "legacy", "outcome", "reason"}``."""
        return {"path": self.path, "legacy": self.legacy, "outcome": self.outcome, "reason": self.reason}


def worst(findings: Iterable[Finding]) -> int:
    """The highest severity among findings (0 when there are none)."""
    return max((f.severity for f in findings), default=0)


def blocks_conversion(findings: Iterable[Finding]) -> bool:
    """True when a finding forbids rewriting the pod (kept-legacy or unsupported)."""
    return worst(findings) >= 3
