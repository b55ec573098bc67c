"""kube-proxy (iptables mode) for a real node (``realnode.py``): Services work for its pods.

What pods installed by a chart need: in-cluster clients reach the API server through the
``kubernetes`` Service (``KUBERNETES_SERVICE_HOST``/``PORT``, injected by the kubelet, are its
ClusterIP), and the API server calls a webhook through its Service's ClusterIP. Both are DNAT
rules kube-proxy writes into the host's nat table (PREROUTING for pods, OUTPUT for host
processes such as the API server and hostNetwork pods). The control plane must bind and
advertise an address the pods' CNI bridge reaches (``ControlPlane(address=host_ip())``): the
``kubernetes`` Service's endpoint. Everything stays on this machine.

Started after the node and stopped before it: the node's teardown (``hoststate.restore``)
removes the rules and chains kube-proxy added. Host sysctls are left alone (conntrack sizing
off, no localhost NodePorts, so no ``route_localnet``).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.e2e.processes import die_with_parent, free_port, tail
from tests.e2e.realnode import SUBNET, RealNode


class ProxyMissing(RuntimeError):
    """kube-proxy is not built (``hack/real-node.sh build`` builds it)."""


@dataclass
class ServiceProxy:
    node: RealNode
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.node.log_dir / "kube-proxy.log"

    def start(self, timeout: float = 30.0) -> None:
        exe = self.node.parts / "kube-proxy"
        if not exe.exists():
            raise ProxyMissing(f"{exe} is missing: run `hack/real-node.sh build`")
        cp, w = self.node.control_plane, self.node.workdir
        assert cp.ca is not None, "the control plane is not started"
        # bound to the built-in ClusterRole system:node-proxier by the default binding
        pair = cp.ca.issue("kube-proxy", "system:kube-proxy", client=True)
        kubeconfig = cp._write_kubeconfig(w / "kube-proxy.kubeconfig", "system:kube-proxy", pair)
        health = free_port()
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "mode": "iptables",
            "hostnameOverride": self.node.name,
            "clusterCIDR": SUBNET,
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{health}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # leave the host's conntrack sysctls and route_localnet alone
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "iptables": {"localhostNodePorts": False, "syncPeriod": "30s", "minSyncPeriod": "0s"},
            "nodePortAddresses": [f"{self.node.node_ip}/32"],
        }
        (w / "kube-proxy.yaml").write_text(yaml.safe_dump(config))
        fh = self.log.open("ab")
        self.proc = subprocess.Popen(
            [str(exe), f"--config={w / 'kube-proxy.yaml'}", "--v=1"],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=w,
            preexec_fn=die_with_parent,
        )
        fh.close()
        deadline = time.monotonic() + timeout
        while not self._synced():
            if self.proc.poll() is not None:
                raise RuntimeError(f"kube-proxy exited with {self.proc.returncode}:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"kube-proxy wrote no Service rules in {timeout}s:\n{tail(self.log)}")
            time.sleep(0.25)

    def _synced(self) -> bool:
        """The ``kubernetes`` Service's rule is in the nat table."""
        out = subprocess.run(
            ["iptables", "-t", "nat", "-S", "KUBE-SERVICES"], capture_output=True, text=True, check=False
        ).stdout
        return "default/kubernetes:https" in out

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
