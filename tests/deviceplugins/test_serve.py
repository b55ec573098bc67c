"""The test plugin as a real process against the fake kubelet: registration, every RPC through
the bridge's client, bad requests, health, kubelet restarts and SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dra_bridge.bridge.deviceplugin.client import DevicePluginClient, to_json
from dra_bridge.bridge.errors import DevicePluginError
from tests.deviceplugins.conftest import ROOT, UUIDS, Spawn, wait_until
from tests.deviceplugins.fake_kubelet import FakeRegistration

A, B = UUIDS[:2]
ALLOCATED = {
    "envvar": {"envs": {"NVIDIA_VISIBLE_DEVICES": f"{B},{A}"}},
    "volume-mounts": {
        "envs": {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"},
        "mounts": [
            {"container_path": f"/var/run/nvidia-container-devices/{B}", "host_path": "/dev/null"},
            {"container_path": f"/var/run/nvidia-container-devices/{A}", "host_path": "/dev/null"},
        ],
    },
    "cdi-cri": {
        "cdi_devices": [
            {"name": f"k8s.device-plugin.nvidia.com/gpu={B}"},
            {"name": f"k8s.device-plugin.nvidia.com/gpu={A}"},
        ]
    },
}


async def test_registers_with_version_endpoint_resource_and_options(kubelet: FakeRegistration, spawn: Spawn) -> None:
    await spawn("envvar")
    request = to_json(await kubelet.wait_for(1))
    assert request == {
        "version": "v1beta1",
        "endpoint": "nvidia-gpu.sock",
        "resource_name": "nvidia.com/gpu",
        "options": {"get_preferred_allocation_available": True},
    }


@pytest.mark.parametrize("strategy", sorted(ALLOCATED))
async def test_every_rpc_answers_in_nvidias_shape(kubelet: FakeRegistration, spawn: Spawn, strategy: str) -> None:
    plugin = await spawn(strategy, f"{A},{B}@1")
    client = plugin.client
    options = to_json(await client.options())
    assert options == {"get_preferred_allocation_available": True}  # pre_start_required false
    assert [to_json(d) for d in await client.devices()] == [
        {"ID": A, "health": "Healthy"},
        {"ID": B, "health": "Healthy", "topology": {"nodes": [{"ID": "1"}]}},
    ]
    assert await client.preferred_allocation([B, A], [B], 2) == [B, A]
    assert await client.preferred_allocation([B, A], [], 1) == [A]
    assert to_json(await client.allocate([B, A])) == ALLOCATED[strategy]


async def test_cdi_cri_writes_its_spec_before_serving(kubelet: FakeRegistration, spawn: Spawn, short_dir: Path) -> None:
    await spawn("cdi-cri")
    spec = json.loads((short_dir / "cdi" / "k8s.device-plugin.nvidia.com-gpu.json").read_text())
    assert spec["kind"] == "k8s.device-plugin.nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == [A, B]
    assert (short_dir / "gpu-identity" / A).read_text() == A + "\n"


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (["GPU-nope"], "INVALID_ARGUMENT: invalid allocation request for 'nvidia.com/gpu': unknown device: GPU-nope"),
        ([], "INVALID_ARGUMENT: invalid allocation request for 'nvidia.com/gpu': no device IDs"),
    ],
    ids=["unknown-device", "no-devices"],
)
async def test_a_bad_request_is_an_error_answer_and_the_plugin_lives_on(
    kubelet: FakeRegistration, spawn: Spawn, ids: list[str], message: str
) -> None:
    plugin = await spawn("envvar")
    with pytest.raises(DevicePluginError, match=message):
        await plugin.client.allocate(ids)
    with pytest.raises(DevicePluginError, match=r"INVALID_ARGUMENT: .*allocation size 5"):
        await plugin.client.preferred_allocation([A], [], 5)
    assert plugin.process.poll() is None
    assert to_json(await plugin.client.allocate([A])) == {"envs": {"NVIDIA_VISIBLE_DEVICES": A}}


async def test_health_file_marks_devices_unhealthy_in_list_and_watch(
    kubelet: FakeRegistration, spawn: Spawn, short_dir: Path
) -> None:
    health = short_dir / "unhealthy"
    plugin = await spawn("envvar", f"{A},{B}", "nvidia.com/gpu", "--health-file", str(health))
    assert {d.health for d in await plugin.client.devices()} == {"Healthy"}
    health.write_text(B + "\n")
    # ListAndWatch's first answer is the current list: poll it until the file was read
    await wait_until(lambda: "health: unhealthy" in plugin.stderr() and B in plugin.stderr(), "health re-read")
    assert [(d.ID, d.health) for d in await plugin.client.devices()] == [(A, "Healthy"), (B, "Unhealthy")]


async def test_re_registers_on_a_fresh_socket_when_the_kubelet_restarts(
    kubelet: FakeRegistration, spawn: Spawn
) -> None:
    plugin = await spawn("envvar")
    await kubelet.wait_for(1)
    await kubelet.restart()  # deletes the plugin's socket, as the kubelet does
    second = await kubelet.wait_for(2)
    assert second.endpoint == "nvidia-gpu.sock" and plugin.socket.exists()
    fresh = DevicePluginClient(plugin.socket, timeout=3.0)
    try:
        assert to_json(await fresh.allocate([A])) == {"envs": {"NVIDIA_VISIBLE_DEVICES": A}}
    finally:
        await fresh.close()


async def test_waits_for_a_kubelet_that_is_not_there_yet(short_dir: Path, spawn: Spawn) -> None:
    plugin = await spawn("envvar")  # serves before any kubelet.sock exists
    kubelet = FakeRegistration(short_dir / "device-plugins")
    await kubelet.start()
    try:
        assert (await kubelet.wait_for(1)).resource_name == "nvidia.com/gpu"
    finally:
        await kubelet.stop()
    assert plugin.process.poll() is None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_stops_it_cleanly_removing_its_socket(
    kubelet: FakeRegistration, spawn: Spawn, sig: signal.Signals
) -> None:
    plugin = await spawn("volume-mounts")
    await kubelet.wait_for(1)
    plugin.process.send_signal(sig)
    assert plugin.process.wait(5) == 0
    assert not plugin.socket.exists()
    assert "stopped, removed" in plugin.stderr()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "envvar", "--devices", "GPU-a,GPU-a"], "duplicate device IDs"),
        (["--strategy", "cdi-annotations", "--devices", "GPU-a"], "invalid Strategy value"),
    ],
    ids=["duplicate-devices", "unknown-strategy"],
)
def test_bad_arguments_exit_2_naming_the_problem(short_dir: Path, args: list[str], message: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.deviceplugins.serve",
            "--resource",
            "nvidia.com/gpu",
            "--kubelet-dir",
            str(short_dir / "dp"),
            "--cdi-dir",
            str(short_dir / "cdi"),
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=8,
    )
    assert result.returncode == 2 and message in result.stderr, result.stderr
