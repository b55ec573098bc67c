"""The PrometheusRule's alerts checked by Prometheus's own promtool (issue 28): ``promtool check
rules`` over the rule groups of the rendered object, and ``promtool test rules`` with, for each
alert, series that fire it and series that do not (docs/monitoring.md is each alert's runbook).

The unit tests run on the rules without their annotations (promtool compares annotations
exactly, and they quote values); the annotations' templates are checked by ``check rules`` and
:func:`test_annotations_name_only_labels_the_expression_keeps`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.monitoring import rule_groups, run_promtool
from tests.chart.render import render

NS, AGENT, HOOK = "gpu-system", "gpu-system/dra-bridge-agent", "gpu-system/dra-bridge-webhook"
COMMON = {"team": "gpu-platform"}  # ci/monitoring-values.yaml's alertLabels
ALERTS = {
    "DraBridgeDeviceOfferedAgain",
    "DraBridgeCheckpointUnreadable",
    "DraBridgeInterlockStuck",
    "DraWebhookConfigInvalid",
    "DraWebhookErrors",
    "DraWebhookSlow",
    "DraWebhookKeptLegacy",
}


def agent(name: str, **labels: str) -> str:
    """An agent series as the PodMonitor scrapes it (with the node)."""
    return _series(name, {"namespace": NS, "job": AGENT, "pod": "dra-bridge-agent-x1", "node": "gpu-1", **labels})


def hook(name: str, **labels: str) -> str:
    """A webhook series as the ServiceMonitor scrapes it."""
    return _series(name, {"namespace": NS, "job": HOOK, "pod": "dra-bridge-webhook-a", **labels})


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def alert(severity: str, **labels: str) -> dict[str, Any]:
    return {"exp_labels": {**labels, "severity": severity, **COMMON}}


AGENT_LABELS = {"namespace": NS, "job": AGENT, "pod": "dra-bridge-agent-x1", "node": "gpu-1"}
HOOK_LABELS = {"namespace": NS, "job": HOOK, "pod": "dra-bridge-webhook-a"}


def latency_buckets(mode: str, per_minute: dict[float, int]) -> list[dict[str, str]]:
    """dra_webhook_request_seconds buckets growing by ``per_minute`` requests per bucket bound."""
    bounds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0]
    out, total = [], 0
    for le in [*bounds, float("inf")]:
        total += per_minute.get(le, 0)
        text = "+Inf" if le == float("inf") else repr(le)
        out.append(
            {"series": hook("dra_webhook_request_seconds_bucket", mode=mode, le=text), "values": f"0+{total}x20"}
        )
    return out


# (name, input series, eval time, alert, expected alerts): one that fires and one that does not per alert.
CASES: list[tuple[str, list[dict[str, str]], str, str, list[dict[str, Any]]]] = [
    (
        "an alarm fires at once",
        [{"series": agent("dra_bridge_alarms_total"), "values": "0 0 0 1 1 1"}],
        "5m",
        "DraBridgeDeviceOfferedAgain",
        [alert("critical", **AGENT_LABELS)],
    ),
    (
        "a new agent whose first sample counts an alarm",
        [{"series": agent("dra_bridge_alarms_total"), "values": "_ _ _ 1 1 1"}],
        "5m",
        "DraBridgeDeviceOfferedAgain",
        [alert("critical", **AGENT_LABELS)],
    ),
    (
        "no alarm, or one older than 10 minutes",
        [
            {"series": agent("dra_bridge_alarms_total"), "values": "0x20"},
            {"series": agent("dra_bridge_alarms_total", pod="old"), "values": "1x20"},
        ],
        "15m",
        "DraBridgeDeviceOfferedAgain",
        [],
    ),
    (
        "a checkpoint unreadable for 2 minutes",
        [{"series": agent("dra_bridge_checkpoint_readable"), "values": "1 1 0 0 0 0"}],
        "5m",
        "DraBridgeCheckpointUnreadable",
        [alert("critical", **AGENT_LABELS)],
    ),
    (
        "a checkpoint unreadable for a minute only",
        [{"series": agent("dra_bridge_checkpoint_readable"), "values": "1 1 1 1 0 1 1"}],
        "6m",
        "DraBridgeCheckpointUnreadable",
        [],
    ),
    (
        "an interlock refusing past settle + 5 minutes (420s)",
        [{"series": agent("dra_bridge_interlock_refused", interlock="settle"), "values": "1x10"}],
        "8m",
        "DraBridgeInterlockStuck",
        [alert("warning", interlock="settle", **AGENT_LABELS)],
    ),
    (
        "an interlock refusing within settle + 5 minutes",
        [{"series": agent("dra_bridge_interlock_refused", interlock="settle"), "values": "1x10"}],
        "6m",
        "DraBridgeInterlockStuck",
        [],
    ),
    (
        "a configuration file refused for 5 minutes",
        [{"series": hook("dra_webhook_config_valid", file="policy"), "values": "0x10"}],
        "6m",
        "DraWebhookConfigInvalid",
        [alert("warning", file="policy", **HOOK_LABELS)],
    ),
    (
        "a configuration file refused for 4 minutes",
        [{"series": hook("dra_webhook_config_valid", file="policy"), "values": "0x10"}],
        "4m",
        "DraWebhookConfigInvalid",
        [],
    ),
    (
        "internal errors on 5% of admissions",
        [
            {"series": hook("dra_webhook_requests_total", mode="enforce", outcome="patched"), "values": "0+100x20"},
            {"series": hook("dra_webhook_errors_total", kind="internal"), "values": "0+5x20"},
        ],
        "12m",
        "DraWebhookErrors",
        [alert("warning", namespace=NS, job=HOOK, kind="internal")],
    ),
    (
        "bad requests and template errors under the ratio",
        [
            {"series": hook("dra_webhook_requests_total", mode="enforce", outcome="patched"), "values": "0+1000x20"},
            {"series": hook("dra_webhook_errors_total", kind="bad-request"), "values": "0+500x20"},
            {"series": hook("dra_webhook_errors_total", kind="template"), "values": "0+5x20"},
        ],
        "12m",
        "DraWebhookErrors",
        [],
    ),
    (
        "enforce admissions near the 5s timeout",
        latency_buckets("enforce", {5.0: 10}),
        "12m",
        "DraWebhookSlow",
        [alert("warning", namespace=NS, job=HOOK, mode="enforce")],
    ),
    (
        "admissions in milliseconds",
        latency_buckets("enforce", {0.01: 100}) + latency_buckets("audit", {0.001: 100}),
        "12m",
        "DraWebhookSlow",
        [],
    ),
    (
        "a pod kept legacy by quota on the enforce path",
        [{"series": hook("dra_webhook_kept_legacy_total", mode="enforce", reason="quota"), "values": "0 0 1 1 1"}],
        "4m",
        "DraWebhookKeptLegacy",
        [alert("warning", namespace=NS, job=HOOK, reason="quota")],
    ),
    (
        "the first pod of a reason (a new series)",
        [{"series": hook("dra_webhook_kept_legacy_total", mode="enforce", reason="daemonset"), "values": "_ _ 1 1"}],
        "3m",
        "DraWebhookKeptLegacy",
        [alert("warning", namespace=NS, job=HOOK, reason="daemonset")],
    ),
    (
        "audit's kept-legacy pods, and enforce's older than 15 minutes",
        [
            {"series": hook("dra_webhook_kept_legacy_total", mode="audit", reason="quota"), "values": "0+1x30"},
            {"series": hook("dra_webhook_kept_legacy_total", mode="enforce", reason="quota"), "values": "0 1x30"},
        ],
        "25m",
        "DraWebhookKeptLegacy",
        [],
    ),
]


def _rules_without_annotations() -> dict[str, Any]:
    groups = rule_groups(render("monitoring"))
    for group in groups["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    return groups


def test_promtool_checks_the_rendered_rule_groups(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(rule_groups(render("monitoring"))))
    proc = run_promtool("check", "rules", str(rules))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 7 rules found" in proc.stdout, proc.stdout
    assert proc.stderr == "", proc.stderr  # no warning either (e.g. two rules of one name and labels)


def test_promtool_check_refuses_a_broken_expression(tmp_path: Path) -> None:
    # the check can fail: the same groups with one expression cut short
    groups = rule_groups(render("monitoring"))
    groups["groups"][0]["rules"][0]["expr"] = "increase(dra_bridge_alarms_total[10m] > 0"
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(groups))
    proc = run_promtool("check", "rules", str(rules))
    assert proc.returncode != 0 and "DraBridgeDeviceOfferedAgain" in proc.stdout + proc.stderr


def test_every_alert_has_a_case_that_fires_and_one_that_does_not() -> None:
    names = {rule["alert"] for g in _rules_without_annotations()["groups"] for rule in g["rules"]}
    assert names == ALERTS
    assert {c[3] for c in CASES if c[4]} == ALERTS
    assert {c[3] for c in CASES if not c[4]} == ALERTS


def _unit_tests(tmp_path: Path, cases: list[tuple[str, list[dict[str, str]], str, str, list[dict[str, Any]]]]) -> Path:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(_rules_without_annotations()))
    tests = [
        {
            "name": name,
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [{"eval_time": at, "alertname": alertname, "exp_alerts": expected}],
        }
        for name, series, at, alertname, expected in cases
    ]
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    return path


def test_promtool_unit_tests_of_every_alert(tmp_path: Path) -> None:
    proc = run_promtool("test", "rules", str(_unit_tests(tmp_path, CASES)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_a_wrong_expectation_fails_promtool(tmp_path: Path) -> None:
    # the unit tests can fail: the firing alarm case expecting no alert
    name, series, at, alertname, _ = CASES[0]
    proc = run_promtool("test", "rules", str(_unit_tests(tmp_path, [(name, series, at, alertname, [])])))
    assert proc.returncode != 0 and "DraBridgeDeviceOfferedAgain" in proc.stdout + proc.stderr


LABEL_REF = re.compile(r"\$labels\.(\w+)")
BY = re.compile(r"\bsum by \(([^)]*)\)")


@pytest.mark.parametrize("values", ["monitoring"])
def test_annotations_name_only_labels_the_expression_keeps(values: str) -> None:
    # an aggregated expression keeps its `by` labels only: a summary naming another is empty
    for group in rule_groups(render(values))["groups"]:
        for rule in group["rules"]:
            used = {m for text in rule["annotations"].values() for m in LABEL_REF.findall(text)}
            by = BY.search(rule["expr"])  # the left operand's labels are the result's
            if by:
                kept = {label.strip() for label in by.group(1).split(",")}
                assert used <= kept, (rule["alert"], used - kept)
            assert rule["annotations"]["runbook_url"].endswith("#" + rule["alert"].lower())
