"""Edits that would let a container escape are refused, and only plain names reach the file system."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.cdi import render_spec
from dra_bridge.translate.edit_escape import escape_refusals, plain_name
from dra_bridge.translate.edit_sources import device_edits, preparable
from dra_bridge.translate.errors import ClaimError
from dra_bridge.translate.inventory.allocatable import InventoryDevice

SAFE = {
    "env": ["AMD_SOMETHING=1"],
    "deviceNodes": [{"path": "/dev/dri/renderD128", "hostPath": "/dev/dri/renderD128"}],
    "mounts": [{"hostPath": "/opt/rocm", "containerPath": "/opt/rocm", "options": ["bind", "ro"]}],
}


@pytest.mark.parametrize(
    ("edits", "why"),
    [
        ({"mounts": [{"hostPath": "/", "containerPath": "/host"}]}, "host's root"),
        ({"mounts": [{"hostPath": "//./", "containerPath": "/host"}]}, "host's root"),
        ({"mounts": [{"hostPath": "/run/containerd/containerd.sock", "containerPath": "/c.sock"}]}, "sockets"),
        ({"mounts": [{"hostPath": "/var/run", "containerPath": "/r"}]}, "sockets"),
        ({"mounts": [{"hostPath": "/srv/x/docker.sock", "containerPath": "/d.sock"}]}, "runtime's socket"),
        ({"mounts": [{"hostPath": "/var/lib/kubelet/pod-resources", "containerPath": "/p"}]}, "kubelet"),
        ({"deviceNodes": [{"path": "/dev/sda"}]}, "block device"),
        ({"deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/nvme0n1"}]}, "block device"),
        ({"deviceNodes": [{"path": "/dev/disk0", "type": "b", "major": 8, "minor": 0}]}, "block device"),
        ({"mounts": [{"hostPath": "/dev/mapper/root", "containerPath": "/r"}]}, "block device"),
        ({"env": ["LD_PRELOAD=/tmp/evil.so"]}, "LD_PRELOAD"),
        ({"env": ["LD_AUDIT=/x"]}, "LD_AUDIT"),
        ({"env": ["GCONV_PATH=/x"]}, "GCONV_PATH"),
        ({"deviceNodes": [{"path": "/dev/dri/../sda"}]}, "'..'"),
        ({"mounts": [{"hostPath": "/opt/../etc", "containerPath": "/e"}]}, "'..'"),
        ({"mounts": [{"hostPath": "/opt/rocm", "containerPath": "/x/../../etc"}]}, "'..'"),
        ({"hooks": [{"hookName": "createContainer", "path": "/bin/sh"}]}, "hooks"),
    ],
    ids=[
        "root",
        "root-spelled",
        "containerd-sock",
        "var-run",
        "docker-sock-anywhere",
        "kubelet-dir",
        "sda",
        "nvme-ns",
        "type-b",
        "mapper-mount",
        "ld-preload",
        "ld-audit",
        "gconv",
        "dotdot-node",
        "dotdot-host",
        "dotdot-target",
        "hooks",
    ],
)
def test_escaping_edits_are_refused_with_a_reason(edits: dict[str, Any], why: str) -> None:
    refusals = escape_refusals(edits)
    assert refusals and why in "; ".join(refusals)


def test_safe_edits_pass_and_a_host_block_check_is_asked() -> None:
    assert escape_refusals(SAFE) == []
    assert escape_refusals(SAFE, is_block=lambda p: p == "/dev/dri/renderD128") == [
        "device node /dev/dri/renderD128 is a block device"
    ]
    # a character device node (an NVMe controller, not a namespace) is not a block device
    assert escape_refusals({"deviceNodes": [{"path": "/dev/nvme0"}]}) == []


@pytest.mark.parametrize("name", ["0000:03:00.0", "card0-1", "GPU-x::2", "0a1b2c3d-0000-4000-8000-000000000001"])
def test_plain_names(name: str) -> None:
    assert plain_name(name)


@pytest.mark.parametrize("name", ["", "..", ".", "x/../../y", "a/b", "../etc", "-x", "x\t", "a b"])
def test_names_that_are_not_plain(name: str) -> None:
    assert not plain_name(name)


def _recorded(device_id: str, edits: dict[str, Any]) -> dict[str, Any]:
    return {"amd.com/gpu": {"devices": {device_id: edits}, "dropped": []}}


def test_a_recorded_answer_that_escapes_is_not_published_and_the_warning_names_the_device() -> None:
    catalog = load_catalog()
    bad = {"env": ["LD_PRELOAD=/x.so"], "deviceNodes": [{"path": "/dev/dri/renderD128"}]}
    recorded: Any = {
        "amd.com/gpu": {"devices": {"0000:03:00.0": bad, "0000:04:00.0": SAFE}, "dropped": []},
    }
    devices = [
        InventoryDevice(resourceName="amd.com/gpu", deviceID="0000:03:00.0", numaNodes=[]),
        InventoryDevice(resourceName="amd.com/gpu", deviceID="0000:04:00.0", numaNodes=[]),
    ]
    # never a fallback to the catalog's recipe for a device whose plugin answered an escape
    assert device_edits("amd.com/gpu", "0000:03:00.0", recorded, catalog) is None
    kept, warnings = preparable(devices, catalog, recorded, None)
    assert [d["deviceID"] for d in kept] == ["0000:04:00.0"]
    assert len(warnings) == 1 and "device 0000:03:00.0" in warnings[0] and "LD_PRELOAD" in warnings[0]


def test_a_device_id_that_is_not_a_plain_name_never_becomes_a_path() -> None:
    catalog = load_catalog()
    assert device_edits("amd.com/gpu", "../../sda", {}, catalog) is None
    kept, warnings = preparable(
        [InventoryDevice(resourceName="amd.com/gpu", deviceID="x/../../sda", numaNodes=[])], catalog, {}, None
    )
    assert kept == [] and "not a plain name" in warnings[0]


def test_the_spec_writer_refuses_escaping_edits_as_a_last_line() -> None:
    with pytest.raises(ClaimError, match="mounts the host's root"):
        render_spec("u1", [("d", {"mounts": [{"hostPath": "/", "containerPath": "/h"}]})])
    with pytest.raises(ClaimError, match="block device"):
        render_spec("u1", [("d", SAFE)], [{"deviceNodes": [{"path": "/dev/sdb"}]}])
    with pytest.raises(ClaimError, match="not a plain name"):
        render_spec("../u1", [("d", SAFE)])
