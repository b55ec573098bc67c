"""A real Kubernetes control plane on loopback: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, each in its own process group.

No kubelet runs: tests create kubelet-less nodes (see ``kubeapi.create_fake_node``).
The binaries come from ``DRA_BRIDGE_K8S_BIN`` or from ``hack/control-plane.sh build``.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.e2e.certs import CertificateAuthority, KeyPair, service_account_keys
from tests.e2e.kubeapi import KubeClient
from tests.e2e.processes import Component, die_with_parent, free_port, tail

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "hack" / "control-plane.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")

#: resource.k8s.io/v1 plus the older shapes, so tests can prove them against a real server.
DEFAULT_RUNTIME_CONFIG = "resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
#: The node-lifecycle controller would taint kubelet-less nodes unreachable and evict pods.
DISABLED_CONTROLLERS = ("node-lifecycle-controller",)
SERVICE_CIDR = "10.96.0.0/16"
#: An objects-only API server: no ServiceAccount admission (no controller creates the
#: ``default`` ServiceAccount), and room for many concurrent creates.
OBJECTS_ONLY_APISERVER_ARGS = (
    "--disable-admission-plugins=ServiceAccount",
    "--max-requests-inflight=1600",
    "--max-mutating-requests-inflight=800",
)


class BinariesMissing(RuntimeError):
    """The control-plane binaries are neither given nor built."""


def find_binaries() -> Path:
    """The directory holding all four binaries: ``$DRA_BRIDGE_K8S_BIN`` or the build cache."""
    given = os.environ.get("DRA_BRIDGE_K8S_BIN")
    if given:
        directory = Path(given)
        source = f"DRA_BRIDGE_K8S_BIN={given}"
    else:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT), "env"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BinariesMissing(
                "the test control plane is not built: run `hack/control-plane.sh build` "
                "(the first build compiles etcd and Kubernetes from the Go module proxy, "
                "roughly 30-45 minutes on 2 cores) or set DRA_BRIDGE_K8S_BIN to a directory "
                f"with {', '.join(BINARIES)}. ({proc.stderr.strip()})"
            )
        directory = Path(proc.stdout.strip())
        source = "hack/control-plane.sh env"
    missing = [b for b in BINARIES if not os.access(directory / b, os.X_OK)]
    if missing:
        raise BinariesMissing(f"{source}: {directory} lacks {', '.join(missing)}")
    return directory


def _new_workdir() -> Path:
    """A fresh temp dir named after this process; removes those of dead processes first
    (a SIGKILLed pytest cannot clean up; its components die with it, see above)."""
    tmp = Path(tempfile.gettempdir())
    for stale in tmp.glob("dra-cp-*-*"):
        pid = stale.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"dra-cp-{os.getpid()}-"))


@dataclass
class ControlPlane:
    """Starts and stops the four components; exposes what a test needs to reach them."""

    bin_dir: Path
    runtime_config: str = DEFAULT_RUNTIME_CONFIG
    extra_apiserver_args: Sequence[str] = ()
    #: The API server binds and advertises here (the ``kubernetes`` Service's endpoint). Pods on
    #: a real node reach a host address through their CNI bridge, never the host's loopback.
    address: str = "127.0.0.1"
    #: Only etcd and kube-apiserver: no controller-manager (no node lifecycle, garbage collector,
    #: namespace or service-account controllers) and no scheduler; for objects-only clusters
    #: (``scale_cluster.py``). Namespaces are never finalized and need no ServiceAccount.
    objects_only: bool = False
    #: Called with etcd's client URL once etcd answers, before kube-apiserver starts (objects
    #: written straight into etcd, ``scale_cluster.py``: the API server's watch cache lists them).
    before_apiserver: Callable[[str], None] | None = None
    #: An audit Policy (``audit.k8s.io/v1``): the API server logs its events as JSON lines to
    #: :attr:`audit_log` (``--audit-policy-file``, ``--audit-log-path``); None: no audit log.
    audit_policy: dict[str, object] | None = None
    workdir: Path = field(default_factory=lambda: _new_workdir())
    components: dict[str, Component] = field(default_factory=dict)
    server: str = ""
    etcd_url: str = ""
    version: str = ""
    etcd_version: str = ""
    startup_seconds: float = 0.0
    #: The CA that signed every certificate (set by ``start``): a real node's come from it too.
    ca: CertificateAuthority | None = None

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def audit_log(self) -> Path:
        return self.log_dir / "audit.log"

    @property
    def client_cert(self) -> Path:
        return self.pki / "admin.crt"

    @property
    def client_key(self) -> Path:
        return self.pki / "admin.key"

    def client(self) -> KubeClient:
        return KubeClient(self.server, self.ca_file, self.client_cert, self.client_key)

    # -- start-up -------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> None:
        began = time.monotonic()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.version, self.etcd_version = self._versions()
        try:
            self._start_all(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def _versions(self) -> tuple[str, str]:
        """``(kube-apiserver's gitVersion, etcd's version)``, e.g. ``("v1.36.3", "3.6.16")``."""
        found = []
        for binary in ("kube-apiserver", "etcd"):
            out = subprocess.run(
                [str(self.bin_dir / binary), "--version"],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
            found.append(out.splitlines()[0].split()[-1])
        return found[0], found[1]

    def _start_all(self, deadline: float) -> None:
        ca = self.ca = CertificateAuthority(self.pki)
        sa = service_account_keys(self.pki)
        serving = ca.issue(
            "apiserver",
            "kube-apiserver",
            server=True,
            dns_names=(
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
            ip_addresses=tuple(dict.fromkeys(("127.0.0.1", self.address, "10.96.0.1"))),
        )
        admin = ca.issue("admin", "dra-bridge-tests", organization="system:masters", client=True)
        kcm = ca.issue("controller-manager", "system:kube-controller-manager", client=True)
        sched = ca.issue("scheduler", "system:kube-scheduler", client=True)
        # The API server's identity towards kubelets (logs, exec) on a real node (realnode.py).
        kubelet_client = ca.issue("kubelet-client", "kube-apiserver-kubelet-client", client=True)

        etcd_port, etcd_peer, api_port = free_port(), free_port(), free_port()
        self.server = f"https://{self.address}:{api_port}"
        self._write_kubeconfig(self.kubeconfig, "dra-bridge-tests", admin)
        kcm_config = self._write_kubeconfig(
            self.workdir / "controller-manager.kubeconfig", "kube-controller-manager", kcm
        )
        sched_config = self._write_kubeconfig(self.workdir / "scheduler.kubeconfig", "kube-scheduler", sched)

        etcd_url = self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                "--name=test",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=test=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait_http("etcd", f"{etcd_url}/health", deadline)
        if self.before_apiserver is not None:
            self.before_apiserver(etcd_url)

        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                f"--bind-address={self.address}",
                f"--advertise-address={self.address}",
                f"--secure-port={api_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={ca.cert_file}",
                f"--kubelet-client-certificate={kubelet_client.cert}",
                f"--kubelet-client-key={kubelet_client.key}",
                f"--kubelet-certificate-authority={ca.cert_file}",
                # A real node's InternalIP is a local address; its name would go to DNS.
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa.cert}",
                f"--service-account-signing-key-file={sa.key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                f"--runtime-config={self.runtime_config}",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
                *self._audit_args(),
                *(OBJECTS_ONLY_APISERVER_ARGS if self.objects_only else ()),
                *self.extra_apiserver_args,
            ],
        )
        self._wait_http("kube-apiserver", f"{self.server}/readyz", deadline, tls=True)
        if self.objects_only:
            return

        common = ["--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false", "--v=1"]
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={kcm_config}",
                f"--authentication-kubeconfig={kcm_config}",
                f"--authorization-kubeconfig={kcm_config}",
                f"--secure-port={free_port()}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                f"--service-account-private-key-file={sa.key}",
                f"--root-ca-file={ca.cert_file}",
                f"--cluster-signing-cert-file={ca.cert_file}",
                f"--cluster-signing-key-file={ca.pair.key}",
                "--use-service-account-credentials=true",
                "--controllers=" + ",".join(["*", *(f"-{c}" for c in DISABLED_CONTROLLERS)]),
                *common,
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={sched_config}",
                f"--authentication-kubeconfig={sched_config}",
                f"--authorization-kubeconfig={sched_config}",
                f"--secure-port={free_port()}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
                *common,
            ],
        )
        # Both components answer /healthz only once their informers are wired up.
        for name in ("kube-controller-manager", "kube-scheduler"):
            port = self._flag(name, "--secure-port")
            self._wait_http(name, f"https://127.0.0.1:{port}/healthz", deadline, tls=True, verify=False)

    def _audit_args(self) -> list[str]:
        if self.audit_policy is None:
            return []
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(self.audit_policy, sort_keys=False))
        # blocking mode (the default): an event is in the file before the call returns
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxage=0",
            "--audit-log-maxbackup=0",
        ]

    def _flag(self, component: str, flag: str) -> str:
        for arg in self.components[component].args:
            if arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
        raise KeyError(flag)

    def _write_kubeconfig(self, path: Path, user: str, pair: KeyPair) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "test",
            "clusters": [
                {"name": "test", "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)}}
            ],
            "users": [{"name": user, "user": {"client-certificate": str(pair.cert), "client-key": str(pair.key)}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.log_dir / f"{name}.log"
        fh = log.open("ab")
        proc = subprocess.Popen(
            [str(self.bin_dir / name), *args],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            preexec_fn=die_with_parent,
        )
        self.components[name] = Component(name, proc, log, args, fh)

    def _wait_http(self, name: str, url: str, deadline: float, *, tls: bool = False, verify: bool = True) -> None:
        ctx: ssl.SSLContext | None = None
        if tls:
            if verify:
                ctx = ssl.create_default_context(cafile=str(self.ca_file))
                ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
            else:
                ctx = ssl._create_unverified_context()
        last = ""
        while time.monotonic() < deadline:
            comp = self.components[name]
            if not comp.alive():
                raise RuntimeError(
                    f"{name} exited with {comp.proc.returncode} during start-up; log {comp.log}:\n{tail(comp.log)}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except OSError as err:
                last = str(err)
            time.sleep(0.25)
        raise TimeoutError(
            f"{name} not ready at {url}: {last}; log {self.components[name].log}:\n{tail(self.components[name].log)}"
        )

    # -- diagnostics and teardown ----------------------------------------------------------

    def log_tails(self, lines: int = 30) -> str:
        parts = []
        for comp in self.components.values():
            state = "running" if comp.alive() else f"exited {comp.proc.returncode}"
            parts.append(f"----- {comp.name} ({state}) {comp.log} -----\n{tail(comp.log, lines)}")
        return "\n".join(parts)

    def stop(self, *, keep_workdir: bool = False) -> None:
        for comp in reversed(list(self.components.values())):
            comp.stop()
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
