"""NVML where the agent runs (agent.nvml): a second, NVIDIA-only agent DaemonSet, privileged, with
the host's driver root mounted read-only (HostToContainer) at /driver-root and
NVIDIA_VISIBLE_DEVICES=void; the default agent leaves the NVIDIA nodes and stays unprivileged.
The two DaemonSets never select the same node and together select what agent.nodeAffinity
selects (checked by evaluating their node affinities over label sets)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from dra_bridge.bridge.settings import Settings
from tests.chart.render import (
    CHART,
    NAMESPACE,
    RELEASE,
    REQUIRED,
    HelmFailed,
    Obj,
    by_kind,
    helm,
    helm_binaries,
    render,
)
from tests.chart.test_chart_agent import _env

POOL = (
    "--set",
    "agent.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
    "--set",
    "agent.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
    ".operator=Exists",
)


def daemonsets(values: str | None = "nvml", *extra: str) -> dict[str, Obj]:
    return {d["metadata"]["name"]: d for d in by_kind(render(values, *extra), "DaemonSet")}


def pod(ds: Obj) -> Obj:
    spec: Obj = ds["spec"]["template"]["spec"]
    return spec


def terms(ds: Obj) -> list[Obj]:
    found: list[Obj] = pod(ds)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    return found


def holds(expression: Obj, labels: dict[str, str]) -> bool:
    """A node selector requirement, as the scheduler reads it."""
    key, op = expression["key"], expression["operator"]
    if op == "In":
        return labels.get(key) in expression["values"]
    if op == "NotIn":
        return labels.get(key) not in expression["values"]
    if op == "Exists":
        return key in labels
    assert op == "DoesNotExist", op
    return key not in labels


def selects(node_terms: list[Obj], labels: dict[str, str]) -> bool:
    return any(all(holds(e, labels) for e in t.get("matchExpressions", [])) for t in node_terms)


def label_sets(*term_lists: list[Obj]) -> list[dict[str, str]]:
    """Nodes with none, one or two of the labels the terms name, each with a value they name or another."""
    keys: dict[str, set[str]] = {}
    for t in itertools.chain(*term_lists):
        for e in t.get("matchExpressions", []):
            keys.setdefault(e["key"], {"other"}).update(e.get("values", []))
    options = [(k, v) for k, values in sorted(keys.items()) for v in sorted(values)]
    nodes: list[dict[str, str]] = [{}] + [{k: v} for k, v in options]
    nodes += [{k1: v1, k2: v2} for (k1, v1), (k2, v2) in itertools.combinations(options, 2) if k1 != k2]
    return nodes


@pytest.mark.parametrize(
    ("values", "extra"), [("nvml", ()), ("nvml", POOL), (None, ("--set", "agent.nvml.enabled=true"))], ids=str
)
def test_the_two_daemonsets_split_the_agent_s_nodes(values: str | None, extra: tuple[str, ...]) -> None:
    found = daemonsets(values, *extra)
    default, nvml = found["dra-bridge-agent"], found["dra-bridge-agent-nvml"]
    pool = [{"matchExpressions": [{"key": "pool", "operator": "Exists"}]}]
    without = pool if extra == POOL else terms(daemonsets(values and "defaults")["dra-bridge-agent"])
    nodes = label_sets(terms(default), terms(nvml))
    assert len(nodes) > 50
    for labels in nodes:
        a, b = selects(terms(default), labels), selects(terms(nvml), labels)
        assert not (a and b), f"both agents on {labels}"
        assert (a or b) == selects(without, labels), labels
    assert selects(terms(nvml), {"pool": "x", "nvidia.com/gpu.present": "true"})
    assert selects(terms(nvml), {"pool": "x", "feature.node.kubernetes.io/pci-10de.present": "true"})
    assert selects(terms(default), {"pool": "x", "feature.node.kubernetes.io/pci-1002.present": "true"})
    assert default["spec"]["selector"] != nvml["spec"]["selector"]
    for ds in (default, nvml):  # each DaemonSet's pods match its own selector only
        pod_labels = ds["spec"]["template"]["metadata"]["labels"]
        matches = [d for d in (default, nvml) if d["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()]
        assert matches == [ds]


@pytest.mark.parametrize(("values", "root"), [("nvml", "/run/nvidia/driver"), (None, "/")], ids=str)
def test_the_nvml_agent_mounts_the_driver_root_and_sees_no_gpu_of_its_own(values: str | None, root: str) -> None:
    extra = ("--set", "agent.nvml.enabled=true") if values is None else ()
    nvml = daemonsets(values, *extra)["dra-bridge-agent-nvml"]
    (container,) = pod(nvml)["containers"]
    (volume,) = [v for v in pod(nvml)["volumes"] if v["name"] == "driver-root"]
    assert volume["hostPath"] == {"path": root, "type": "DirectoryOrCreate"}
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "driver-root"]
    assert mount == {
        "name": "driver-root",
        "mountPath": "/driver-root",
        "readOnly": True,
        "mountPropagation": "HostToContainer",
    }
    env = _env(container)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "void"
    settings = Settings.from_args([], {k: v for k, v in env.items() if k.startswith("DRA_BRIDGE_")}).validate()
    assert settings.nvml_driver_root == "/driver-root"


def _privileged(ds: Obj) -> bool:
    return bool(pod(ds)["containers"][0]["securityContext"].get("privileged"))


@pytest.mark.parametrize(("values", "extra"), [("nvml", ()), ("defaults", ())], ids=str)
def test_only_the_nvml_agent_is_privileged(values: str, extra: tuple[str, ...]) -> None:
    found = daemonsets(values, *extra)
    default = found.pop("dra-bridge-agent")
    security: dict[str, Any] = pod(default)["containers"][0]["securityContext"]
    assert not _privileged(default)
    assert security["allowPrivilegeEscalation"] is False and security["capabilities"] == {"drop": ["ALL"]}
    assert not [v for v in pod(default)["volumes"] if v["name"] == "driver-root"]
    assert "NVIDIA_VISIBLE_DEVICES" not in _env(pod(default)["containers"][0])
    assert "DRA_BRIDGE_NVML_DRIVER_ROOT" not in _env(pod(default)["containers"][0])
    if values == "defaults":
        assert not found, "agent.nvml is off by default"
        return
    (nvml,) = found.values()
    assert _privileged(nvml)
    assert pod(nvml)["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod(nvml)["serviceAccountName"] == pod(default)["serviceAccountName"]  # the same policies apply


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--set", "agent.nvml.enabled=yes"), "enabled"),
        (("--set", "agent.nvml.driverRoot=run/nvidia/driver"), "driverRoot"),
        (
            (
                "--set",
                "agent.nvml.nodeLabels[0].key=nvidia.com/gpu.present",
                "--set",
                "agent.nvml.nodeLabels[0].operator=NotIn",
            ),
            "nodeLabels",
        ),
    ],
    ids=["enabled-string", "relative-root", "notin-label"],
)
def test_the_schema_refuses_wrong_nvml_values(extra: tuple[str, ...], message: str) -> None:
    with pytest.raises(HelmFailed, match=message):
        render("nvml", *extra)


def test_helm_3_and_4_lint_the_nvml_values_cleanly() -> None:
    for major, binary in helm_binaries().items():
        out = helm(binary, "lint", "--strict", str(CHART), "--values", str(CHART / "ci" / "nvml-values.yaml"))
        assert "0 chart(s) failed" in out, (major, out)


def test_the_notes_name_the_nvml_daemonset_when_it_is_on() -> None:
    binary = helm_binaries(("4",))["4"]
    args = ["install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client", *REQUIRED]
    on = helm(binary, *args, "--set", "agent.nvml.enabled=true").split("NOTES:", 1)[1]
    off = helm(binary, *args).split("NOTES:", 1)[1]
    assert f"get daemonset {RELEASE}-agent-nvml" in on and "component=agent-nvml" in on
    assert "agent-nvml" not in off


def test_the_nvml_agent_without_the_agent_is_refused_at_render() -> None:
    # agent.enabled=false rendered no agent at all, the NVML one silently included
    with pytest.raises(HelmFailed, match=r"agent\.nvml\.enabled needs agent\.enabled"):
        render("nvml", "--set", "agent.enabled=false")
