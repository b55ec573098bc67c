"""``dra-migrate report`` as text: ``table``, ``wide`` and ``markdown`` (for a pull request).

    render_text(report, fmt) -> str       fmt: table | wide | markdown

Every renderer shows every workload (kind/namespace/name; ``(not yet named)`` for
generateName pods), its outcome and path; ``wide`` adds how, the legacy requests, the
template names, alignment, risks and the reason; ``markdown`` adds totals, node pools, and
per workload every finding and risk. Findings are phrased with ``dra-migrate`` flag names
(:mod:`migrate.remedies`).
"""

from __future__ import annotations

from collections.abc import Sequence

from dra_bridge.migrate.remedies import phrased
from dra_bridge.translate.report import Report, WorkloadReport

TABLE = ("WORKLOAD", "PODS", "OUTCOME", "PATH", "RISKS")
WIDE = ("WORKLOAD", "PODS", "OUTCOME", "PATH", "VIA", "LEGACY", "TEMPLATES", "ALIGNMENT", "POOLS", "RISKS", "REASON")


def workload_name(w: WorkloadReport) -> str:
    """``Kind/namespace/name``, with ``(not yet named)`` for a generateName pod."""
    u = w.unit
    name = f"{u.name}(not yet named)" if u.not_yet_named else u.name
    return f"{u.kind}/{u.namespace + '/' if u.namespace else ''}{name}"


def _legacy(w: WorkloadReport) -> str:
    return ",".join(f"{c}:{r}={n}" for c, r, n, _ in w.legacy) or "-"


def _risks(w: WorkloadReport) -> str:
    return ",".join(dict.fromkeys(r.code for r in w.risks)) or "-"


def _row(w: WorkloadReport, wide: bool) -> tuple[str, ...]:
    base = (workload_name(w), str(len(w.unit.pods)), w.outcome, w.path.path)
    if not wide:
        return (*base, _risks(w))
    templates = ",".join(str(t["metadata"]["name"]) for t in w.templates) or "-"
    return (*base, w.path.via or "-", _legacy(w), templates, w.alignment["status"], ",".join(w.pools), _risks(w),
            w.path.reason)


def _aligned(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "".join("  ".join([*(c.ljust(n) for c, n in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip() + "\n"
                   for r in rows)


def _md(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def _markdown(report: Report) -> str:
    t = report.totals()
    lines = ["## DRA migration report", "",
             f"{t['workloads']} workloads ({t['pods']} pods): " + ", ".join(f"{v} {k}" for k, v in t["paths"].items())
             + f"; {t['risks']} risks; alignment lost in {t['alignmentLost']}.", "",
             "| workload | pods | outcome | path | via | risks | reason |", "|---|---|---|---|---|---|---|"]
    lines += [f"| `{_md(workload_name(w))}` | {len(w.unit.pods)} | {w.outcome} | {w.path.path} | {w.path.via or '-'} "
              f"| {_md(_risks(w))} | {_md(w.path.reason)} |" for w in report.workloads]
    if report.pools:
        lines += ["", "### Node pools", "", "| pool | nodes | legacy devices | DRA devices | migrates | partial "
                  "| blocked | mixed allocators |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {_md(p.name)} | {len(p.nodes)} | {sum(p.legacy_devices.values())} | {p.dra_devices} "
                  f"| {p.categories['migrates']} | {p.categories['partial']} | {p.categories['blocked']} "
                  f"| {', '.join(p.mixed_allocators) or '-'} |" for p in report.pools]
    details = [w for w in report.workloads if w.findings or w.risks]
    if details:
        lines += ["", "### Findings and risks", ""]
    for w in details:
        lines.append(f"<details><summary><code>{workload_name(w)}</code>: {w.outcome}, {w.path.path}</summary>\n")
        lines += [f"- **{f.outcome}** `{_md(f.path)}` (`{_md(f.legacy)}`): {_md(f.reason)}"
                  for f in phrased(w.findings)]
        lines += [f"- **risk {r.code}** `{_md(r.path)}`: {_md(r.detail)}" for r in w.risks]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def render_text(report: Report, fmt: str) -> str:
    """The report as ``table``, ``wide`` or ``markdown`` text (see the module docstring)."""
    if fmt == "markdown":
        return _markdown(report)
    wide = fmt == "wide"
    rows = [WIDE if wide else TABLE, *(_row(w, wide) for w in report.workloads)]
    t = report.totals()
    summary = (f"\n{t['workloads']} workloads, {t['pods']} pods: "
               + ", ".join(f"{v} {k}" for k, v in t["paths"].items()) + f"; {t['risks']} risks\n")
    return _aligned(rows) + summary
