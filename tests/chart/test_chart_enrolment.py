"""translate/enrolment.py agrees with the namespaceSelectors the chart renders: for every ``ci/``
values scenario (and audit.allNamespaces), each sample namespace is sent to exactly the webhook
entries the rule names (docs/design.md D25)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from dra_bridge.translate.enrolment import EnrolmentSettings, enrolment
from dra_bridge.translate.label_selector import LabelSelector
from dra_bridge.translate.names import NAMESPACE_NAME_LABEL
from dra_bridge.webhook.enrolment_gate import gate
from dra_bridge.webhook.settings import Settings
from tests.chart.render import CHART, NAMESPACE, SCENARIOS, Obj, Scenario, by_kind, render

#: The ci/ values files, and the tests' own allNamespaces variation.
ENROLMENT_SCENARIOS = [
    s
    for s in SCENARIOS
    if (not s.extra and s.values is not None and s.kube_version is None) or any("allNamespaces" in a for a in s.extra)
]
MODE, OPT_OUT = "dra-bridge.io/webhook", "dra-bridge.io/webhook-opt-out"
TENANT, TIER = "example.com/gpu-tenant", "example.com/tier"
#: (name, labels) samples: each mode value, none, a wrong value, the opt-out, the always-excluded.
SAMPLES: list[tuple[str, dict[str, str]]] = [
    ("team-a", {}),
    ("team-a", {MODE: "audit"}),
    ("team-a", {MODE: "enforce"}),
    ("team-a", {MODE: "Enforce"}),
    ("team-a", {MODE: "enforce", OPT_OUT: ""}),
    ("team-a", {MODE: "audit", OPT_OUT: "true"}),
    ("team-a", {OPT_OUT: "false"}),
    ("kube-system", {MODE: "enforce"}),
    ("kube-system", {}),
    (NAMESPACE, {MODE: "enforce"}),
    (NAMESPACE, {}),
    ("default", {MODE: "audit"}),
    # ci/production-values.yaml's extra namespaceSelector terms
    ("team-b", {MODE: "enforce", TENANT: "true"}),
    ("team-b", {MODE: "audit", TENANT: "true", TIER: "prod"}),
    ("team-b", {MODE: "enforce", TENANT: "true", TIER: "sandbox"}),
    ("team-b", {MODE: "enforce", TENANT: "false"}),
]
#: (pod labels) samples for the objectSelector.
POD_SAMPLES: list[dict[str, str]] = [{}, {"app": "x"}, {"example.com/no-dra": ""}, {"example.com/no-dra": "yes"}]


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {op} not modelled")


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels and every matchExpressions requirement."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_requirement(e, labels) for e in selector.get("matchExpressions") or [])


def _deep_merge(into: dict[str, Any], over: Mapping[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _deep_merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)


def values_of(scenario: Scenario) -> dict[str, Any]:
    """The chart's values for a scenario: values.yaml, the ci file, then each --set."""
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    if scenario.values_file is not None:
        _deep_merge(values, yaml.safe_load(scenario.values_file.read_text()) or {})
    for arg in scenario.extra:
        if arg == "--set":
            continue
        path, raw = arg.split("=", 1)
        *parents, leaf = path.split(".")
        node = values
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(raw)
    return values


def settings_of(values: Mapping[str, Any]) -> EnrolmentSettings:
    w = values["webhook"]
    return EnrolmentSettings(
        mode_label=w["namespaceLabel"],
        opt_out_label=w["optOutLabel"],
        audit=bool(w["enabled"] and w["audit"]["enabled"]),
        enforce=bool(w["enabled"] and w["enforce"]["enabled"]),
        audit_all_namespaces=bool(w["audit"]["allNamespaces"]),
        release_namespace=NAMESPACE,
        namespace_selector=LabelSelector.from_mapping(w["namespaceSelector"]),
        object_selector=LabelSelector.from_mapping(w["objectSelector"]),
    )


def _entries(objs: list[Obj], selector: str = "namespaceSelector") -> dict[str, Mapping[str, Any]]:
    regs = by_kind(objs, "MutatingWebhookConfiguration")
    return {
        h["clientConfig"]["service"]["path"].rsplit("/", 1)[-1]: h.get(selector, {})
        for r in regs
        for h in r["webhooks"]
    }


def test_the_scenarios_cover_both_audit_modes_and_enforce_only() -> None:
    chosen = [settings_of(values_of(s)) for s in ENROLMENT_SCENARIOS]
    assert any(s.audit_all_namespaces for s in chosen) and any(not s.audit and s.enforce for s in chosen)
    assert len(ENROLMENT_SCENARIOS) >= 6


@pytest.mark.parametrize("scenario", ENROLMENT_SCENARIOS, ids=lambda s: s.id)
def test_enrolment_agrees_with_the_rendered_namespace_selectors(scenario: Scenario) -> None:
    entries = _entries(render(scenario.values, *scenario.extra))
    settings = settings_of(values_of(scenario))
    for name, labels in SAMPLES:
        full = {NAMESPACE_NAME_LABEL: name, **labels}  # the API server sets it on every Namespace
        chart = tuple(sorted(path for path, selector in entries.items() if selects(selector, full)))
        rule = enrolment(name, labels, settings)
        assert tuple(sorted(rule.paths)) == chart, (name, labels, rule.reason)
        assert rule.known


@pytest.mark.parametrize("scenario", ENROLMENT_SCENARIOS, ids=lambda s: s.id)
def test_the_webhook_is_passed_the_settings_of_its_namespace_selectors(scenario: Scenario) -> None:
    """The webhook's own enrolment gate (docs/design.md D28) judges by the same settings as the
    namespaceSelectors the chart renders: its flags come from the same values."""
    objs = render(scenario.values, *scenario.extra)
    deployments = by_kind(objs, "Deployment")
    settings = settings_of(values_of(scenario))
    if not deployments:  # webhook.enabled false: nothing to pass
        assert not (settings.audit or settings.enforce)
        return
    (container,) = deployments[0]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env["DRA_WEBHOOK_NAMESPACE"] = NAMESPACE  # the fieldRef: metadata.namespace, the release namespace
    passed = Settings.from_args(container["args"], env).enrolment
    assert passed == settings
    entries, objects = _entries(objs), _entries(objs, "objectSelector")
    for name, labels in SAMPLES:  # and so the gate lets through exactly what the selectors send
        full = {NAMESPACE_NAME_LABEL: name, **labels}
        for pod in POD_SAMPLES:
            for path in ("audit", "enforce"):
                sent = path in entries and selects(entries[path], full) and selects(objects[path], pod)
                enrolled = gate(name, path, full, passed, pod).enrolled
                assert enrolled is sent, (name, labels, pod, path)


@pytest.mark.parametrize("scenario", ENROLMENT_SCENARIOS, ids=lambda s: s.id)
def test_enrolment_agrees_with_the_rendered_object_selectors(scenario: Scenario) -> None:
    objs = render(scenario.values, *scenario.extra)
    namespaces, objects = _entries(objs), _entries(objs, "objectSelector")
    settings = settings_of(values_of(scenario))
    for name, labels in SAMPLES:
        full = {NAMESPACE_NAME_LABEL: name, **labels}
        for pod in POD_SAMPLES:
            chart = tuple(sorted(p for p, sel in namespaces.items() if selects(sel, full) and selects(objects[p], pod)))
            rule = enrolment(name, labels, settings, pod_labels=pod)
            assert tuple(sorted(rule.paths)) == chart, (name, labels, pod, rule.reason)
