"""The grammar of ``webhook.policy`` in the chart's values.schema.json, generated from the options
model (``translate.plan.options.policy_keys()``) and the policy parser's keys
(``translate.policy``: ``TOP_LEVEL_KEYS``, ``RULE_KEYS``, ``MATCH_KEYS``), so the two cannot drift
(docs/design.md D36).

- :func:`definitions` -> the schema's ``policy*`` definitions, as the model says they must be.
- ``python -m tests.chart.policy_schema`` rewrites them in values.schema.json (after a new policy
  key); tests/chart/test_chart_policy.py fails while the file differs from what this generates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dra_bridge.translate.plan.options import policy_keys
from dra_bridge.translate.policy import MATCH_KEYS, POLICY_API_VERSION, RULE_KEYS, TOP_LEVEL_KEYS

SCHEMA = Path(__file__).resolve().parents[2] / "charts" / "dra-bridge" / "values.schema.json"
_STRINGS = {"type": "array", "items": {"type": "string"}}
#: How the parser reads each match key (translate/policy.py ``_match``).
_MATCH_VALUES: dict[str, dict[str, Any]] = {
    "namespaces": _STRINGS,
    "podLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    "ownerKinds": _STRINGS,
    "schedulerNames": _STRINGS,
}


def _setting(key: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"description": key["doc"], "type": key["type"], "default": key["default"]}
    if "enum" in key:
        out["enum"] = key["enum"]
    if "items" in key:
        item: dict[str, Any] = {"type": key["items"]}
        item.update({k: key[k] for k in ("pattern", "maxLength") if k in key})
        out["items"] = item
    return out


def definitions() -> dict[str, Any]:
    """The ``policy``, ``policySettings``, ``policyRule`` and ``policyMatch`` definitions."""
    settings = {k["key"]: _setting(k) for k in policy_keys()}
    assert set(_MATCH_VALUES) == set(MATCH_KEYS), "a match key the generator does not know"
    assert TOP_LEVEL_KEYS == ("apiVersion", "defaults", "rules") and RULE_KEYS == ("name", "match")
    return {
        "policy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "apiVersion": {"type": "string", "enum": [POLICY_API_VERSION]},
                "defaults": {"$ref": "#/definitions/policySettings"},
                "rules": {"type": "array", "items": {"$ref": "#/definitions/policyRule"}},
            },
        },
        "policySettings": {"type": "object", "additionalProperties": False, "properties": settings},
        "policyRule": {
            "type": "object",
            "additionalProperties": False,
            "required": ["match"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "match": {"$ref": "#/definitions/policyMatch"},
                **settings,
            },
        },
        "policyMatch": {
            "type": "object",
            "additionalProperties": False,
            "properties": {k: _MATCH_VALUES[k] for k in MATCH_KEYS},
        },
    }


def dumps(value: Any, indent: int = 0, width: int = 160) -> str:
    """JSON as the schema file writes it: an object or list on one line when it fits."""
    flat = json.dumps(value)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + dumps(v, indent + 2, width) for v in value) + "\n" + " " * indent + "]"


def main() -> int:
    schema = json.loads(SCHEMA.read_text())
    schema["definitions"].update(definitions())
    SCHEMA.write_text(dumps(schema) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
