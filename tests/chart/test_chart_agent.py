"""What the chart renders for the agent and the cluster: a DaemonSet whose environment the
real agent settings accept, RBAC derived from bridge/access.py, the ValidatingAdmissionPolicies
of docs/bridge.md, DeviceClasses equal to `dra-migrate classes`, and the chart's generated
data files in step with the shipped catalog."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from dra_bridge.bridge.access import API_CALLS
from dra_bridge.bridge.settings import FLAGS, Settings
from dra_bridge.kube.resources import rbac_rules
from dra_bridge.migrate.cli import main as dra_migrate
from dra_bridge.translate.catalog import PROFILE_RE, load_catalog
from tests.chart.render import CHART, NAMESPACE, HelmFailed, Obj, by_kind, render

ROOT = Path(__file__).resolve().parents[2]


def daemonset(values: str = "defaults", *extra: str) -> Obj:
    (ds,) = by_kind(render(values, *extra), "DaemonSet")
    return ds


def _env(container: Obj) -> dict[str, str]:
    plain = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    from_fields = {
        e["name"]: "node-a"
        if e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
        else "0f6c4f5e-1b2d-4c8e-9a7b-3d2e1f0a9b8c"
        for e in container["env"]
        if "valueFrom" in e
    }
    return {**plain, **from_fields}


@pytest.mark.parametrize("values", ["defaults", "enforce"])
def test_the_real_agent_settings_accept_the_daemonset_s_environment(values: str) -> None:
    c = daemonset(values)["spec"]["template"]["spec"]["containers"][0]
    env = _env(c)
    known = {FLAGS.env(f.name) for f in FLAGS.flags}
    assert set(env) <= known, f"not flags of dra-bridge: {sorted(set(env) - known)}"
    s = Settings.from_args([], env)
    s.validate()
    assert (s.node_name, s.kubelet_dir, s.state_dir) == ("node-a", "/var/lib/kubelet", "/var/lib/dra-bridge")
    assert c["command"] == ["dra-bridge", "run"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for sub in ("plugins_registry", "plugins/dra-bridge.io"):
        assert not mounts[f"/var/lib/kubelet/{sub}"].get("readOnly")
    for sub in ("pod-resources", "device-plugins"):
        assert mounts[f"/var/lib/kubelet/{sub}"]["readOnly"] is True
    assert not mounts["/var/lib/dra-bridge"].get("readOnly")
    assert mounts["/etc/cdi"]["readOnly"] is True and not mounts["/var/run/cdi"].get("readOnly")
    assert mounts["/etc/dra-bridge/catalog.yaml"]["subPath"] == "catalog.yaml"
    probes = {c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"}
    assert c["livenessProbe"]["httpGet"]["port"] == "metrics" and c["ports"][0]["containerPort"] == s.health_port


def test_hostpaths_are_the_kubelet_s_directories_at_the_same_paths() -> None:
    spec = daemonset("defaults", "--set", "agent.kubeletDir=/data/kubelet/")["spec"]["template"]["spec"]
    paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert paths == {
        "plugins-registry": "/data/kubelet/plugins_registry",
        "plugin": "/data/kubelet/plugins/dra-bridge.io",
        "pod-resources": "/data/kubelet/pod-resources",
        "device-plugins": "/data/kubelet/device-plugins",
        "state": "/var/lib/dra-bridge",
        "cdi-0": "/etc/cdi",
        "cdi-1": "/var/run/cdi",
    }
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    assert all(mounts[name] == path for name, path in paths.items())
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_surge_rollout_names_sockets_per_pod() -> None:
    plain, surge = daemonset(), daemonset("enforce")
    assert plain["spec"]["updateStrategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    assert surge["spec"]["updateStrategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    names = [[e["name"] for e in d["spec"]["template"]["spec"]["containers"][0]["env"]] for d in (plain, surge)]
    assert "DRA_BRIDGE_POD_UID" not in names[0] and "DRA_BRIDGE_POD_UID" in names[1]


def test_agent_off_renders_no_agent_objects() -> None:
    objs = render("agent-off")
    assert not by_kind(objs, "DaemonSet") and not by_kind(objs, "ValidatingAdmissionPolicy")
    assert [o["metadata"]["name"] for o in by_kind(objs, "ClusterRole")] == ["dra-bridge-webhook"]


def test_agent_rbac_is_exactly_the_declared_calls() -> None:
    objs = render()
    (role,) = [o for o in by_kind(objs, "ClusterRole") if o["metadata"]["name"] == "dra-bridge-agent"]
    assert role["rules"] == rbac_rules(API_CALLS)
    assert rbac_rules(API_CALLS, "namespace") == []
    (binding,) = [o for o in by_kind(objs, "ClusterRoleBinding") if o["metadata"]["name"] == "dra-bridge-agent"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dra-bridge", "namespace": NAMESPACE}]
    assert daemonset()["spec"]["template"]["spec"]["serviceAccountName"] == "dra-bridge"


def _documented_policies() -> list[Obj]:
    text = (ROOT / "docs" / "bridge.md").read_text()
    block = re.search(r"```yaml\n(apiVersion: admissionregistration.*?)```", text, re.DOTALL)
    assert block, "docs/bridge.md lost its ValidatingAdmissionPolicies"
    return [d for d in yaml.safe_load_all(block.group(1).replace("<namespace>", NAMESPACE)) if d]


def test_validating_admission_policies_are_docs_bridge_md_s() -> None:
    rendered = [o for o in render() if o["kind"].startswith("ValidatingAdmissionPolicy")]
    strip = [{"kind": o["kind"], "name": o["metadata"]["name"], "spec": o["spec"]} for o in rendered]
    documented = [{"kind": o["kind"], "name": o["metadata"]["name"], "spec": o["spec"]} for o in _documented_policies()]

    def key(o: Obj) -> tuple[str, str]:
        return o["kind"], o["name"]

    assert sorted(strip, key=key) == sorted(documented, key=key)
    assert len(strip) == 4


def test_policies_are_left_out_where_the_cluster_does_not_serve_them() -> None:
    # --api-versions replaces nothing in Helm's defaults, so ask the value to leave them out
    # and check the Capabilities guard by its text.
    objs = render(None, "--set", "agent.validatingAdmissionPolicies=false")
    assert not [o for o in objs if o["kind"].startswith("ValidatingAdmissionPolicy")]
    source = (CHART / "templates" / "agent-policies.yaml").read_text()
    assert '.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"' in source
    assert '(semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version)' in source


def _classes(api_version: str) -> list[Obj]:
    out = io.StringIO()
    assert dra_migrate(["classes", "--api-version", api_version], stdout=out) == 0
    return [d for d in yaml.safe_load_all(out.getvalue()) if d]


def _comparable(obj: Obj) -> Obj:
    return {
        "apiVersion": obj["apiVersion"],
        "name": obj["metadata"]["name"],
        "annotations": obj["metadata"]["annotations"],
        "spec": obj["spec"],
    }


@pytest.mark.parametrize(
    ("values", "api_version"), [("defaults", "resource.k8s.io/v1"), ("kube-1.32", "resource.k8s.io/v1beta1")]
)
def test_device_classes_are_dra_migrate_classes(values: str, api_version: str) -> None:
    rendered = [_comparable(o) for o in by_kind(render(values), "DeviceClass")]
    assert rendered == [_comparable(o) for o in _classes(api_version)]


def test_device_classes_follow_the_cluster_version() -> None:
    for version, api in (("1.33.0", "resource.k8s.io/v1beta2"), ("1.34.0", "resource.k8s.io/v1")):
        objs = render(None, kube_version=version)
        assert {o["apiVersion"] for o in by_kind(objs, "DeviceClass")} == {api}


def test_extended_resource_name_is_off_by_default_and_the_legacy_name_when_on() -> None:
    assert all("extendedResourceName" not in o["spec"] for o in by_kind(render(), "DeviceClass"))
    on = by_kind(render("enforce"), "DeviceClass")
    assert on and all(
        o["spec"]["extendedResourceName"] == o["metadata"]["annotations"]["dra-bridge.io/legacy-resource"] for o in on
    )
    with pytest.raises(HelmFailed, match=r"extendedResourceName needs resource\.k8s\.io/v1"):
        render("kube-1.32", "--set", "deviceClasses.extendedResourceName=true")


def test_vendor_target_installs_none_of_our_classes() -> None:
    assert not by_kind(render("defaults", "--set", "catalog.target=vendor"), "DeviceClass")


def test_the_chart_s_data_files_are_in_step_with_the_shipped_catalog() -> None:
    out = io.StringIO()
    assert dra_migrate(["classes"], stdout=out) == 0
    header = (
        "# Generated: dra-migrate classes (the shipped catalog, its MIG profiles). tests/chart/test_chart_agent.py\n"
        "# fails when this differs from the command's output; regenerate with the command it prints.\n"
    )
    assert (CHART / "files" / "deviceclasses.yaml").read_text() == header + out.getvalue(), (
        "regenerate: (header lines) + `dra-migrate classes` > charts/dra-bridge/files/deviceclasses.yaml"
    )
    catalog = load_catalog()
    data = yaml.safe_load((CHART / "files" / "catalog-resources.yaml").read_text())
    assert data == {
        "names": [e.name for e in catalog.entries if e.name],
        "patterns": [e.pattern for e in catalog.entries if e.pattern],
        "profileRegex": PROFILE_RE,
    }


def test_the_priority_class_quota_is_rendered_only_when_asked_for_and_scoped_to_the_agent_s_class() -> None:
    on = ("--set", "agent.priorityClassQuota.enabled=true")
    assert by_kind(render("defaults"), "ResourceQuota") == []
    (quota,) = by_kind(render("defaults", *on), "ResourceQuota")
    assert quota["metadata"]["namespace"] == NAMESPACE
    assert quota["spec"]["hard"] == {"pods": "1000"}
    (term,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    pod_spec = daemonset()["spec"]["template"]["spec"]
    assert term == {"scopeName": "PriorityClass", "operator": "In", "values": [pod_spec["priorityClassName"]]}
    custom = ("--set", "agent.priorityClassQuota.pods=40", "--set", "agent.priorityClassName=gpu-crit")
    (quota,) = by_kind(render("defaults", *on, *custom), "ResourceQuota")
    assert quota["spec"]["hard"] == {"pods": "40"}
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == ["gpu-crit"]
    with pytest.raises(HelmFailed, match="priorityClassQuota"):
        render("defaults", *on, "--set", "agent.priorityClassQuota.pods=0")
    with pytest.raises(HelmFailed, match=r"needs agent\.priorityClassName"):
        render("defaults", *on, "--set", "agent.priorityClassName=")
