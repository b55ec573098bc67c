"""A real node for the ``real_node`` tests: kubelet + containerd 2.x + runc, registered with
the session's control plane (``controlplane.py``). Parts from ``hack/real-node.sh build``.

One per machine: the kubelet's device-plugin directory is hard-coded, so a lock file there
serialises nodes across processes. Everything else lives in a temp dir. ``stop()`` stops the
processes by PID (pods and containerd shims too), then :func:`hoststate.restore` undoes what
they changed on the host (mounts, kubepods cgroups, the CNI bridge, iptables, sysctls).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.e2e import hoststate
from tests.e2e.controlplane import REPO_ROOT, SERVICE_CIDR, ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for, wait_for_object
from tests.e2e.processes import Component, die_with_parent, free_port, tail

BUILD_SCRIPT = REPO_ROOT / "hack" / "real-node.sh"
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")  # hard-coded in the kubelet
DEVICE_CHECKPOINT = DEVICE_PLUGIN_DIR / "kubelet_internal_checkpoint"
LOCK_FILE = Path("/run/lock/dra-bridge-real-node.lock")


class NodeBusy(TimeoutError):
    """Another real node (another test run on this machine) holds the one kubelet slot."""


NODE_NAME = "dra-real-node"
BRIDGE = "drabr99"  # our own bridge, on a private subnet nothing else here uses
SUBNET = "10.244.99.0/24"
PARTS = ("kubelet", "containerd", "ctr", "containerd-shim-runc-v2", "runc", "node.env")


class PartsMissing(RuntimeError):
    """The node's parts are not built, or this host cannot run a node."""


def find_parts() -> Path:
    """The node directory of ``hack/real-node.sh env`` (binaries, images/, node.env)."""
    if os.geteuid() != 0:
        raise PartsMissing("a real node needs root (mounts, cgroups, a network bridge)")
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), "env"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PartsMissing(
            "the real node is not built: run `hack/real-node.sh build` (kubelet and containerd from "
            f"the Go module proxy, Debian packages, local images; minutes on a cold cache). ({proc.stderr.strip()})"
        )
    directory = Path(proc.stdout.strip())
    missing = [p for p in PARTS if not (directory / p).exists()]
    if missing:
        raise PartsMissing(f"{directory} lacks {', '.join(missing)}: run `hack/real-node.sh build`")
    return directory


def host_ip() -> str:
    """The address of the default route's interface: the kubelet refuses loopback as node IP.
    A UDP connect sends nothing; it only asks the kernel which source address it would use."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))
        addr: str = sock.getsockname()[0]
        return addr


def _ready_since(node: dict[str, Any], since: float) -> bool:
    """Ready, as reported by a kubelet heartbeat at or after ``since`` (epoch seconds): a
    restarted kubelet's, not the Node object's stale condition."""
    for c in node.get("status", {}).get("conditions", []):
        if c["type"] == "Ready" and c["status"] == "True":
            beat = datetime.datetime.fromisoformat(c["lastHeartbeatTime"].replace("Z", "+00:00"))
            return beat.timestamp() >= int(since)
    return False


@dataclass
class RealNode:
    parts: Path
    control_plane: ControlPlane
    name: str = NODE_NAME
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix=f"dra-node-{os.getpid()}-")))
    components: dict[str, Component] = field(default_factory=dict)
    before: hoststate.HostState | None = None
    node_ip: str = ""
    kubelet_port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _lock: IO[str] | None = None

    @property
    def cdi_dir(self) -> Path:
        """containerd's CDI spec directory (``cdi_spec_dirs``)."""
        return self.workdir / "cdi"

    @property
    def root_dir(self) -> Path:
        """The kubelet's ``--root-dir``; DRA plugins register under ``plugins_registry/``."""
        return self.workdir / "kubelet"

    @property
    def containerd_socket(self) -> Path:
        return self.workdir / "containerd" / "containerd.sock"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def kube(self) -> KubeClient:
        return self.control_plane.client()

    # -- start ------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        began = time.monotonic()
        self._take_lock(timeout)
        self.before = hoststate.HostState.take()
        try:
            self.env = dict(line.split("=", 1) for line in (self.parts / "node.env").read_text().split())
            self.node_ip, self.kubelet_port = host_ip(), free_port()
            for d in ("logs", "cdi", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volume-plugins"):
                (self.workdir / d).mkdir(parents=True, exist_ok=True)
            self._start_containerd(began + timeout)
            self._write_kubelet_files()
            self.start_kubelet(began + timeout, clear_device_checkpoint=True)
            wait_for(
                lambda: self.kube.exists(api_path("v1", "serviceaccounts", "default", "default")),
                max(1.0, began + timeout - time.monotonic()),
                "ServiceAccount default/default",
            )
        except BaseException:
            self.stop()
            raise
        self.timings["start"] = time.monotonic() - began

    def _take_lock(self, timeout: float) -> None:
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        self._lock = LOCK_FILE.open("w")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self._lock.close()
                    self._lock = None
                    raise NodeBusy(
                        f"another real node holds {LOCK_FILE} (one kubelet per machine: another "
                        "test run on this machine?)"
                    ) from None
                time.sleep(0.5)

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = self.log_dir / f"{name}.log"
        fh = log.open("ab")
        proc = subprocess.Popen(
            [str(self.parts / name), *args],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            env=env,
            preexec_fn=die_with_parent,
        )
        self.components[name] = Component(name, proc, log, args, fh)

    def _start_containerd(self, deadline: float) -> None:
        w = self.workdir
        cni = {
            "cniVersion": "1.0.0",
            "name": "dra-real-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(w / "cni" / "ipam"),
                        "ranges": [[{"subnet": SUBNET}]],
                        # Service ClusterIPs via the bridge (kube-proxy's DNAT, serviceproxy.py); no default route
                        "routes": [{"dst": SERVICE_CIDR}],
                    },
                }
            ],
        }
        (w / "cni" / "net.d" / "10-dra-real-node.conflist").write_text(json.dumps(cni, indent=1))
        cri = "plugins.'io.containerd.cri.v1.runtime'"
        config = f"""version = 3
root = '{w}/containerd/root'
state = '{w}/containerd/state'
disabled_plugins = ['io.containerd.nri.v1.nri']
[grpc]
  address = '{self.containerd_socket}'
[ttrpc]
  address = '{self.containerd_socket}.ttrpc'
[plugins.'io.containerd.internal.v1.opt']
  path = '{w}/containerd/opt'
[{cri}]
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = ['{self.cdi_dir}']
  netns_mounts_under_state_dir = true
[{cri}.containerd]
  default_runtime_name = 'runc'
[{cri}.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = '{(self.parts / "runc").resolve()}'
[{cri}.cni]
  bin_dirs = ['{(self.parts / "cni").resolve()}']
  conf_dir = '{w}/cni/net.d'
  max_conf_num = 1
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '{self.env["PAUSE_IMAGE"]}'
"""
        (w / "containerd.toml").write_text(config)
        # The shim is found on PATH: the node directory's first.
        env = {**os.environ, "PATH": f"{self.parts}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        self._spawn("containerd", [f"--config={w / 'containerd.toml'}"], env)
        wait_for(
            lambda: self.containerd_socket.exists() or self._check_alive("containerd"),
            max(1.0, deadline - time.monotonic()),
            "containerd's socket",
        )
        for image in ("busybox.tar", "pause.tar"):
            self.ctr("images", "import", str(self.parts / "images" / image))

    def ctr(self, *args: str) -> str:
        """Runs ``ctr -n k8s.io`` against this node's containerd; returns its output."""
        return subprocess.run(
            [str(self.parts / "ctr"), f"--address={self.containerd_socket}", "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout

    def _write_kubelet_files(self) -> None:
        cp, w = self.control_plane, self.workdir
        assert cp.ca is not None, "the control plane is not started"
        client = cp.ca.issue(f"node-{self.name}", f"system:node:{self.name}", organization="system:nodes", client=True)
        serving = cp.ca.issue(
            f"node-{self.name}-serving", self.name, server=True, dns_names=(self.name,), ip_addresses=(self.node_ip,)
        )
        cp._write_kubeconfig(w / "kubelet.kubeconfig", f"system:node:{self.name}", client)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "address": self.node_ip,
            "port": self.kubelet_port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            "tlsCertFile": str(serving.cert),
            "tlsPrivateKeyFile": str(serving.key),
            "authentication": {
                "x509": {"clientCAFile": str(cp.ca_file)},
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "podLogsDir": str(w / "pod-logs"),
            "volumePluginDir": str(w / "volume-plugins"),
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "registerWithTaints": [],
            "serializeImagePulls": False,
        }
        (w / "kubelet.yaml").write_text(yaml.safe_dump(config))

    def start_kubelet(self, deadline: float | None = None, *, clear_device_checkpoint: bool = False) -> None:
        """Starts the kubelet and waits for a Ready, untainted Node. ``clear_device_checkpoint``:
        a node on which no device plugin ever registered (the device manager keeps a resource's
        capacity for 5 minutes after its plugin left, across restarts, through that checkpoint)."""
        deadline = deadline or time.monotonic() + 60
        DEVICE_PLUGIN_DIR.mkdir(parents=True, exist_ok=True)
        if clear_device_checkpoint:
            DEVICE_CHECKPOINT.unlink(missing_ok=True)
        w = self.workdir
        since = time.time()
        self._spawn(
            "kubelet",
            [
                f"--config={w / 'kubelet.yaml'}",
                f"--kubeconfig={w / 'kubelet.kubeconfig'}",
                f"--root-dir={self.root_dir}",
                f"--cert-dir={w / 'kubelet-pki'}",
                f"--hostname-override={self.name}",
                f"--node-ip={self.node_ip}",
            ],
        )
        path = api_path("v1", "nodes", name=self.name)
        wait_for_object(
            self.kube,
            path,
            lambda n: self._check_alive("kubelet") or _ready_since(n, since),
            max(1.0, deadline - time.monotonic()),
            f"Node {self.name} Ready",
        )
        # The test control plane runs no node-lifecycle controller: nothing lifts this taint.
        if self.kube.get(path).get("spec", {}).get("taints"):
            self.kube.patch(path, {"spec": {"taints": None}})

    def _check_alive(self, name: str) -> bool:
        comp = self.components[name]
        if not comp.alive():
            raise RuntimeError(f"{name} exited with {comp.proc.returncode}; log {comp.log}:\n{tail(comp.log)}")
        return False

    @property
    def running(self) -> bool:
        return "containerd" in self.components

    def device_plugins_seen(self) -> bool:
        """Whether a device plugin registered since the checkpoint was last removed."""
        try:
            data = json.loads(DEVICE_CHECKPOINT.read_text()).get("Data", {})
        except (OSError, ValueError):
            return False
        return bool(data.get("RegisteredDevices") or data.get("PodDeviceEntries"))

    def reset(self) -> None:
        """A node on which no device plugin ever registered: kubelet stopped, its checkpoint and
        the Node object (with the resources' capacity) removed, kubelet started again."""
        began = time.monotonic()
        self.components.pop("kubelet").stop()
        self.kube.delete(api_path("v1", "nodes", name=self.name), ignore_missing=True)
        self.start_kubelet(clear_device_checkpoint=True)
        self.timings["reset"] = time.monotonic() - began

    def restart_kubelet(self, *, clear_device_checkpoint: bool = False) -> None:
        """Stops the kubelet (containerd and the pods keep running) and starts it again."""
        began = time.monotonic()
        self.components.pop("kubelet").stop()
        self.start_kubelet(clear_device_checkpoint=clear_device_checkpoint)
        self.timings["restart_kubelet"] = time.monotonic() - began

    # -- stop -------------------------------------------------------------------------------

    def stop(self, *, keep_workdir: bool = False) -> list[str]:
        """Stops everything by PID and undoes its host changes; returns what could not be undone."""
        began = time.monotonic()
        if "kubelet" in self.components:
            self.components.pop("kubelet").stop()
        shims = hoststate.processes_using(self.containerd_socket)
        pods = hoststate.cgroup_pids(t for t in hoststate.cgroup_tops() if t.split("/", 1)[1].startswith("kubepods"))
        hoststate.kill_and_wait(shims | pods)
        if "containerd" in self.components:
            self.components.pop("containerd").stop()
        errors: list[str] = []
        if self.before is not None:
            if keep_workdir:
                shutil.copytree(self.log_dir, Path(f"{self.workdir}-logs"), dirs_exist_ok=True)
            errors = hoststate.restore(self.before, self.workdir, bridge=BRIDGE)
        with contextlib.suppress(Exception):
            self.kube.delete(api_path("v1", "nodes", name=self.name), ignore_missing=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        self.timings["stop"] = time.monotonic() - began
        return errors

    def leftovers(self) -> list[str]:
        """What the node left on the host after :meth:`stop` (empty when nothing)."""
        assert self.before is not None
        return hoststate.leftovers(self.before, self.workdir)

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(f"----- {c.name} {c.log} -----\n{tail(c.log, lines)}" for c in self.components.values())
