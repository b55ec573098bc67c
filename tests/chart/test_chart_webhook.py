"""What the chart renders for the webhook: its registration (one entry per mode, scope,
matchConditions that select exactly the catalogued resources), certificates in three modes,
a Deployment whose flags the real webhook parser accepts, RBAC derived from webhook/access.py,
and ConfigMaps the real loaders accept."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel

from dra_bridge.kube.resources import rbac_rules
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.policy import parse_policy
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.serving_check import check_serving_certificate
from dra_bridge.webhook.settings import Settings
from tests.chart.render import CHART, NAMESPACE, HelmFailed, Obj, by_kind, render

CI = CHART / "ci"
SERVICE_HOST = f"dra-bridge-webhook.{NAMESPACE}.svc"


def one(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in by_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]


def registration(values: str = "defaults", *extra: str) -> Obj:
    return one(render(values, *extra), "MutatingWebhookConfiguration")


def test_one_entry_per_mode_each_calling_its_path() -> None:
    hooks = {h["name"]: h for h in registration()["webhooks"]}
    assert set(hooks) == {"audit.webhook.dra-bridge.io", "enforce.webhook.dra-bridge.io"}
    for mode in ("audit", "enforce"):
        h = hooks[f"{mode}.webhook.dra-bridge.io"]
        assert h["clientConfig"]["service"] == {
            "name": "dra-bridge-webhook",
            "namespace": NAMESPACE,
            "path": f"/mutate/{mode}",
            "port": 443,
        }
        assert h["rules"] == [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ]
        assert h["sideEffects"] == "NoneOnDryRun"
        assert h["reinvocationPolicy"] == "IfNeeded"
        exprs = h["namespaceSelector"]["matchExpressions"]
        assert {"key": "dra-bridge.io/webhook", "operator": "In", "values": [mode]} in exprs
        assert {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", NAMESPACE],
        } in exprs
        assert {"key": "dra-bridge.io/webhook-opt-out", "operator": "DoesNotExist"} in exprs
    assert (
        hooks["audit.webhook.dra-bridge.io"]["failurePolicy"],
        hooks["enforce.webhook.dra-bridge.io"]["failurePolicy"],
    ) == ("Ignore", "Fail")


def test_failure_policy_timeout_and_modes_come_from_values() -> None:
    hooks = registration("enforce")["webhooks"]
    assert [(h["name"], h["failurePolicy"], h["timeoutSeconds"]) for h in hooks] == [
        ("enforce.webhook.dra-bridge.io", "Fail", 10)
    ]
    hooks = registration(
        "defaults", "--set", "webhook.enforce.failurePolicy=Ignore", "--set", "webhook.audit.allNamespaces=true"
    )["webhooks"]
    assert hooks[1]["failurePolicy"] == "Ignore"
    audit_keys = [e["key"] for e in hooks[0]["namespaceSelector"]["matchExpressions"]]
    assert audit_keys == ["kubernetes.io/metadata.name", "dra-bridge.io/webhook-opt-out"]


def _condition(values: str = "defaults") -> Any:
    (cond,) = registration(values)["webhooks"][0]["matchConditions"]
    env = celpy.Environment()
    return env.program(env.compile(cond["expression"]))


def _pod(limits: dict[str, Any] | None = None, requests: dict[str, Any] | None = None, init: bool = False) -> Obj:
    resources: dict[str, Any] = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    container = {"name": "c", "image": "x", **({"resources": resources} if resources else {})}
    spec: dict[str, Any] = {"containers": [{"name": "plain", "image": "x"}]}
    if init:
        spec["initContainers"] = [container]
    else:
        spec["containers"].append(container)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(_pod({"nvidia.com/gpu": 1}), True, id="gpu-limit"),
        pytest.param(_pod(requests={"amd.com/gpu": 1}), True, id="amd-request"),
        pytest.param(_pod({"nvidia.com/mig-1g.10gb": 1}), True, id="mig"),
        pytest.param(_pod({"nvidia.com/mig-3g.40gb.shared": 2}), True, id="mig-shared"),
        pytest.param(_pod({"nvidia.com/mig-1g.10gb.me": 1}, init=True), True, id="mig-me-init"),
        pytest.param(
            _pod({"nvidia.com/gpumem": 1000}), True, id="hami-gpumem"
        ),  # HAMi slicing: the webhook says why it stays
        pytest.param(_pod({"gpu.intel.com/xe": 1}, init=True), True, id="intel-xe-init"),
        pytest.param(_pod({"nvidia.com/gpu-10gb": 1}), False, id="prefix-only"),  # names match exactly, never by prefix
        pytest.param(_pod({"nvidia.com/mig-big": 1}), False, id="mig-bad-profile"),
        pytest.param(_pod({"cpu": "1"}, {"memory": "1Gi"}), False, id="cpu-memory"),
        pytest.param(_pod(), False, id="no-resources"),  # no resources at all: guarded, no evaluation error
        pytest.param(_pod({}, init=True), False, id="init-empty"),
    ],
)
def test_match_condition_selects_exactly_the_catalogued_resources(pod: Obj, expected: bool) -> None:
    assert _condition().evaluate({"object": json_to_cel(pod)}) == expected


def test_match_condition_covers_every_shipped_and_values_catalog_name() -> None:
    program = _condition("enforce")  # catalog.resources adds example.com/accelerator
    catalog = load_catalog(one(render("enforce"), "ConfigMap", "dra-bridge-catalog")["data"]["catalog.yaml"])
    names = [e.name for e in catalog.entries if e.name] + [
        e.pattern.replace("{profile}", p) for e in catalog.entries if e.pattern for p in catalog.mig_profiles
    ]
    assert "example.com/accelerator" in names
    for name in names:
        assert program.evaluate({"object": json_to_cel(_pod({name: 1}))}), name


QUOTE_PATTERN = ("--set-string", "catalog.resources[0].pattern=example.com/o'k\\\\\"x-{profile}")
"""A values pattern with a quote, a backslash and a double quote: each closes or breaks a CEL
string pasted in unescaped."""


def test_match_condition_of_a_pattern_with_quotes_and_a_backslash_compiles_and_matches() -> None:
    (cond,) = registration("defaults", *QUOTE_PATTERN)["webhooks"][0]["matchConditions"]
    env = celpy.Environment()
    program = env.program(env.compile(cond["expression"]))
    matched = "example.com/o'k\\\"x-1g.10gb"
    assert program.evaluate({"object": json_to_cel(_pod({matched: 1}))})
    assert not program.evaluate({"object": json_to_cel(_pod({"example.com/o'k\\\"x-big": 1}))})
    assert program.evaluate({"object": json_to_cel(_pod({"nvidia.com/mig-1g.10gb": 1}))})


def test_the_catalog_and_policy_config_maps_load_with_the_real_loaders() -> None:
    objs = render("enforce")
    catalog = load_catalog(one(objs, "ConfigMap", "dra-bridge-catalog")["data"]["catalog.yaml"], "values")
    assert catalog.lookup("example.com/accelerator") is not None
    policy_text = one(objs, "ConfigMap", "dra-bridge-webhook-policy")["data"]["policy.yaml"]
    policy = parse_policy(yaml.safe_load(policy_text), "policy.yaml")
    assert [r.name for r in policy.rules] == ["training"]
    parse_policy(yaml.safe_load(one(render(), "ConfigMap", "dra-bridge-webhook-policy")["data"]["policy.yaml"]), "p")


def test_a_catalog_change_restarts_the_pods() -> None:
    def checksum(objs: list[Obj]) -> str:
        return str(one(objs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/catalog"])

    base = checksum(render())
    assert checksum(render("defaults", "--set", "catalog.target=vendor")) != base
    assert checksum(render("defaults", "--set", "webhook.policy.defaults.keepLegacy=true")) == base
    mounts = one(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert [m.get("subPath") for m in mounts if m["name"] == "catalog"] == ["catalog.yaml"]


def _container(values: str = "defaults") -> Obj:
    return one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("values", ["defaults", "cert-manager", "existing-secret"])
def test_the_real_webhook_parser_accepts_the_deployment_s_flags(values: str) -> None:
    c = _container(values)
    assert c["command"] == ["dra-webhook", "serve"]
    plain = {e["name"]: e["value"] for e in c["env"] if "value" in e}
    env = {**plain, "DRA_WEBHOOK_NAMESPACE": NAMESPACE, "DRA_WEBHOOK_IDENTITY": "pod-0"}
    s = Settings.from_args(c["args"], env)
    assert s.service_name == SERVICE_HOST
    assert s.namespace == NAMESPACE
    assert plain == {"DRA_WEBHOOK_LOG_LEVEL": "INFO"} and s.log_level == "INFO"
    mounted = {m["mountPath"] for m in c["volumeMounts"]}
    for path in (s.tls_cert_file, s.tls_key_file, s.ca_bundle, s.policy_file, s.catalog_file):
        assert path is not None and (str(path.parent) in mounted or str(path) in mounted), path


def test_the_webhook_runs_locked_down_with_its_real_health_endpoints() -> None:
    dep = one(render(), "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert dep["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    c = pod["containers"][0]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    server = (Path(__file__).parents[2] / "webhook" / "server.py").read_text()
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        get = c[probe]["httpGet"]
        assert get["scheme"] == "HTTPS" and f'"{get["path"]}"' in server, probe
    assert one(render(), "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_webhook_rbac_is_exactly_the_declared_calls() -> None:
    objs = render()
    assert one(objs, "ClusterRole", "dra-bridge-webhook")["rules"] == rbac_rules(API_CALLS)
    role = one(objs, "Role", "dra-bridge-webhook")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == rbac_rules(API_CALLS, "namespace")
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert one(objs, kind, "dra-bridge-webhook")["subjects"] == [
            {"kind": "ServiceAccount", "name": "dra-bridge-webhook", "namespace": NAMESPACE}
        ]


def test_self_signed_pair_chains_to_the_registration_s_ca_bundle() -> None:
    import base64

    objs = render()
    secret = one(objs, "Secret", "dra-bridge-webhook-tls")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    for hook in one(objs, "MutatingWebhookConfiguration")["webhooks"]:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == data["ca.crt"]
    now = datetime.datetime.now(datetime.UTC)
    assert check_serving_certificate(data["tls.crt"], data["ca.crt"], SERVICE_HOST, now) == ""
    assert "does not chain" in check_serving_certificate(data["tls.crt"], _ci_ca(), SERVICE_HOST, now)


def _ci_ca() -> bytes:
    doc = yaml.safe_load((CI / "existing-secret-values.yaml").read_text())
    return str(doc["webhook"]["certificates"]["existingSecret"]["caBundle"]).encode()


def test_cert_manager_mode_injects_the_ca_and_renders_no_bundle() -> None:
    objs = render("cert-manager")
    reg = registration("cert-manager")
    assert reg["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/dra-bridge-webhook"}
    assert all("caBundle" not in h["clientConfig"] for h in reg["webhooks"])
    cert = one(objs, "Certificate", "dra-bridge-webhook")
    assert SERVICE_HOST in cert["spec"]["dnsNames"]
    assert cert["spec"]["secretName"] == "dra-bridge-webhook-tls"
    assert cert["spec"]["issuerRef"] == {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert not by_kind(objs, "Secret") and not by_kind(objs, "Issuer")
    # without an issuerRef: the chart's own CA chain (tests/chart/test_chart_cert_manager.py)


def test_existing_secret_mode_uses_the_secret_and_the_given_ca() -> None:
    import base64

    objs = render("existing-secret")
    assert not by_kind(objs, "Secret")
    volumes = one(objs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": "my-webhook-tls", "defaultMode": 0o440}} in volumes
    for hook in registration("existing-secret")["webhooks"]:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]).strip() == _ci_ca().strip()
    assert one(objs, "ConfigMap", "dra-bridge-webhook-ca")["data"]["ca.crt"].strip() == _ci_ca().decode().strip()


def test_existing_secret_mode_without_a_name_is_refused_naming_the_value() -> None:
    with pytest.raises(HelmFailed, match=r"webhook\.certificates\.existingSecret\.name is required"):
        render(None, "--set", "webhook.certificates.mode=existing-secret")
