"""Where container edits come from (docs/design.md D10): the composing part of Allocate answers
(translate/allocate_edits.py), the catalog's ``edits`` block (translate/catalog_edits.py), and the
order toolkit -> recorded answer -> static recipe (translate/edit_sources.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dra_bridge.translate.allocate_edits import ResourceEdits, compose
from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.cdi import PreparedDevice, own_spec
from dra_bridge.translate.edit_sources import device_edits, identities, preparable, remembering
from dra_bridge.translate.errors import CatalogError
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice
from dra_bridge.translate.inventory.drm import DrmNode

UID = "0a1b2c3d-0000-4000-8000-000000000001"


def node(path: str, host: str | None = None, perms: str = "rw") -> dict[str, str]:
    return {"container_path": path, "host_path": host or path, "permissions": perms}


def two(a: dict[str, Any], b: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose({"dev-a": a, "dev-b": b})["devices"]


@pytest.mark.parametrize(
    ("a", "b", "kept_a"),
    [
        # a variable with the same value everywhere composes; one per device index does not
        (
            {"envs": {"VENDOR_DRIVER_CAPS": "compute"}},
            {"envs": {"VENDOR_DRIVER_CAPS": "compute"}},
            {"env": ["VENDOR_DRIVER_CAPS=compute"]},
        ),
        ({"envs": {"GPU_INDEX": "0"}}, {"envs": {"GPU_INDEX": "1"}}, {}),
        # a variable whose NAME is per device composes
        ({"envs": {"VENDOR_DEV_A": "on"}}, {"envs": {"VENDOR_DEV_B": "on"}}, {"env": ["VENDOR_DEV_A=on"]}),
        # list-valued by name or value, even when both agree
        ({"envs": {"ROCR_VISIBLE_DEVICES": "0"}}, {"envs": {"ROCR_VISIBLE_DEVICES": "0"}}, {}),
        ({"envs": {"X_VISIBLE_DEVICES": "a"}}, {}, {}),
        ({"envs": {"LIST": "a,b"}}, {"envs": {"LIST": "a,b"}}, {}),
        # device nodes add up; one path with two host devices does not
        (
            {"devices": [node("/dev/kfd"), node("/dev/dri/card0")]},
            {"devices": [node("/dev/kfd"), node("/dev/dri/card1")]},
            {
                "deviceNodes": [
                    {"path": "/dev/dri/card0", "hostPath": "/dev/dri/card0", "permissions": "rw"},
                    {"path": "/dev/kfd", "hostPath": "/dev/kfd", "permissions": "rw"},
                ]
            },
        ),
        ({"devices": [node("/dev/accel", "/dev/accel0")]}, {"devices": [node("/dev/accel", "/dev/accel1")]}, {}),
        ({"devices": [node("/dev/x", perms="rwx")]}, {}, {}),
        # mounts add up, read-only kept; MPS mounts and variables are never replayed
        (
            {"mounts": [{"container_path": "/etc/v/a", "host_path": "/run/v/a", "read_only": True}]},
            {},
            {"mounts": [{"hostPath": "/run/v/a", "containerPath": "/etc/v/a", "options": ["bind", "ro"]}]},
        ),
        (
            {
                "envs": {"CUDA_MPS_PIPE_DIRECTORY": "/run/x/pipe"},
                "mounts": [
                    {"container_path": "/run/x/pipe", "host_path": "/run/x/pipe"},
                    {"container_path": "/dev/shm", "host_path": "/run/x/shm"},
                    {"container_path": "/opt/z", "host_path": "/run/nvidia/mps/gpu/z"},
                ],
            },
            {},
            {},
        ),
        # the plugin's own CDI names and annotations leave with it
        (
            {"cdi_devices": [{"name": "k8s.device-plugin.nvidia.com/gpu=a"}], "annotations": {"cdi.k8s.io/x": "y"}},
            {},
            {},
        ),
    ],
    ids=[
        "same-value-kept",
        "per-index-dropped",
        "per-device-name-kept",
        "list-name-dropped",
        "visible-dropped",
        "comma-dropped",
        "nodes-add-up",
        "node-clash-dropped",
        "bad-permissions-dropped",
        "mount-kept",
        "mps-never",
        "plugin-cdi-never",
    ],
)
def test_only_what_composes_is_kept(a: dict[str, Any], b: dict[str, Any], kept_a: dict[str, Any]) -> None:
    assert two(a, b)["dev-a"] == kept_a


def test_composition_does_not_depend_on_order_and_says_what_it_dropped() -> None:
    answers = {
        "d1": {"envs": {"GPU_INDEX": "0", "K": "v"}, "devices": [node("/dev/d1")]},
        "d0": {"envs": {"GPU_INDEX": "1", "K": "v", "ROCR_VISIBLE_DEVICES": "1"}, "devices": [node("/dev/d0")]},
    }
    forward, backward = compose(answers), compose(dict(reversed(list(answers.items()))))
    assert forward == backward
    assert forward["dropped"] == [
        "list-valued variable ROCR_VISIBLE_DEVICES (the last device's value would win)",
        "variable GPU_INDEX, set to a different value per device (per index)",
    ]


def test_the_shipped_catalog_asks_amd_and_intel_plugins_and_never_nvidias(catalog: Catalog) -> None:
    amd, xe, nvidia = (catalog.lookup(r) for r in ("amd.com/gpu", "gpu.intel.com/xe", "nvidia.com/gpu"))
    assert amd and amd.edits and amd.edits.ask_allocate and amd.edits.socket == "amd.com_gpu"
    assert xe and xe.edits and xe.edits.ask_allocate and xe.edits.socket == "gpu.intel.com-xe.sock"
    assert nvidia and nvidia.edits is None


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ("[1]", "resources[0].edits: must be a mapping"),
        ("{recipe: x}", "resources[0].edits.recipe: unknown key"),
        ("{deviceNodes: [dev/x]}", "resources[0].edits.deviceNodes: must be a list of absolute paths"),
        ("{deviceNodes: ['/dev/{index}']}", "the only placeholders are {id} and {card}"),
        ("{specDeviceNodes: ['/dev/{id}']}", "spec-level nodes are the same for every device"),
        ("{allocate: {sideEffectFree: yes please, socket: a.sock}}", "allocate.sideEffectFree: must be a boolean"),
        ("{allocate: {sideEffectFree: true, socket: ../kubelet.sock}}", "allocate.socket: must be a socket file name"),
        (
            "{allocate: {sideEffectFree: true, socket: a.sock, name: b}}",
            "must be a mapping with sideEffectFree and socket",
        ),
    ],
)
def test_a_bad_edits_block_in_a_user_catalog_is_named(edits: str, message: str) -> None:
    text = (
        "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nresources:\n"
        f"  - {{name: example.com/gpu, kind: gpu, deviceClass: example-gpu.example.com, edits: {edits}}}\n"
    )
    with pytest.raises(
        CatalogError, match=r"^mine\.yaml: resources\[0\]\.edits.*" + re.escape(message.split(": ")[-1])
    ):
        load_catalog(text, "mine.yaml")


def test_a_user_catalog_entry_may_bring_its_own_recipe() -> None:
    text = (
        "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nresources:\n"
        "  - {name: example.com/gpu, kind: gpu, deviceClass: example-gpu.example.com,\n"
        "     edits: {allocate: {sideEffectFree: false, socket: example.sock}, deviceNodes: ['/dev/ex/{id}']}}\n"
    )
    catalog = load_catalog(text, "mine.yaml")
    edits = device_edits("example.com/gpu", "3", {}, catalog)
    assert edits and edits.source == "recipe" and edits.device == {"deviceNodes": [{"path": "/dev/ex/3"}]}
    mapping = catalog.lookup("example.com/gpu")
    assert mapping and mapping.edits and not mapping.edits.ask_allocate


RECORDED: dict[str, ResourceEdits] = {
    "amd.com/gpu": {
        "devices": {
            "0000:03:00.0": {"deviceNodes": [{"path": "/dev/dri/card1", "hostPath": "/dev/dri/card1"}]},
            "0000:04:00.0": {},
        },
        "dropped": ["x"],
    },
    "example.com/gpu": {"devices": {"e0": {}}, "dropped": ["list-valued variable EXAMPLE_VISIBLE_DEVICES (...)"]},
}


DRM = (
    DrmNode("card1", "0000:03:00.0", 226, 1),
    DrmNode("renderD129", "0000:03:00.0", 226, 129),
    DrmNode("card0", "0000:04:00.0", 226, 0),
    DrmNode("renderD128", "0000:04:00.0", 226, 128),
)


def test_a_recorded_answer_comes_before_the_static_recipe(catalog: Catalog) -> None:
    recorded = device_edits("amd.com/gpu", "0000:03:00.0", RECORDED, catalog, drm=DRM)
    assert recorded and recorded.source == "allocate" and recorded.spec == {}
    recipe = device_edits("amd.com/gpu", "0000:04:00.0", RECORDED, catalog, drm=DRM)  # its answer kept nothing
    assert recipe and recipe.source == "recipe" and recipe.spec == {"deviceNodes": [{"path": "/dev/kfd"}]}
    assert device_edits("example.com/gpu", "e0", RECORDED, catalog) is None


def test_a_recipe_gives_the_real_card_and_render_nodes_of_the_pci_address(catalog: Catalog) -> None:
    """Not /dev/dri/by-path (a symlink CDI refuses): canonical paths, type and numbers from sysfs."""
    recipe = device_edits("amd.com/gpu", "0000:04:00.0", {}, catalog, drm=DRM)
    assert recipe and recipe.identity == "0000:04:00.0"
    assert recipe.device == {
        "deviceNodes": [
            {"path": "/dev/dri/card0", "type": "c", "major": 226, "minor": 0},
            {"path": "/dev/dri/renderD128", "type": "c", "major": 226, "minor": 128},
        ]
    }
    intel = device_edits("gpu.intel.com/i915", "card1-0", {}, catalog, drm=DRM)  # Intel needs the render node too
    assert intel and [n["path"] for n in intel.device["deviceNodes"]] == [  # type: ignore[attr-defined]
        "/dev/dri/card1",
        "/dev/dri/renderD129",
    ]
    assert device_edits("amd.com/gpu", "0000:09:00.0", {}, catalog, drm=DRM) is None  # sysfs shows no such GPU


def test_the_spec_is_rewritten_from_the_edits_the_checkpoint_kept(catalog: Catalog) -> None:
    edits = device_edits("amd.com/gpu", "0000:03:00.0", RECORDED, catalog, drm=DRM)
    assert edits is not None
    device = PreparedDevice(
        ("gpu",),
        "n",
        "gpu-amd0",
        (f"dra-bridge.io/claim={UID}-gpu-amd0",),
        DeviceId("amd.com/gpu", "0000:03:00.0"),
        edits,
    )
    spec = own_spec(UID, [device], lambda r, i: None)  # no lookup needed: the device keeps its edits
    assert spec and spec["devices"][0]["containerEdits"] == edits.device


def test_devices_without_an_edit_source_are_not_published_with_a_reason(catalog: Catalog) -> None:
    devices = [
        InventoryDevice(resourceName=r, deviceID=i, numaNodes=[])
        for r, i in (
            ("nvidia.com/gpu", "GPU-ok"),
            ("nvidia.com/gpu", "GPU-missing"),
            ("amd.com/gpu", "0000:04:00.0"),
            ("example.com/gpu", "e0"),
            ("example.com/gpu", "e1"),
        )
    ]
    kept, warnings = preparable(
        devices, catalog, RECORDED, lambda ids: {i: i == "nvidia.com/gpu=GPU-ok" for i in ids}, drm=DRM
    )
    assert [d["deviceID"] for d in kept] == ["GPU-ok", "0000:04:00.0"]
    assert len(warnings) == 2
    assert warnings[0].startswith("resource example.com/gpu: 2 device(s) not published: no edit source")
    assert "EXAMPLE_VISIBLE_DEVICES" in warnings[0] and "no static recipe" in warnings[0]
    assert warnings[1].startswith("resource nvidia.com/gpu: 1 device(s) not published")
    assert "nvidia.com/gpu=GPU-missing" in warnings[1] and "NVIDIA_VISIBLE_DEVICES" in warnings[1]
    kept, warnings = preparable(devices[:2], catalog, {}, None)  # no CDI directory to look in: not checked
    assert len(kept) == 2 and not warnings


def test_a_toolkit_device_that_resolved_before_is_kept_for_the_health_rule(catalog: Catalog) -> None:
    devices = [InventoryDevice(resourceName="nvidia.com/gpu", deviceID=i, numaNodes=[]) for i in ("GPU-a", "GPU-b")]
    now = {"nvidia.com/gpu=GPU-a": True, "nvidia.com/gpu=GPU-b": True}
    seen: set[str] = set()
    kept, _ = preparable(devices, catalog, {}, remembering(lambda ids: {i: now[i] for i in ids}, seen))
    assert len(kept) == 2 and seen == set(now)
    now["nvidia.com/gpu=GPU-b"] = False  # no longer resolves: unhealthy, tainted, not withheld
    kept, warnings = preparable(
        devices, catalog, {}, remembering(lambda ids: {i: now[i] for i in ids}, seen), resolved_before=seen
    )
    assert len(kept) == 2 and not warnings
    kept, warnings = preparable(devices, catalog, {}, lambda ids: {i: now[i] for i in ids})  # never resolved
    assert [d["deviceID"] for d in kept] == ["GPU-a"] and "nvidia.com/gpu=GPU-b" in warnings[0]


def test_a_recorded_answer_never_replays_its_drm_paths_after_the_card_order_changed(catalog: Catalog) -> None:
    edits = device_edits("amd.com/gpu", "0000:03:00.0", RECORDED, catalog, drm=DRM)  # answered /dev/dri/card1
    assert edits and edits.identity == "0000:03:00.0"
    device = PreparedDevice(
        ("gpu",),
        "n",
        "gpu-amd0",
        (f"dra-bridge.io/claim={UID}-gpu-amd0",),
        DeviceId("amd.com/gpu", "0000:03:00.0"),
        edits,
    )
    swapped = (
        DrmNode("card0", "0000:03:00.0", 226, 0),
        DrmNode("renderD128", "0000:03:00.0", 226, 128),
        DrmNode("card1", "0000:04:00.0", 226, 1),
    )
    spec = own_spec(UID, [device], None, swapped)
    assert spec and spec["devices"][0]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/dri/card0", "type": "c", "major": 226, "minor": 0}
    ]


def test_the_identity_recorded_with_the_inventory_wins_over_what_the_card_name_means_now(catalog: Catalog) -> None:
    """Intel's card0-0 named the GPU at 0000:03:00.0 when recorded; after a reboot card0 is another GPU."""
    recorded_then = identities(
        [InventoryDevice(resourceName="gpu.intel.com/i915", deviceID="card1-0", numaNodes=[])], DRM
    )
    assert recorded_then == {"gpu.intel.com/i915": {"card1-0": "0000:03:00.0"}}
    swapped = (
        DrmNode("card0", "0000:03:00.0", 226, 0),
        DrmNode("renderD128", "0000:03:00.0", 226, 128),
        DrmNode("card1", "0000:04:00.0", 226, 1),
        DrmNode("renderD129", "0000:04:00.0", 226, 129),
    )
    edits = device_edits("gpu.intel.com/i915", "card1-0", {}, catalog, None, swapped, recorded_then)
    assert edits and edits.identity == "0000:03:00.0"
    assert [n["path"] for n in edits.device["deviceNodes"]] == ["/dev/dri/card0", "/dev/dri/renderD128"]  # type: ignore[attr-defined]
