"""``dra-migrate report`` as text: ``table``, ``wide`` and ``markdown`` (for a pull request).

    render_text(report, fmt) -> str       fmt: table | wide | markdown

Every renderer shows every workload listed (kind/namespace/name; ``(not yet named)`` for
generateName pods), where it came from (``FILE#N``, or ``cluster``), the pods it creates
(PODS, ``?`` when not known; the headline's total leaves those out), its outcome, path and
FIT (``placed/pods`` of the capacity check, docs/capacity.md), then the headline by path,
the capacity summary (per node pool before and after; every workload with a pod that does
not fit or places differently, with the verdicts' codes or nodes) and the report's warnings
(``warning: ...``, e.g. an object given twice), and the ResourceQuotas on legacy device
resources or our classes, one line each (docs/design.md D27); ``wide`` adds LEGACY-FIT, how, the legacy
requests, the template names, alignment, risks and the reason, and each such pod's verdicts
with their reasons; ``markdown`` adds totals, node pools (workloads per path), capacity, and
per workload every finding and risk. Findings are phrased with ``dra-migrate`` flag names
(:mod:`migrate.remedies`).

Caller-controlled text (names, namespaces, sources, resource names, reasons quoting values)
is written through :func:`kube.logs.escape` here, at the edge: every table cell and every
line, so no newline breaks a row and no control character reaches the terminal; markdown
cells also escape ``|``, and ``<``, ``&`` inside the HTML of its ``<details>`` summaries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape as html_escape
from typing import Any

from dra_bridge.kube.logs import escape
from dra_bridge.migrate.remedies import phrased
from dra_bridge.translate.report import PATHS, Report, WorkloadReport

TABLE = ("WORKLOAD", "SOURCE", "PODS", "OUTCOME", "PATH", "FIT", "RISKS")
WIDE = (
    "WORKLOAD",
    "SOURCE",
    "PODS",
    "OUTCOME",
    "PATH",
    "VIA",
    "LEGACY",
    "TEMPLATES",
    "ALIGNMENT",
    "POOLS",
    "FIT",
    "LEGACY-FIT",
    "RISKS",
    "REASON",
)


def workload_name(w: WorkloadReport) -> str:
    """``Kind/namespace/name``, with ``(not yet named)`` for a generateName pod."""
    u = w.unit
    name = f"{u.name}(not yet named)" if u.not_yet_named else u.name
    return f"{u.kind}/{u.namespace + '/' if u.namespace else ''}{name}"


def pods(w: WorkloadReport) -> str:
    """The PODS cell: the pods the workload creates (:func:`translate.report.pod_total.created_pods`),
    ``?`` when not known."""
    return "?" if w.pods_created is None else str(w.pods_created)


def _legacy(w: WorkloadReport) -> str:
    return ",".join(f"{c}:{r}={n}" for c, r, n, _ in w.legacy) or "-"


def _risks(w: WorkloadReport) -> str:
    return ",".join(dict.fromkeys(r.code for r in w.risks)) or "-"


def fit(w: WorkloadReport, legacy: bool = False) -> str:
    """``placed/pods`` of the capacity check (DRA, or the legacy model); ``-`` when not placed
    (no capacity check, a DaemonSet, nothing converted)."""
    cap = w.capacity
    if cap is None or (not legacy and cap["fits"] is None):
        return "-"
    placed = cap["legacyPodsFit"] if legacy else cap["podsFit"]
    pods = len(cap["pods"]) if legacy else sum(p["fits"] is not None for p in cap["pods"])
    return f"{placed}/{pods}"


def _row(w: WorkloadReport, wide: bool) -> tuple[str, ...]:
    base = (workload_name(w), w.unit.source, pods(w), w.outcome, w.path.path)
    if not wide:
        return (*base, fit(w), _risks(w))
    templates = ",".join(str(t["metadata"]["name"]) for t in w.templates) or "-"
    return (
        *base,
        w.path.via or "-",
        _legacy(w),
        templates,
        w.alignment["status"],
        ",".join(w.pools),
        fit(w),
        fit(w, legacy=True),
        _risks(w),
        w.path.reason,
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(counts.items()))


def pool_line(name: str, cap: dict[str, Any]) -> str:
    """One node pool's capacity before and after, DRA and legacy."""
    legacy = "; ".join(
        f"legacy {r} {cap['legacyUsedBefore'].get(r, 0)} -> {cap['legacyUsedAfter'].get(r, 0)} of {n}"
        for r, n in sorted(cap["legacyAllocatable"].items())
    )
    return f"{name}: DRA devices {cap['usedBefore']} -> {cap['usedAfter']} of {cap['devices']} used" + (
        f"; {legacy}" if legacy else ""
    )


def capacity_lines(report: Report, per_pod: bool = False) -> list[str]:
    """The capacity summary: totals, per node pool, then the workloads with a pod that does not
    fit or places differently (``per_pod``: every such pod with both verdicts and reasons)."""
    cap = report.capacity
    if cap is None:
        return []
    if cap.get("skipped"):
        return [f"capacity: skipped: {cap['skipped']}"]
    t = cap["totals"]
    converted = t["pods"] - t["notConverted"]
    sources = _counts(dict(Counter(cap["deviceSources"].values()))) or "no nodes in the input"
    lines = [
        f"capacity: {t['fit']} of {converted} converted pods fit (legacy {t['legacyFit']} of {t['pods']}); "
        f"{t['differ']} place differently; devices from {sources}"
    ]
    lines += [f"  {pool_line(p.name, p.capacity)}" for p in report.pools if p.capacity is not None]
    for w in report.workloads:
        pods = [p for p in (w.capacity or {}).get("pods", []) if p["fits"] is False or p["differs"]]
        if per_pod:
            lines += [f"  {w.unit.namespace}/{pod['name']}: {_verdict(pod)}" for pod in pods]
        elif pods:
            codes = ",".join(dict.fromkeys(f"on {p['node']}" if p["fits"] else p["code"] for p in pods))
            legacy = ",".join(
                dict.fromkeys(f"on {p['legacyNode']}" if p["legacyFits"] else p["legacyCode"] for p in pods)
            )
            lines.append(f"  {workload_name(w)}: {fit(w)} fit ({codes}), legacy {fit(w, legacy=True)} ({legacy})")
    lines += [f"  not placed: {n}" for n in cap["notPlaced"]] + [f"  warning: {n}" for n in cap["warnings"]]
    return lines


def cell(pod: dict[str, Any], legacy: bool = False) -> str:
    """A pod's verdict under DRA or the legacy model: ``fits on NODE`` or ``CODE: REASON``."""
    fits, node, code, reason = (
        ("legacyFits", "legacyNode", "legacyCode", "legacyReason") if legacy else ("fits", "node", "code", "reason")
    )
    if pod[fits]:
        return f"fits on {pod[node]}"
    return f"{pod[code]}: {pod[reason]}"


def _verdict(pod: dict[str, Any]) -> str:
    return f"DRA {cell(pod)}; legacy {cell(pod, legacy=True)}"


def _aligned(raw: Sequence[tuple[str, ...]]) -> str:
    rows = [tuple(escape(c) for c in r) for r in raw]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join([*(c.ljust(n) for c, n in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip() + "\n" for r in rows
    )


def _md(cell: str) -> str:
    return escape(cell).replace("|", "\\|")


def pod_total(t: dict[str, Any]) -> str:
    """``N pods``, and how many workloads' pods are not known (``?``) when some are not."""
    n = t["podsUnknown"]
    return f"{t['pods']} pods" + (f" (and {n} workloads whose pods are not known)" if n else "")


def _not_listed(t: dict[str, Any]) -> str:
    n = t["notListed"]
    return f"; {n} other workloads without a GPU request not listed (--all-workloads lists them)" if n else ""


def _markdown(report: Report) -> str:
    t = report.totals()
    lines = [
        "## DRA migration report",
        "",
        f"{t['workloads']} workloads ({pod_total(t)}): "
        + ", ".join(f"{v} {k}" for k, v in t["paths"].items())
        + f"; {t['risks']} risks; alignment lost in {t['alignmentLost']}{_not_listed(t)}.",
        *map(escape, _notes(report)),
        "",
        *(f"> warning: {_md(w)}" for w in report.inventory.warnings),
        *([""] if report.inventory.warnings else []),
        "| workload | source | pods | outcome | path | via | risks | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{_md(workload_name(w))}` | `{_md(w.unit.source)}` | {pods(w)} | {w.outcome} | {w.path.path} "
        f"| {w.path.via or '-'} | {_md(_risks(w))} | {_md(w.path.reason)} |"
        for w in report.workloads
    ]
    if report.pools:
        lines += [
            "",
            "### Node pools",
            "",
            f"| pool | nodes | legacy devices | DRA devices | {' | '.join(PATHS)} | mixed allocators |",
            "|---" * (5 + len(PATHS)) + "|",
        ]
        lines += [
            f"| {_md(p.name)} | {len(p.nodes)} | {sum(p.legacy_devices.values())} | {p.dra_devices} "
            f"| {' | '.join(str(p.paths[k]) for k in PATHS)} | {_md(', '.join(p.mixed_allocators) or '-')} |"
            for p in report.pools
        ]
    if report.capacity is not None:
        lines += ["", "### Capacity", "", escape(capacity_lines(report)[0]), ""]
        pools = [(p.name, p.capacity) for p in report.pools if p.capacity]
        if pools:
            lines += ["| pool | DRA devices used before -> after | legacy before -> after |", "|---|---|---|"]
            lines += [
                f"| {_md(name)} | {cap['usedBefore']} -> {cap['usedAfter']} of {cap['devices']} "
                f"| {_md(_legacy_use(cap))} |"
                for name, cap in pools
            ]
        rows = [
            (w, pod)
            for w in report.workloads
            for pod in (w.capacity or {}).get("pods", [])
            if pod["fits"] is False or pod["differs"]
        ]
        if rows:
            lines += ["", "| pod | DRA | legacy |", "|---|---|---|"]
            lines += [
                f"| `{_md(w.unit.namespace + '/' + pod['name'])}` | {_md(cell(pod))} | {_md(cell(pod, legacy=True))} |"
                for w, pod in rows
            ]
    if report.quotas:
        lines += [
            "",
            "### ResourceQuotas on GPUs",
            "",
            *(f"- {_md(line.removeprefix('quota: '))}" for line in quota_lines(report)),
        ]
    details = [w for w in report.workloads if w.findings or w.risks]
    if details:
        lines += ["", "### Findings and risks", ""]
    for w in details:
        name = html_escape(escape(workload_name(w)))
        lines.append(f"<details><summary><code>{name}</code>: {w.outcome}, {w.path.path}</summary>\n")
        lines += [
            f"- **{f.outcome}** `{_md(f.path)}` (`{_md(f.legacy)}`): {_md(f.reason)}" for f in phrased(w.findings)
        ]
        lines += [f"- **risk {r.code}** `{_md(r.path)}`: {_md(r.detail)}" for r in w.risks]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _legacy_use(cap: dict[str, Any]) -> str:
    return (
        ", ".join(
            f"{r} {cap['legacyUsedBefore'].get(r, 0)} -> {cap['legacyUsedAfter'].get(r, 0)} of {n}"
            for r, n in sorted(cap["legacyAllocatable"].items())
        )
        or "-"
    )


def _notes(report: Report) -> list[str]:
    """Lines about what the report judged by: the DRA gates and where they came from, and what it
    could not know (enrolment without Namespace objects)."""
    features = report.settings.cluster.features
    gates = ", ".join(f"{g} {'on' if on else 'off'}" for g, on in features.as_json()["gates"].items())
    where = "the API server's kubernetes_feature_enabled" if features.source == "metrics" else features.note
    note = report.enrolment_inputs()["note"]
    return [f"DRA features: {gates} ({where})", *([note] if note else [])]


def quota_lines(report: Report) -> list[str]:
    """One line per ResourceQuota on a legacy device resource or our classes (docs/design.md D27)."""
    lines = []
    for q in report.quotas:
        where = f"ResourceQuota/{q.namespace + '/' if q.namespace else ''}{q.name}"
        keys = ", ".join([*q.legacy, *q.classes])
        missing = f"; lacks {', '.join(q.missing)}" if q.missing else ""
        seen = f"{q.workloads} workloads in the input" if q.workloads else "no workload of its namespace in the input"
        lines.append(f"quota: {where} limits {keys}{missing} ({seen})")
    return lines


def render_text(report: Report, fmt: str) -> str:
    """The report as ``table``, ``wide`` or ``markdown`` text (see the module docstring)."""
    if fmt == "markdown":
        return _markdown(report)
    wide = fmt == "wide"
    rows = [WIDE if wide else TABLE, *(_row(w, wide) for w in report.workloads)]
    t = report.totals()
    headline = (
        f"{t['workloads']} workloads, {pod_total(t)}: "
        + ", ".join(f"{v} {k}" for k, v in t["paths"].items())
        + f"; {t['risks']} risks{_not_listed(t)}"
    )
    lines = [
        headline,
        *_notes(report),
        *quota_lines(report),
        *capacity_lines(report, per_pod=wide),
        *(f"warning: {w}" for w in report.inventory.warnings),
    ]
    return _aligned(rows) + "\n" + "".join(f"{escape(line)}\n" for line in lines)
