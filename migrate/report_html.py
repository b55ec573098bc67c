"""``dra-migrate report -o html``: one self-contained page (no network: inline CSS, pictures as
inline SVG).

    render_html(report) -> str

The page: the totals (``<dl id="totals">``, one ``<dd data-total=KEY>`` per total), one picture
per namespace and one per node pool (``<svg class="picture" data-group="namespace|pool"
data-name=NAME>``: a bar of the workloads per path, each segment ``data-path`` with its
count), the capacity before and after
per pool when the capacity check ran (``<svg class="capacity">``: four bars ``data-bar`` =
``dra-before``, ``dra-after``, ``legacy-before``, ``legacy-after``, each with ``data-used`` and
``data-total``), a table of every workload listed with its source, findings, risks and fit, the
report's warnings (``<ul id="warnings">``), and the pods that do not fit or place
differently, with both verdicts.

Every text of the report is written through :func:`escape` here: :func:`kube.logs.escape`
(a newline inside a name shows as ``\\n``, a control character as its escape), then HTML-escaped.
"""

from __future__ import annotations

from collections import Counter
from html import escape as html_escape

from dra_bridge.kube.logs import escape as text_escape
from dra_bridge.migrate.remedies import phrased
from dra_bridge.migrate.report_text import cell, fit, pods, workload_name
from dra_bridge.translate.report import PATHS, PoolReport, Report

#: A colour per path; a path without one is drawn in OTHER.
COLOURS = {"nothing-to-do": "#9e9e9e", "kep-5004": "#1565c0", "needs-conversion": "#2e7d32", "blocked": "#c62828"}
OTHER = "#6a1b9a"


def escape(text: str) -> str:
    """``text`` as HTML, each character that is not printable shown as its escape (``\\n``)."""
    return html_escape(text_escape(text))


WIDTH = 480
STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
dl#totals{display:grid;grid-template-columns:max-content max-content;gap:.2em 1em}
dt{font-weight:600}.pictures{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;border:1px solid #ddd;padding:.5em}figcaption{font-size:.9em}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:.25em .5em;vertical-align:top}
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:.9em;height:.9em;
margin-right:.3em;vertical-align:middle}"""


def _bar(group: str, name: str, counts: Counter[str]) -> str:
    total = sum(counts[c] for c in PATHS)
    parts = [
        f'<svg class="picture" data-group="{group}" data-name="{escape(name)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH}" height="44" role="img" aria-label="{escape(name)}: '
        + ", ".join(f"{counts[c]} {c}" for c in PATHS)
        + '">'
    ]
    x = 0.0
    for c in PATHS:
        if not counts[c]:
            continue
        w = WIDTH * counts[c] / total
        parts.append(
            f'<rect data-path="{c}" data-count="{counts[c]}" x="{x:.1f}" y="0" width="{w:.1f}" '
            f'height="28" fill="{COLOURS.get(c, OTHER)}"><title>{counts[c]} {c}</title></rect>'
        )
        parts.append(f'<text x="{x + 4:.1f}" y="19" font-size="13" fill="#fff">{counts[c]}</text>')
        x += w
    parts.append(f'<text x="0" y="42" font-size="11">{total} workloads</text></svg>')
    return "".join(parts)


def _capacity(pool: PoolReport) -> str:
    """Four bars: DRA devices used before and after the check, the legacy allocatable held
    before and after (each ``data-bar``, ``data-used``, ``data-total``)."""
    cap = pool.capacity
    if not cap:
        return ""
    legacy_total = sum(cap["legacyAllocatable"].values())
    bars = (
        ("dra-before", "DRA before", cap["usedBefore"], cap["devices"], "#1565c0"),
        ("dra-after", "DRA after", cap["usedAfter"], cap["devices"], "#1565c0"),
        ("legacy-before", "plugin before", sum(cap["legacyUsedBefore"].values()), legacy_total, "#6d4c41"),
        ("legacy-after", "plugin after", sum(cap["legacyUsedAfter"].values()), legacy_total, "#6d4c41"),
    )
    rows = []
    for i, (key, label, used, total, colour) in enumerate(bars):
        y = i * 22
        rows.append(
            f'<g data-bar="{key}" data-used="{used}" data-total="{total}"><title>{label}: {used} of '
            f'{total} devices used</title><rect x="110" y="{y}" width="{300 * used / max(total, 1):.1f}" '
            f'height="16" fill="{colour}"/><rect x="110" y="{y}" width="300" height="16" fill="none" '
            f'stroke="#999"/><text x="0" y="{y + 13}" font-size="12">{label}</text>'
            f'<text x="416" y="{y + 13}" font-size="12">{used}/{total}</text></g>'
        )
    return (
        f'<svg class="capacity" data-name="{escape(pool.name)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH + 40}" height="{len(bars) * 22}" role="img" aria-label="capacity of '
        f'{escape(pool.name)} before and after">{"".join(rows)}</svg>'
    )


def _figures(group: str, groups: dict[str, Counter[str]], pools: dict[str, PoolReport] | None = None) -> str:
    out = ['<div class="pictures">']
    for name, counts in sorted(groups.items()):
        extra = _capacity(pools[name]) if pools and name in pools else ""
        out.append(f"<figure>{_bar(group, name, counts)}{extra}<figcaption>{escape(name)}</figcaption></figure>")
    out.append("</div>")
    return "".join(out)


def _pod_rows(report: Report) -> str:
    rows = [
        f"<tr><td>{escape(w.unit.namespace)}/{escape(pod['name'])}</td><td>{escape(cell(pod))}</td>"
        f"<td>{escape(cell(pod, legacy=True))}</td></tr>"
        for w in report.workloads
        for pod in (w.capacity or {}).get("pods", [])
        if pod["fits"] is False or pod["differs"]
    ]
    if not rows:
        return ""
    return (
        '<h2>Pods that do not fit or place differently</h2><table id="capacity-pods"><tr><th>pod</th>'
        "<th>DRA</th><th>device plugin</th></tr>" + "".join(rows) + "</table>"
    )


def _warnings(report: Report) -> str:
    if not report.inventory.warnings:
        return ""
    items = "".join(f"<li>{escape(w)}</li>" for w in report.inventory.warnings)
    return f'<h2>Warnings</h2><ul id="warnings">{items}</ul>'


def render_html(report: Report) -> str:
    """The report as one HTML page (see the module docstring)."""
    totals = report.totals()
    flat = {
        "workloads": totals["workloads"],
        "pods": totals["pods"],
        "pods not known": totals["podsUnknown"],
        **totals["paths"],
        "risks": totals["risks"],
        "alignment lost": totals["alignmentLost"],
        "legacy devices": totals["legacyDevices"],
        "not listed": totals["notListed"],
    }
    if report.capacity is not None and report.capacity.get("skipped"):
        flat["capacity"] = f"skipped: {report.capacity['skipped']}"
    elif report.capacity is not None:
        cap = report.capacity["totals"]
        flat |= {
            "converted pods": cap["pods"] - cap["notConverted"],
            "pods that fit": cap["fit"],
            "pods that fit (plugin)": cap["legacyFit"],
            "pods placed differently": cap["differ"],
        }
    namespaces: dict[str, Counter[str]] = {}
    for w in report.workloads:
        namespaces.setdefault(w.unit.namespace or "(none)", Counter())[w.path.path] += 1
    pools = {p.name: p for p in report.pools}
    legend = "".join(f'<span><i style="background:{COLOURS.get(c, OTHER)}"></i>{c}</span>' for c in PATHS)
    rows = []
    for w in report.workloads:
        notes = [f"{f.outcome}: {f.path}: {f.reason}" for f in phrased(w.findings)]
        notes += [f"risk {r.code}: {r.path}: {r.detail}" for r in w.risks]
        rows.append(
            f'<tr data-path="{escape(w.path.path)}"><td>{escape(workload_name(w))}</td>'
            f"<td>{escape(w.unit.source)}</td><td>{pods(w)}</td>"
            f"<td>{escape(w.outcome)}</td><td>{escape(w.path.path)}</td><td>{escape(w.path.reason)}</td>"
            f"<td>{escape(w.alignment['status'])}</td><td>{fit(w)}</td><td>{fit(w, legacy=True)}</td>"
            f"<td>{'<br>'.join(escape(n) for n in notes)}</td></tr>"
        )
    return "".join(
        [
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>DRA migration report</title>',
            f"<style>{STYLE}</style></head><body><h1>DRA migration report</h1>",
            f"<p>Kubernetes {escape(report.settings.kubernetes_version or '?')}; node pools by "
            f"<code>{escape(report.settings.pool_label)}</code>.</p>",
            '<dl id="totals">',
            *(f'<dt>{escape(k)}</dt><dd data-total="{escape(k)}">{escape(str(v))}</dd>' for k, v in flat.items()),
            "</dl>",
            f'<p class="legend">{legend}</p>',
            "<h2>Per namespace</h2>",
            _figures("namespace", namespaces),
            "<h2>Per node pool</h2>",
            _figures("pool", {p.name: p.paths for p in report.pools}, pools),
            "<h2>Workloads</h2><table><tr><th>workload</th><th>source</th><th>pods</th><th>outcome</th><th>path</th><th>why</th>"
            "<th>alignment</th><th>fit (DRA)</th><th>fit (plugin)</th><th>findings and risks</th></tr>",
            *rows,
            "</table>",
            _warnings(report),
            _pod_rows(report),
            "</body></html>\n",
        ]
    )
