"""The fake toolkit spec and the plugin's own spec are valid CDI (the file format and names of
https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md, checked field by field
below) and name each GPU by index and by UUID, with an identity a container can read."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.deviceplugins import toolkit_cdi
from tests.deviceplugins.conftest import ROOT, UUIDS

VENDOR = re.compile(r"^[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$")
CLASS = re.compile(r"^[A-Za-z](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")
DEVICE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
EDIT_KEYS = {"env", "deviceNodes", "mounts", "hooks", "intelRdt", "additionalGids", "netDevices"}
NODE_KEYS = {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"}
MOUNT_KEYS = {"hostPath", "containerPath", "options", "type"}


def check_edits(edits: dict[str, Any]) -> None:
    assert set(edits) <= EDIT_KEYS, set(edits) - EDIT_KEYS
    for env in edits.get("env", []):
        assert re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", env), env
    for node in edits.get("deviceNodes", []):
        assert set(node) <= NODE_KEYS and node["path"].startswith("/")
        assert Path(node["hostPath"]).exists(), node  # a harmless node this host has
    for mount in edits.get("mounts", []):
        assert set(mount) <= MOUNT_KEYS and mount["containerPath"].startswith("/")
        assert Path(mount["hostPath"]).is_file(), mount


def check_spec(spec: dict[str, Any]) -> None:
    """What a CDI loader refuses: unknown fields, a bad kind or device name, duplicates, no devices."""
    assert set(spec) <= {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}
    assert spec["cdiVersion"] == "0.5.0"  # deviceNodes[].hostPath and names starting with a digit need 0.5.0
    vendor, cls = spec["kind"].split("/")
    assert VENDOR.match(vendor) and CLASS.match(cls)
    names = [d["name"] for d in spec["devices"]]
    assert names and len(names) == len(set(names))
    for device in spec["devices"]:
        assert set(device) <= {"name", "annotations", "containerEdits"} and DEVICE.match(device["name"])
        check_edits(device["containerEdits"])
    check_edits(spec.get("containerEdits", {}))


def test_toolkit_spec_is_valid_cdi_naming_each_gpu_by_index_and_uuid(tmp_path: Path) -> None:
    path = toolkit_cdi.write_toolkit_spec(tmp_path / "cdi", UUIDS, tmp_path / "identity")
    assert path == tmp_path / "cdi" / "nvidia.yaml"
    spec = yaml.safe_load(path.read_text())
    check_spec(spec)
    assert spec["kind"] == "nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == ["0", "1", "2", *UUIDS, "all"]
    assert spec["containerEdits"]["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    by_name = {d["name"]: d["containerEdits"] for d in spec["devices"]}
    for index, uuid in enumerate(UUIDS):
        assert by_name[str(index)] == by_name[uuid]
        assert by_name[uuid]["deviceNodes"] == [{"path": f"/dev/nvidia{index}", "hostPath": "/dev/null"}]
        [mount] = by_name[uuid]["mounts"]
        assert mount["containerPath"] == f"/run/fake-nvidia/gpu{index}"
        assert Path(mount["hostPath"]).read_text() == uuid + "\n"  # what the container reads
    assert [m["containerPath"] for m in by_name["all"]["mounts"]] == [f"/run/fake-nvidia/gpu{i}" for i in range(3)]


def test_index_only_spec_names_no_uuid_anywhere(tmp_path: Path) -> None:
    """What ``--device-name-strategy=index`` (and toolkits before 1.16) write: the UUIDs appear in
    no device name (the fake's identity files are named by UUID, so only the names are checked)."""
    path = toolkit_cdi.write_toolkit_spec(tmp_path / "cdi", UUIDS, tmp_path / "identity", strategies=("index",))
    spec = yaml.safe_load(path.read_text())
    check_spec(spec)
    assert [d["name"] for d in spec["devices"]] == ["0", "1", "2", "all"]


def test_plugin_spec_names_device_ids_under_its_own_vendor_with_the_same_edits(tmp_path: Path) -> None:
    ids = [UUIDS[1], f"{UUIDS[0]}::0", f"{UUIDS[0]}::1"]
    path = toolkit_cdi.write_plugin_spec(tmp_path / "cdi", "k8s.device-plugin.nvidia.com/gpu", ids, tmp_path / "id")
    assert path.name == "k8s.device-plugin.nvidia.com-gpu.json"
    spec = json.loads(path.read_text())
    check_spec(spec)
    assert [d["name"] for d in spec["devices"]] == ids
    edits = [d["containerEdits"] for d in spec["devices"]]
    assert edits[0]["deviceNodes"][0]["path"] == "/dev/nvidia0"  # GPUs indexed in first-seen order
    assert edits[1] == edits[2] and edits[1]["deviceNodes"][0]["path"] == "/dev/nvidia1"  # replicas share their GPU
    assert Path(edits[1]["mounts"][0]["hostPath"]).read_text().strip() == UUIDS[0]


def test_rewriting_leaves_no_temporary_files(tmp_path: Path) -> None:
    for _ in range(2):
        toolkit_cdi.write_toolkit_spec(tmp_path / "cdi", UUIDS[:1], tmp_path / "identity")
    assert sorted(p.name for p in (tmp_path / "cdi").iterdir()) == ["nvidia.yaml"]


def test_the_module_runs_as_a_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.deviceplugins.toolkit_cdi",
            "--cdi-dir",
            str(tmp_path / "c"),
            "--identity-dir",
            str(tmp_path / "i"),
            UUIDS[0],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=8,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "c" / "nvidia.yaml")
