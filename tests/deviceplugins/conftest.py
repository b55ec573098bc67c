"""Fixtures: a short temp directory (unix socket paths are limited to ~107 bytes), the fake
kubelet's Registration service in it, and test plugins started as real processes."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket as unix_socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dra_bridge.bridge.deviceplugin.client import DevicePluginClient
from tests.deviceplugins.fake_kubelet import FakeRegistration
from tests.deviceplugins.strategies import socket_name

ROOT = Path(__file__).resolve().parents[2]
UUIDS = [
    "GPU-11111111-2222-3333-4444-555555555555",
    "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
    "GPU-0f0f0f0f-1e1e-2d2d-3c3c-4b4b4b4b4b4b",
]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def kubelet(short_dir: Path) -> AsyncIterator[FakeRegistration]:
    fake = FakeRegistration(short_dir / "device-plugins")
    await fake.start()
    yield fake
    await fake.stop()


@dataclass
class RunningPlugin:
    process: subprocess.Popen[bytes]
    socket: Path
    log: Path
    client: DevicePluginClient

    def stderr(self) -> str:
        return self.log.read_text()

    def terminate(self, timeout: float = 5.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


Spawn = Callable[..., Awaitable[RunningPlugin]]


def accepting(path: Path) -> bool:
    """Whether a unix socket accepts connections: the file exists from bind, before gRPC listens."""
    with unix_socket.socket(unix_socket.AF_UNIX, unix_socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


async def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"{what}: not after {timeout} s")
        await asyncio.sleep(0.05)


@pytest.fixture
async def spawn(short_dir: Path) -> AsyncIterator[Spawn]:
    """Start ``python -m tests.deviceplugins.serve`` with ``--kubelet-dir <short>/device-plugins``
    and ``--cdi-dir <short>/cdi``; waits for its socket; SIGTERM (then kill) at teardown."""
    running: list[RunningPlugin] = []

    async def start(
        strategy: str, devices: str = ",".join(UUIDS[:2]), resource: str = "nvidia.com/gpu", *extra: str
    ) -> RunningPlugin:
        plugin_dir = short_dir / "device-plugins"
        name = extra[extra.index("--socket-name") + 1] if "--socket-name" in extra else socket_name(resource)
        socket = plugin_dir / name
        log = short_dir / f"plugin-{len(running)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.deviceplugins.serve",
                    "--strategy",
                    strategy,
                    "--resource",
                    resource,
                    "--devices",
                    devices,
                    "--kubelet-dir",
                    str(plugin_dir),
                    "--cdi-dir",
                    str(short_dir / "cdi"),
                    *extra,
                ],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        plugin = RunningPlugin(process, socket, log, DevicePluginClient(socket, timeout=3.0))
        running.append(plugin)
        await wait_until(lambda: accepting(socket) or process.poll() is not None, f"socket {socket}")
        assert process.poll() is None, plugin.stderr()
        return plugin

    yield start
    for plugin in running:
        await plugin.client.close()
        if plugin.process.poll() is None:
            plugin.process.send_signal(signal.SIGTERM)
            try:
                plugin.process.wait(3)
            except subprocess.TimeoutExpired:
                plugin.process.kill()
                plugin.process.wait()
