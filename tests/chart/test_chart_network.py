"""Network and secrets (issue 26 item 4): an optional NetworkPolicy admits the API server's sources
to the webhook port and a monitoring namespace to the metrics port; the TLS Secret is mounted
read-only with mode 0440 and the pod's fsGroup, so the non-root webhook reads its key."""

from __future__ import annotations

import pytest

from tests.chart.render import HelmFailed, Obj, by_kind, render

API_SERVER = {"ipBlock": {"cidr": "10.0.0.0/24"}}


def _policy(objs: list[Obj]) -> Obj:
    (policy,) = by_kind(objs, "NetworkPolicy")
    return policy


def test_no_network_policy_by_default() -> None:
    assert not by_kind(render("defaults"), "NetworkPolicy")


def test_the_network_policy_admits_the_api_server_and_the_monitoring_namespace() -> None:
    policy = _policy(render("network-policy"))
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webhook"
    assert spec["policyTypes"] == ["Ingress"]
    webhook, metrics = spec["ingress"]
    assert webhook == {"from": [API_SERVER], "ports": [{"port": 8443, "protocol": "TCP"}]}
    assert metrics == {
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"port": 8443, "protocol": "TCP"}],
    }


def test_without_sources_the_webhook_port_is_open_and_only_it() -> None:
    policy = _policy(render("defaults", "--set", "webhook.networkPolicy.enabled=true"))
    assert policy["spec"]["ingress"] == [{"ports": [{"port": 8443, "protocol": "TCP"}]}]


def test_a_network_policy_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(HelmFailed, match="networkPolicy"):
        render("defaults", "--set", "webhook.networkPolicy.enabled=yes")


def test_the_tls_secret_is_read_only_with_mode_0440_and_the_pod_s_fs_group() -> None:
    (deployment,) = by_kind(render("defaults"), "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (tls,) = [v for v in spec["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["defaultMode"] == 0o440
    (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "tls"]
    assert mount["readOnly"] is True
    assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsGroup"] == 65532
    assert spec["securityContext"]["runAsNonRoot"] is True
