"""The chart's monitoring (issue 28): a ServiceMonitor for the webhook (its /metrics on a plain
HTTP port named ``metrics``), a PodMonitor for every agent pod (the health port, named
``metrics``), and a PrometheusRule whose thresholds come from the chart's own settings (the
settle period, the registration's timeoutSeconds); all off by default. promtool checks the
rules (test_monitoring_rules.py); the operator's CRDs check the objects (tests/e2e)."""

from __future__ import annotations

import re

import pytest

from tests.chart.monitoring import KINDS, monitoring_objects, rule_groups
from tests.chart.render import CHART, NAMESPACE, ROOT, HelmFailed, Obj, by_kind, helm, helm_binaries, render

DOC = ROOT / "docs" / "monitoring.md"
OVERRIDES = ("--set", "agent.settlePeriod=600", "--set", "webhook.enforce.timeoutSeconds=10")


def _container(objs: list[Obj], kind: str) -> Obj:
    (workload,) = by_kind(objs, kind)
    return dict(workload["spec"]["template"]["spec"]["containers"][0])


def _rules(objs: list[Obj]) -> dict[str, Obj]:
    return {r["alert"]: r for g in rule_groups(objs)["groups"] for r in g["rules"]}


@pytest.mark.parametrize("values", ["defaults", None], ids=["ci-defaults", "chart-defaults"])
def test_no_monitoring_object_and_no_metrics_port_by_default(values: str | None) -> None:
    objs = render(values)
    assert not monitoring_objects(objs)
    assert not any(a.startswith("--metrics-port") for a in _container(objs, "Deployment")["args"])
    (service,) = by_kind(objs, "Service")
    assert [p["name"] for p in service["spec"]["ports"]] == ["https"]


def test_the_three_objects_go_to_the_monitoring_namespace_with_the_selector_labels() -> None:
    objs = monitoring_objects(render("monitoring"))
    assert set(objs) == set(KINDS)
    for obj in objs.values():
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        assert obj["metadata"]["namespace"] == "monitoring"
        assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    for kind in ("ServiceMonitor", "PodMonitor"):
        assert objs[kind]["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}


def test_the_service_monitor_scrapes_the_webhook_s_plain_http_metrics_port() -> None:
    objs = render("monitoring")
    container = _container(objs, "Deployment")
    assert "--metrics-port=8082" in container["args"]
    assert {"name": "metrics", "containerPort": 8082, "protocol": "TCP"} in container["ports"]
    (service,) = by_kind(objs, "Service")
    assert {"name": "metrics", "port": 8082, "targetPort": "metrics", "protocol": "TCP"} in service["spec"]["ports"]
    monitor = monitoring_objects(objs)["ServiceMonitor"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    # the NetworkPolicy's monitoring namespace reaches the port /metrics moved to
    (policy,) = by_kind(objs, "NetworkPolicy")
    assert policy["spec"]["ingress"][1]["ports"] == [{"port": 8082, "protocol": "TCP"}]


def _selects(selector: Obj, labels: dict[str, str]) -> bool:
    if not selector["matchLabels"].items() <= labels.items():
        return False
    for expr in selector.get("matchExpressions", []):
        assert expr["operator"] == "NotIn"
        if labels.get(expr["key"]) in expr["values"]:
            return False
    return True


def test_the_pod_monitor_selects_every_agent_pod_and_no_webhook_pod() -> None:
    objs = render("monitoring")
    monitor = monitoring_objects(objs)["PodMonitor"]
    selector = monitor["spec"]["selector"]
    pods = {
        o["kind"]: o["spec"]["template"]["metadata"]["labels"] for o in objs if o["kind"] in ("DaemonSet", "Deployment")
    }
    assert _selects(selector, pods["DaemonSet"]) and not _selects(selector, pods["Deployment"])
    # another agent DaemonSet of the release (any component but the webhook) is selected too
    assert _selects(selector, {**pods["DaemonSet"], "app.kubernetes.io/component": "agent-nvml"})
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
        "action": "replace",
    } in endpoint["relabelings"]
    container = _container(objs, "DaemonSet")
    assert [p["name"] for p in container["ports"]] == ["metrics"]
    assert container["readinessProbe"]["httpGet"]["port"] == "metrics"


def test_the_interlock_alert_waits_the_settle_period_plus_the_kubelet_s_5_minutes() -> None:
    assert _rules(render("monitoring"))["DraBridgeInterlockStuck"]["for"] == "420s"  # 120 + 300
    assert _rules(render("monitoring", *OVERRIDES))["DraBridgeInterlockStuck"]["for"] == "900s"


def test_the_latency_alert_follows_each_path_s_timeout_seconds() -> None:
    def limits(objs: list[Obj]) -> dict[str, float]:
        expr = _rules(objs)["DraWebhookSlow"]["expr"]
        return {m: float(v) for m, v in re.findall(r'mode="(\w+)"\}\[5m\]\)\)\) > ([0-9.]+)', expr)}

    assert limits(render("monitoring")) == {"audit": 4.0, "enforce": 4.0}
    assert limits(render("monitoring", *OVERRIDES)) == {"audit": 4.0, "enforce": 8.0}


def test_a_disabled_component_has_no_alerts_and_no_monitor() -> None:
    objs = render("monitoring", "--set", "webhook.audit.enabled=false", "--set", "agent.enabled=false")
    assert set(monitoring_objects(objs)) == {"ServiceMonitor", "PrometheusRule"}
    rules = _rules(objs)
    assert not any(name.startswith("DraBridge") for name in rules)
    assert 'mode="audit"' not in rules["DraWebhookSlow"]["expr"]


def test_every_alert_s_runbook_is_a_section_of_docs_monitoring_md() -> None:
    anchors = {_anchor(line) for line in DOC.read_text().splitlines() if line.startswith("#")}
    for name, rule in _rules(render("monitoring")).items():
        url = rule["annotations"]["runbook_url"]
        assert url == f"https://dra-bridge.io/docs/monitoring.md#{name.lower()}"
        assert name.lower() in anchors, name
        assert rule["labels"]["severity"] in ("critical", "warning") and rule["labels"]["team"] == "gpu-platform"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_a_monitoring_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(HelmFailed, match="interval"):
        render("monitoring", "--set", "monitoring.podMonitor.interval=30")


@pytest.mark.parametrize("major", ["4", "3"])
def test_helm_lint_strict_with_every_monitoring_object(major: str) -> None:
    values = CHART / "ci" / "monitoring-values.yaml"
    out = helm(helm_binaries((major,))[major], "lint", "--strict", str(CHART), "--values", str(values))
    assert "0 chart(s) failed" in out and "[WARNING]" not in out


def test_a_metrics_port_equal_to_the_webhook_port_is_refused_at_render() -> None:
    # the webhook refuses --port=N --metrics-port=N at start: a crash loop, not a render
    with pytest.raises(HelmFailed, match=r"monitoring.serviceMonitor.port \(8443\) equals webhook.port"):
        render("monitoring", "--set", "monitoring.serviceMonitor.port=8443")


def test_an_alert_label_that_is_not_a_prometheus_label_name_is_refused() -> None:
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render("monitoring", "--set", "monitoring.prometheusRule.alertLabels.team-a=gpu")
    rules = _rules(render("monitoring", "--set", "monitoring.prometheusRule.alertLabels.team_a=gpu"))
    assert all(r["labels"]["team_a"] == "gpu" for r in rules.values())
