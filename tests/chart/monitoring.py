"""The chart's Prometheus Operator objects for the monitoring tests: promtool and the rules.

- :func:`promtool` -> Path: Prometheus's promtool (``DRA_BRIDGE_PROMTOOL``, else what
  ``hack/promtool.sh env`` prints). Missing: the test fails in CI (``CI=true``) and skips
  locally, saying how to fetch it.
- :func:`rule_groups` -> {"groups": [...]}: the rule groups of the PrometheusRule a render holds,
  as a Prometheus rules file (the operator writes ``spec`` as one, unchanged).
- :func:`monitoring_objects` -> {kind: object}: the ServiceMonitor, PodMonitor and PrometheusRule.
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.chart.render import ROOT, Obj, by_kind

KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule")


def _missing(msg: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def promtool() -> Path:
    """promtool, or a failure (CI) or skip (locally) saying how to fetch it."""
    override = os.environ.get("DRA_BRIDGE_PROMTOOL")
    if override:
        path = Path(override)
    else:
        proc = subprocess.run(
            [str(ROOT / "hack" / "promtool.sh"), "env"], capture_output=True, text=True, check=False, timeout=30
        )
        path = Path(proc.stdout.strip())
    if not _executable(path):
        _missing(f"promtool not found ({path}): run hack/promtool.sh build")
    return path


def _executable(path: Path) -> bool:
    return path.name != "" and os.access(path, os.X_OK)


def monitoring_objects(objs: list[Obj]) -> dict[str, Obj]:
    """The monitoring objects of a render, by kind (each at most once)."""
    out: dict[str, Obj] = {}
    for kind in KINDS:
        found = by_kind(objs, kind)
        assert len(found) <= 1, kind
        if found:
            out[kind] = found[0]
    return out


def rule_groups(objs: list[Obj]) -> dict[str, Any]:
    """The PrometheusRule's spec: a Prometheus rules file (a copy: renders are cached)."""
    spec = monitoring_objects(objs)["PrometheusRule"]["spec"]
    assert set(spec) == {"groups"}
    return copy.deepcopy(dict(spec))


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """promtool with ``args``, its output captured (never raises on a non-zero exit)."""
    return subprocess.run([str(promtool()), *args], capture_output=True, text=True, check=False, timeout=60)
