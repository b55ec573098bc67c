"""Small bridge units: committed stubs match the .proto, state file, settings, interlock rules, exports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dra_bridge.bridge.errors import SettingsError, StateError
from dra_bridge.bridge.interlocks import socket_serves
from dra_bridge.bridge.podresources.client import to_json
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import Inventory, InventoryStore
from dra_bridge.translate.inventory.allocatable import InventoryDevice, group_allocatable

ROOT = Path(__file__).resolve().parents[2]
PROTOS = (
    ("podresources", "api"),
    ("deviceplugin", "api"),
    ("kubeletapi", "registration"),
    ("kubeletapi", "dra_v1"),
    ("kubeletapi", "dra_v1beta1"),
    ("kubeletapi", "dra_health_v1alpha1"),
)
"""Every committed .proto, as (package folder under bridge/, file stem)."""


@pytest.mark.parametrize(("folder", "stem"), PROTOS, ids=[f"{f}/{s}" for f, s in PROTOS])
def test_committed_stubs_match_a_fresh_generation(tmp_path: Path, folder: str, stem: str) -> None:
    # The proto sits where its package is imported from (dra_bridge.bridge.<folder>), so the
    # generated imports name the installed package.
    src = tmp_path / "src" / "dra_bridge" / "bridge" / folder
    src.mkdir(parents=True)
    (src / f"{stem}.proto").write_bytes((ROOT / "bridge" / folder / f"{stem}.proto").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            str(tmp_path / "src"),
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            f"dra_bridge/bridge/{folder}/{stem}.proto",
        ],
        check=True,
    )
    for name in (f"{stem}_pb2.py", f"{stem}_pb2.pyi", f"{stem}_pb2_grpc.py"):
        fresh = (out / "dra_bridge" / "bridge" / folder / name).read_text()
        assert fresh == (ROOT / "bridge" / folder / name).read_text(), f"{folder}/{name} is stale: regenerate it"


def test_wire_names_match_the_kubelet() -> None:
    from dra_bridge.bridge.podresources import api_pb2

    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert service.full_name == "v1.PodResourcesLister"
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]
    numbers = {f.name: f.number for f in api_pb2.ContainerDevices.DESCRIPTOR.fields}
    assert numbers == {"resource_name": 1, "device_ids": 2, "topology": 3}
    assert api_pb2.NUMANode.DESCRIPTOR.fields_by_name["ID"].number == 1
    assert "class_name" not in api_pb2.DynamicResource.DESCRIPTOR.fields_by_name
    assert api_pb2.DynamicResource.DESCRIPTOR.fields_by_name["claim_name"].number == 2


def test_protobuf_json_of_numa_zero_omits_the_id_and_still_groups() -> None:
    from dra_bridge.bridge.podresources import api_pb2

    msg = api_pb2.AllocatableResourcesResponse(
        devices=[
            api_pb2.ContainerDevices(
                resource_name="nvidia.com/gpu",
                device_ids=["GPU-a"],
                topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=0)]),
            ),
            api_pb2.ContainerDevices(
                resource_name="nvidia.com/gpu",
                device_ids=["GPU-a"],
                topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=1)]),
            ),
        ]
    )
    doc = to_json(msg)
    assert doc["devices"][0]["topology"]["nodes"] == [{}]
    assert doc["devices"][1]["topology"]["nodes"] == [{"ID": "1"}]
    assert group_allocatable(doc)[0]["numaNodes"] == [0, 1]


def test_missing_state_file_is_an_empty_inventory(tmp_path: Path) -> None:
    assert InventoryStore(tmp_path).load().empty


def test_state_round_trips_and_leaves_no_temp_files(tmp_path: Path) -> None:
    store = InventoryStore(tmp_path / "d")
    inv = Inventory(
        "n",
        (InventoryDevice(resourceName="nvidia.com/gpu", deviceID="GPU-a", numaNodes=[0]),),
        {"nvidia.com/gpu.product": "X"},
        {"GPU-a": {"productName": "X"}},
        5.0,
        identities={"gpu.intel.com/i915": {"card0-0": "0000:03:00.0"}},  # kept: the identity of when recorded
    )
    store.save(inv)
    assert store.load() == inv
    assert os.listdir(tmp_path / "d") == ["inventory.json"]


@pytest.mark.parametrize(
    "text",
    [
        "{",
        json.dumps({"apiVersion": "v0"}),
        json.dumps({"apiVersion": "state.dra-bridge.io/v1", "devices": [{"x": 1}]}),
    ],
    ids=["torn", "wrong-version", "bad-device"],
)
def test_unreadable_state_is_a_state_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "inventory.json").write_text(text)
    with pytest.raises(StateError, match=r"inventory\.json"):
        InventoryStore(tmp_path).load()


def test_flags_win_over_env_twins_which_win_over_defaults() -> None:
    s = Settings.from_args(
        ["--node-name", "a"],
        {"DRA_BRIDGE_NODE_NAME": "b", "DRA_BRIDGE_POLL_INTERVAL": "5", "DRA_BRIDGE_KUBELET_DIR": "/k"},
    )
    assert (s.node_name, s.poll_interval, s.kubelet_dir) == ("a", 5.0, "/k")


@pytest.mark.parametrize(
    ("env", "argv", "named"),
    [
        ({"DRA_BRIDGE_DRIVER_NAME": "gpu.example.com"}, [], "DRA_BRIDGE_DRIVER_NAME"),
        ({"DRIVER_NAME": "gpu.example.com"}, [], "DRIVER_NAME"),
        ({}, ["--driver-name", "gpu.example.com"], "--driver-name"),
        ({"DRA_BRIDGE_DRIVER_NAME": "dra-bridge.io", "DRIVER_NAME": "gpu.example.com"}, [], "DRIVER_NAME"),
    ],
    ids=["prefixed-env", "unprefixed-env", "flag", "one-of-two-differs"],
)
def test_a_driver_name_setting_is_refused_naming_it(env: dict[str, str], argv: list[str], named: str) -> None:
    with pytest.raises(SettingsError, match=f"{named} was removed.*DeviceClasses.*dra-bridge.io"):
        Settings.from_args(["--node-name", "a", *argv], env).validate()


@pytest.mark.parametrize(
    ("env", "argv", "named"),
    [
        ({"DRA_BRIDGE_DRIVER_NAME": "dra-bridge.io"}, [], "DRA_BRIDGE_DRIVER_NAME"),
        ({"DRIVER_NAME": "dra-bridge.io"}, [], "DRIVER_NAME"),
        ({}, ["--driver-name", "dra-bridge.io"], "--driver-name"),
    ],
    ids=["prefixed-env", "unprefixed-env", "flag"],
)
def test_the_one_driver_name_there_is_only_warns(
    env: dict[str, str], argv: list[str], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings.from_args(["--node-name", "a", *argv], env)
    settings.validate()
    assert f"{named} was removed and is ignored" in caplog.text


@pytest.mark.parametrize(
    ("env", "flag"),
    [
        ({"DRA_BRIDGE_NODE_NAME": ""}, "--node-name/DRA_BRIDGE_NODE_NAME"),
        ({"DRA_BRIDGE_NODE_NAME": "a", "DRA_BRIDGE_POLL_INTERVAL": "x"}, "--poll-interval/DRA_BRIDGE_POLL_INTERVAL"),
    ],
    ids=["empty-node-name", "poll-interval-not-a-number"],
)
def test_bad_settings_name_the_flag_and_env_twin(env: dict[str, str], flag: str) -> None:
    with pytest.raises(SettingsError, match=flag):
        Settings.from_env(env).validate()


@pytest.mark.parametrize(
    ("resource", "socket", "serves"),
    [
        ("nvidia.com/gpu", "nvidia-gpu.sock", True),
        ("nvidia.com/mig-1g.5gb", "nvidia-mig-1g.5gb.sock", True),
        ("nvidia.com/gpu", "nvidia-gpu.shared.sock", False),
        ("nvidia.com/gpu", "kubelet.sock", False),
        ("amd.com/gpu", "amdgpu.sock", True),
        ("gpu.intel.com/i915", "intel-gpu-i915.sock", True),
        ("amd.com/gpu", "sriov-net.sock", False),
    ],
)
def test_plugin_socket_names(resource: str, socket: str, serves: bool) -> None:
    assert socket_serves(resource, socket) is serves


@pytest.mark.parametrize(
    ("resource", "socket", "catalogued", "serves"),
    [
        ("amd.com/gpu", "amd.com_gpu", "amd.com_gpu", True),  # ROCm's plugin: no .sock suffix
        ("amd.com/gpu", "amd.com_gpu", "", False),
        ("gpu.intel.com/i915", "gpu.intel.com-i915.sock", "gpu.intel.com-i915.sock", True),
        ("amd.com/gpu", "kubelet_internal_checkpoint", "amd.com_gpu", False),
    ],
    ids=["amd-catalogued", "amd-unknown", "intel-catalogued", "checkpoint-file"],
)
def test_a_catalogued_plugin_socket_name_counts_whatever_its_suffix(
    resource: str, socket: str, catalogued: str, serves: bool
) -> None:
    assert socket_serves(resource, socket, catalogued) is serves


def test_agent_flags_are_documented_by_the_settings_field_docstrings() -> None:
    import argparse

    from dra_bridge.bridge.settings import build_parser

    helps = {a.dest: a.help or "" for a in build_parser(argparse.ArgumentParser())._actions}
    assert "the downward API" in helps["node_name"]
    assert "survive restarts" in helps["state_dir"] and "/var/lib/dra-bridge" in helps["state_dir"]


@pytest.mark.parametrize(
    "env",
    [
        pytest.param(
            {"KUBECONFIG": "/a/config:/b/config"},
            id="standard-kubeconfig-list",
            # the old name's DeprecationWarning (once per process) is test_cli's subject, not this one's
            marks=pytest.mark.filterwarnings("ignore:the environment variable KUBECONFIG is deprecated"),
        ),
        pytest.param({"DRA_BRIDGE_KUBECONFIG": "/a/config:/b/config"}, id="twin-list"),
    ],
)
def test_a_colon_separated_kubeconfig_list_is_refused_saying_one_file(env: dict[str, str]) -> None:
    with pytest.raises(
        SettingsError,
        match=r"--kubeconfig/DRA_BRIDGE_KUBECONFIG: one file, not a "
        r"colon-separated list \('/a/config:/b/config'\)",
    ):
        Settings.from_env({"DRA_BRIDGE_NODE_NAME": "a", **env}).validate()


def test_a_kubeconfig_path_with_a_colon_that_exists_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "with:colon"
    path.write_text("{}")
    assert Settings.from_env(
        {"DRA_BRIDGE_NODE_NAME": "a", "DRA_BRIDGE_KUBECONFIG": str(path)}
    ).validate().kubeconfig == str(path)
