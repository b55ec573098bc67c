"""The chart README's values table, generated from values.yaml's comments and defaults.

Every value is a row: its dotted key (``values.schema.json`` decides where a key stops being a
section: an object schema with ``properties`` is a section, anything else a value), its default
(JSON) and the comment block written directly above it, which must exist (every value says why).
``python -m tests.chart.values_table`` prints the table; tests/chart/test_chart_docs.py compares
it with the README's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "dra-bridge"
KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z][A-Za-z0-9]*):(?: |$)")


class Uncommented(ValueError):
    """A value of values.yaml without a comment directly above it (names the key)."""


def _schema_at(schema: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """The schema of ``path``; a container's ``resources`` (requests, limits) is one value."""
    if path and path[-1] == "resources" and len(path) == 2:
        return {"type": "object"}
    node = schema
    for key in path:
        node = node.get("properties", {}).get(key, {})
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _section(schema: dict[str, Any], path: list[str], default: Any) -> bool:
    """A key whose schema lists properties and whose default fills some: its keys are the values."""
    return "properties" in _schema_at(schema, path) and isinstance(default, dict) and bool(default)


def rows(values_text: str, schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, default as JSON, description) for every value, in file order; Uncommented if one lacks its comment."""
    values = yaml.safe_load(values_text)
    out: list[tuple[str, str, str]] = []
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    sections: dict[tuple[str, ...], bool] = {}
    for line in values_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        m = KEY.match(line)
        if not m:
            comment = []
            continue
        indent = len(m.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = [k for _, k in stack]
        if parent and not sections.get(tuple(parent), False):
            stack.append((indent, m.group("key")))
            comment = []
            continue  # inside a value (a free-form map)
        path = [*parent, m.group("key")]
        default: Any = values
        for key in path:
            default = default[key]
        stack.append((indent, m.group("key")))
        sections[tuple(path)] = _section(schema, path, default)
        if sections[tuple(path)]:
            comment = []
            continue
        if not comment:
            raise Uncommented(f"values.yaml: {'.'.join(path)}: no comment above it saying why")
        out.append((".".join(path), json.dumps(default, separators=(", ", ": ")), " ".join(comment)))
        comment = []
    return out


def table(values_text: str | None = None) -> str:
    """The Markdown table of :func:`rows` (chart's values.yaml by default)."""
    text = (CHART / "values.yaml").read_text() if values_text is None else values_text
    schema = json.loads((CHART / "values.schema.json").read_text())
    lines = ["| key | default | why |", "|---|---|---|"]
    lines += [f"| `{k}` | `{d}` | {w.replace('|', '&#124;')} |" for k, d, w in rows(text, schema)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
