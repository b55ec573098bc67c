"""The values production users set, for the webhook and the agent alike (ci/production-values.yaml):
each is rendered where it belongs, the schema accepts it and refuses it when of the wrong type,
and the combinations that cannot work (a PDB with both minAvailable and maxUnavailable, the
kubelet's port 10250 on the host network) fail the render."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart.render import CHART, HelmFailed, Obj, by_kind, render

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())


def _pod(kind: str, values: str = "production") -> Obj:
    (workload,) = by_kind(render(values), kind)
    return workload


def _spec(kind: str, values: str = "production") -> Obj:
    return _pod(kind, values)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet"])
def test_scheduling_metadata_and_extras_are_rendered_for_both(kind: str) -> None:
    component = "webhook" if kind == "Deployment" else "agent"
    wanted = yaml.safe_load((CHART / "ci" / "production-values.yaml").read_text())[component]
    workload = _pod(kind)
    meta, spec = workload["spec"]["template"]["metadata"], workload["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert spec["nodeSelector"] == wanted["nodeSelector"]
    assert spec["tolerations"] == wanted["tolerations"]
    for key, rule in wanted["affinity"].items():
        assert spec["affinity"][key] == rule
    assert meta["annotations"]["example.com/owner"] == "platform" and "checksum/catalog" in meta["annotations"]
    assert meta["labels"]["example.com/team"] == "platform"
    assert meta["labels"]["app.kubernetes.io/component"] == component
    assert [e for e in container["env"] if e["name"] == wanted["extraEnv"][0]["name"]] == wanted["extraEnv"]
    assert wanted["extraVolumes"][0] in spec["volumes"]
    assert wanted["extraVolumeMounts"][0] in container["volumeMounts"]
    assert container["args"][-1] == "--log-level=DEBUG"
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["terminationGracePeriodSeconds"] == wanted["terminationGracePeriodSeconds"]
    strategy = workload["spec"]["strategy" if kind == "Deployment" else "updateStrategy"]
    assert strategy == wanted["updateStrategy"]
    # overrides merge over the built-in hardening, which stays
    for key, value in wanted["podSecurityContext"].items():
        assert spec["securityContext"][key] == value
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for key, value in wanted["securityContext"].items():
        assert container["securityContext"][key] == value
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_agent_keeps_its_gpu_node_affinity_beside_extra_affinity() -> None:
    affinity = _spec("DaemonSet")["affinity"]
    assert affinity["nodeAffinity"] == DEFAULTS["agent"]["nodeAffinity"]


def test_defaults_render_no_extras() -> None:
    spec = _spec("Deployment", "defaults")
    assert "nodeSelector" not in spec and "hostNetwork" not in spec
    assert "nodeSelector" not in _spec("DaemonSet", "defaults")
    (pdb,) = by_kind(render("defaults"), "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]


def test_the_pdb_takes_min_available() -> None:
    (pdb,) = by_kind(render("production"), "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in pdb["spec"]


def test_host_network_serves_on_the_port_given() -> None:
    spec = _spec("Deployment")
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    container = spec["containers"][0]
    assert "--port=9443" in container["args"]
    assert container["ports"][0]["containerPort"] == 9443


def test_global_image_registry_and_pull_secrets_are_honoured() -> None:
    for kind in ("Deployment", "DaemonSet"):
        spec = _spec(kind)
        # the values' digest wins over their tag; global.imageRegistry over imageRegistry
        assert spec["containers"][0]["image"] == "mirror.example.com/dra-bridge@sha256:" + "0123456789abcdef" * 4
        assert spec["imagePullSecrets"] == [{"name": "own-pull"}, {"name": "global-pull"}, {"name": "global-pull-2"}]
    assert _spec("Deployment", "defaults")["containers"][0]["image"].startswith("registry.example.com/dra-bridge:")


def test_extra_selector_terms_are_merged_with_the_built_in_exclusions() -> None:
    (registration,) = by_kind(render("production"), "MutatingWebhookConfiguration")
    for hook in registration["webhooks"]:
        selector = hook["namespaceSelector"]
        assert selector["matchLabels"] == {"example.com/gpu-tenant": "true"}
        keys = [e["key"] for e in selector["matchExpressions"]]
        assert {"kubernetes.io/metadata.name", "dra-bridge.io/webhook-opt-out", "example.com/tier"} <= set(keys)
        assert hook["objectSelector"] == {
            "matchExpressions": [{"key": "example.com/no-dra", "operator": "DoesNotExist"}]
        }


def test_refused_combinations_fail_the_render() -> None:
    with pytest.raises(HelmFailed):
        render("production", "--set", "webhook.podDisruptionBudget.maxUnavailable=1")
    with pytest.raises(HelmFailed):
        render("production", "--set", "webhook.port=10250")
    with pytest.raises(HelmFailed, match="nodeSelector"):
        render("defaults", "--set", "agent.nodeSelector=gpu")


#: (dotted key, a value of the right type, a value of the wrong type) for every production value.
VALUES: list[tuple[str, Any, Any]] = [
    (f"{c}.{k}", good, bad)
    for c in ("webhook", "agent")
    for k, good, bad in [
        ("nodeSelector", {"a": "b"}, ["a"]),
        ("affinity", {"podAntiAffinity": {}}, "zone"),
        ("tolerations", [{"operator": "Exists"}], {"operator": "Exists"}),
        ("podAnnotations", {"a": "b"}, {"a": 1}),
        ("podLabels", {"a": "b"}, "a=b"),
        ("extraEnv", [{"name": "A", "value": "1"}], {"A": "1"}),
        ("extraVolumes", [{"name": "v", "emptyDir": {}}], [{"emptyDir": {}}]),
        ("extraVolumeMounts", [{"name": "v", "mountPath": "/v"}], [{"name": "v"}]),
        ("extraArgs", ["--x=1"], "--x=1"),
        ("priorityClassName", "high", 5),
        ("podSecurityContext", {"fsGroup": 1}, "root"),
        ("securityContext", {"runAsGroup": 1}, True),
        ("updateStrategy", {"type": "RollingUpdate"}, "RollingUpdate"),
        ("terminationGracePeriodSeconds", 30, "30s"),
    ]
] + [
    ("webhook.hostNetwork", True, "yes"),
    ("webhook.podDisruptionBudget.enabled", False, "no"),
    ("webhook.podDisruptionBudget.minAvailable", "50%", True),
    ("webhook.podDisruptionBudget.maxUnavailable", 1, [1]),
    ("webhook.namespaceSelector", {"matchLabels": {"a": "b"}}, {"matchLabel": {}}),
    ("webhook.objectSelector", {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"matchExpressions": {}}),
    ("global", {"anything": {"a": 1}}, "x"),
    ("global.imageRegistry", "r.example.com", 1),
    ("global.imagePullSecrets", ["s", {"name": "t"}], "s"),
    ("imageRegistry", "r.example.com", ["r"]),
    ("webhook.drain.preStopSeconds", 0, "10s"),
    ("webhook.drain.periodSeconds", 8, 2.5),
    ("webhook.networkPolicy.enabled", True, "yes"),
    ("webhook.networkPolicy.apiServerSources", [{"ipBlock": {"cidr": "10.0.0.0/8"}}], {"ipBlock": {}}),
    ("webhook.networkPolicy.metricsNamespace", "monitoring", 5),
]


def _with(key: str, value: Any) -> dict[str, Any]:
    values = copy.deepcopy(DEFAULTS)
    *parents, leaf = key.split(".")
    node = values
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    return values


def test_every_production_value_is_in_values_yaml() -> None:
    for key, _, _ in VALUES:
        node: Any = DEFAULTS
        for part in key.split("."):
            assert part in node, key
            node = node[part]


@pytest.mark.parametrize(("key", "good", "bad"), VALUES, ids=[v[0] for v in VALUES])
def test_the_schema_takes_each_value_and_refuses_the_wrong_type(key: str, good: Any, bad: Any) -> None:
    validator = jsonschema.Draft7Validator(SCHEMA)
    assert not list(validator.iter_errors(_with(key, good))), key
    assert list(validator.iter_errors(_with(key, bad))), key


def test_the_real_webhook_parser_takes_the_extra_args() -> None:
    from dra_bridge.webhook.settings import Settings

    container = _spec("Deployment")["containers"][0]
    settings = Settings.from_args(container["args"], {"DRA_WEBHOOK_NAMESPACE": "gpu-system"})
    assert (settings.port, settings.log_level) == (9443, "DEBUG")
