"""Values rendered as YAML scalars are quoted: a path with ``, key: value`` (or `` #``) in it
stays one string inside the agent's flow mappings instead of adding a key (a ``subPathExpr``, a
second ``type``) or closing the mapping early; the schema refuses control characters in paths
and a comma in a CDI directory (DRA_BRIDGE_CDI_DIR is split on commas)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart.render import CHART, HelmFailed, Obj, by_kind, render

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
STATE = "/var/lib/x, subPathExpr: $(DRA_BRIDGE_NODE_NAME)"
KUBELET = "/var/lib/k, readOnly: true"
CDI = "/etc/cdi #x"
DRIVER = "/run/nvidia/driver, type: File"


def _pod(objs: list[Obj], name: str) -> dict[str, Any]:
    ds = next(d for d in by_kind(objs, "DaemonSet") if d["metadata"]["name"] == name)
    spec: dict[str, Any] = ds["spec"]["template"]["spec"]
    return spec


def _mounts(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}


def _host_paths(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v["hostPath"] for v in pod["volumes"] if "hostPath" in v}


def test_a_state_dir_stays_one_path() -> None:
    pod = _pod(
        render("defaults", "--set-string", "agent.stateDir=/var/lib/x\\, subPathExpr: $(DRA_BRIDGE_NODE_NAME)"),
        "dra-bridge-agent",
    )
    assert _mounts(pod)["state"] == {"name": "state", "mountPath": STATE}
    assert _host_paths(pod)["state"] == {"path": STATE, "type": "DirectoryOrCreate"}


def test_a_kubelet_dir_stays_one_path() -> None:
    pod = _pod(render("defaults", "--set-string", "agent.kubeletDir=/var/lib/k\\, readOnly: true"), "dra-bridge-agent")
    assert _mounts(pod)["plugins-registry"] == {"name": "plugins-registry", "mountPath": f"{KUBELET}/plugins_registry"}
    assert _host_paths(pod)["plugin"] == {"path": f"{KUBELET}/plugins/dra-bridge.io", "type": "DirectoryOrCreate"}


def test_a_cdi_dir_stays_one_path() -> None:
    pod = _pod(render("defaults", "--set-string", "agent.cdiDirs[0]=/etc/cdi #x"), "dra-bridge-agent")
    assert _mounts(pod)["cdi-0"] == {"name": "cdi-0", "mountPath": CDI}
    assert _host_paths(pod)["cdi-0"] == {"path": CDI, "type": "DirectoryOrCreate"}


def test_a_driver_root_stays_one_path() -> None:
    pod = _pod(
        render("nvml", "--set-string", "agent.nvml.driverRoot=/run/nvidia/driver\\, type: File"),
        "dra-bridge-agent-nvml",
    )
    assert _host_paths(pod)["driver-root"] == {"path": DRIVER, "type": "DirectoryOrCreate"}


def test_helm_refuses_a_comma_in_a_cdi_dir() -> None:
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render("defaults", "--set-string", "agent.cdiDirs[0]=/etc/cdi\\,/x")


def test_helm_refuses_a_newline_in_a_path() -> None:
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render("defaults", "--set-string", "agent.stateDir=/var/lib/x\nhostPID: true")


@pytest.mark.parametrize(
    ("path", "valid"),
    [
        ("/var/lib/x", True),
        ("/var/lib/x y", True),
        ("var/lib", False),
        ("/a\nb", False),
        ("/a\tb", False),
        ("/a\x7fb", False),
    ],
    ids=["path", "space", "relative", "newline", "tab", "del"],
)
def test_the_schema_refuses_control_characters_in_paths(path: str, valid: bool) -> None:
    for key in ("stateDir", "kubeletDir"):
        values = {**DEFAULTS, "agent": {**DEFAULTS["agent"], key: path}}
        errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(values))
        assert not errors if valid else errors, (key, path)


def test_the_schema_refuses_a_comma_in_a_cdi_dir() -> None:
    values = {**DEFAULTS, "agent": {**DEFAULTS["agent"], "cdiDirs": ["/etc/cdi,/x"]}}
    assert list(jsonschema.Draft7Validator(SCHEMA).iter_errors(values))
