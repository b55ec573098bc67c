"""Findings as a plain-text table (one row per finding, with file and object); every cell
escaped (:func:`kube.logs.escape`: names, file names and quoted values are the caller's)."""

from __future__ import annotations

from collections.abc import Sequence

from dra_bridge.kube.logs import escape
from dra_bridge.translate.findings import Finding

HEADERS = ("FILE", "OBJECT", "OUTCOME", "PATH", "LEGACY", "REASON")


def findings_table(rows: Sequence[tuple[str, str, Finding]]) -> str:
    """Rows of (file, object, finding) as an aligned table; the REASON column is not padded."""
    cells = [HEADERS] + [
        tuple(escape(c) for c in (src, obj, f.outcome, f.path, f.legacy, f.reason)) for src, obj, f in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADERS) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip() for r in cells]
    return "\n".join(lines) + "\n"
