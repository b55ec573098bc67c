"""Findings as a plain-text table (one row per finding, with file and object); every cell
escaped (:func:`kube.logs.escape`: names, file names and quoted values are the caller's).
:class:`FindingsSpool` builds the same table from rows given one at a time, kept in a
temporary file rather than in memory (``convert`` streams)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TextIO

from dra_bridge.kube.logs import escape
from dra_bridge.translate.findings import SEVERITY, Finding

HEADERS = ("FILE", "OBJECT", "OUTCOME", "PATH", "LEGACY", "REASON")
_TAILS = 4096  # findings whose cells a spool keeps escaped


def _cells(src: str, obj: str, f: Finding) -> tuple[str, ...]:
    return tuple(escape(c) for c in (src, obj, f.outcome, f.path, f.legacy, f.reason))


def _table(cells: Iterable[tuple[str, ...]], widths: Sequence[int]) -> str:
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


def findings_table(rows: Sequence[tuple[str, str, Finding]]) -> str:
    """Rows of (file, object, finding) as an aligned table; the REASON column is not padded."""
    cells = [HEADERS] + [_cells(src, obj, f) for src, obj, f in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADERS) - 1)]
    return _table(cells, widths)


class FindingsSpool:
    """:func:`findings_table` of rows added one at a time (a context manager); ``worst``: the
    highest severity added (-1 when none). A finding's own cells are escaped once for the rows
    that repeat it (the findings of many objects alike)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed in __exit__)
        self.widths = [len(h) for h in HEADERS[:-1]]
        self.count, self.worst = 0, -1
        self._tails: dict[Finding, tuple[str, tuple[int, ...]]] = {}

    def __enter__(self) -> FindingsSpool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._file.close()

    def _tail(self, finding: Finding) -> tuple[str, tuple[int, ...]]:
        """``finding``'s cells as a row ends (tab-separated: an escaped cell has no tab, no
        line break) and their widths."""
        found = self._tails.get(finding)
        if found is None:
            if len(self._tails) >= _TAILS:
                self._tails.clear()
            cells = [escape(c) for c in (finding.outcome, finding.path, finding.legacy, finding.reason)]
            found = self._tails[finding] = ("\t".join(cells), tuple(len(c) for c in cells[:-1]))
        return found

    def add(self, src: str, obj: str, finding: Finding) -> None:
        head = (escape(src), escape(obj))
        tail, widths = self._tail(finding)
        self.widths = [max(w, n) for w, n in zip(self.widths, (*map(len, head), *widths), strict=True)]
        self._file.write(f"{head[0]}\t{head[1]}\t{tail}\n")
        self.count += 1
        self.worst = max(self.worst, SEVERITY[finding.outcome])

    def write(self, out: TextIO) -> None:
        """Write the table (header included) to ``out``, a row at a time; nothing when no row was added."""
        if not self.count:
            return
        self._file.seek(0)
        out.write(_table([HEADERS], self.widths))
        for line in self._file:
            out.write(_table([tuple(line[:-1].split("\t"))], self.widths))
