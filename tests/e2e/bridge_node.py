"""The dra-bridge agent on the real node (``realnode.py``), as the DaemonSet would run it.

:func:`start_bridge` runs ``dra-bridge run`` as a process: kubelet dir = the node's
``--root-dir`` (PodResources, ``plugins_registry/``, ``plugins/``), its own state dir, and
the API server as the ServiceAccount ``dra-bridge`` bound to a ClusterRole derived from
``bridge/access.py`` (:func:`bridge_kubeconfig`), never as an administrator. Its
``--cdi-dir`` is the node's one CDI directory (containerd's ``cdi_spec_dirs``), so the host's
``/etc/cdi`` and ``/var/run/cdi`` are never touched.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from dra_bridge.bridge.access import API_CALLS
from dra_bridge.bridge.state import Inventory, InventoryStore
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import rbac_rules
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.names import NODE_MODE_LABEL
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, Obj, api_path, wait_for, wait_for_object
from tests.e2e.processes import die_with_parent, tail
from tests.e2e.realnode import RealNode

V1 = "resource.k8s.io/v1"
DRIVER = "dra-bridge.io"
CHECKPOINT_FILE = "prepared-claims.json"


def our_slices(kube: KubeClient, node: str) -> list[Obj]:
    return kube.list(api_path(V1, "resourceslices"), field_selector=f"spec.nodeName={node},spec.driver={DRIVER}")


def published_ids(kube: KubeClient, node: str) -> dict[str, str]:
    """Published device name -> recorded device ID (the UUID)."""
    return {
        d["name"]: d["attributes"][f"{DRIVER}/deviceID"]["string"]
        for s in our_slices(kube, node)
        for d in s["spec"]["devices"]
    }


def seed_inventory(state_dir: Path, node: str, devices: list[tuple[str, str]]) -> None:
    """What the agent would have recorded while the node was legacy: (resource, device ID) pairs."""
    InventoryStore(state_dir).save(
        Inventory(
            node=node,
            recorded_at=time.time(),
            devices=tuple(InventoryDevice(resourceName=r, deviceID=d, numaNodes=[]) for r, d in devices),
        )
    )


def prepared_claims(state_dir: Path) -> dict[str, Any]:
    """The agent's checkpoint: claim UID -> entry (empty without the file)."""
    path = state_dir / CHECKPOINT_FILE
    if not path.exists():
        return {}
    claims: dict[str, Any] = json.loads(path.read_text())["claims"]
    return claims


@contextlib.contextmanager
def device_classes(kube: KubeClient, catalog: Catalog, mig_profiles: Sequence[str] = ()) -> Iterator[list[str]]:
    """``catalog``'s DeviceClasses (``dra-migrate classes``, with MIG classes for ``mig_profiles`` only),
    created where missing, removed afterwards."""
    created = []
    for cls in catalog.device_classes(list(mig_profiles)):
        name = cls["metadata"]["name"]
        if not kube.exists(api_path(V1, "deviceclasses", name=name)):
            kube.create(api_path(V1, "deviceclasses"), {"apiVersion": V1, **cls})
            created.append(name)
    try:
        yield created
    finally:
        for name in created:
            kube.delete(api_path(V1, "deviceclasses", name=name), ignore_missing=True)


@contextlib.contextmanager
def bridge_kubeconfig(cp: ControlPlane, kube: KubeClient, namespace: str, path: Path) -> Iterator[Path]:
    """A kubeconfig for ServiceAccount ``<namespace>/dra-bridge`` with the ClusterRole of
    ``rbac_rules(API_CALLS)`` (what the chart grants), removed afterwards."""
    role = f"dra-bridge-{namespace}"
    kube.create(api_path("v1", "serviceaccounts", namespace), {"metadata": {"name": "dra-bridge"}})
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": role}, "rules": rbac_rules(API_CALLS)}
    )
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "dra-bridge", "namespace": namespace}],
        },
    )
    try:
        token = kube.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/dra-bridge/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
        )["status"]["token"]
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "bridge",
                    "clusters": [
                        {"name": "e2e", "cluster": {"server": cp.server, "certificate-authority": str(cp.ca_file)}}
                    ],
                    "users": [{"name": "dra-bridge", "user": {"token": token}}],
                    "contexts": [{"name": "bridge", "context": {"cluster": "e2e", "user": "dra-bridge"}}],
                }
            )
        )
        yield path
    finally:
        for p in (
            f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}",
            f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}",
        ):
            with contextlib.suppress(KubeError):
                kube.delete(p, ignore_missing=True)


@dataclass
class Bridge:
    proc: subprocess.Popen[bytes]
    log: Path
    state_dir: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def check_alive(self) -> Literal[False]:
        """False while running (for ``wait_for`` lambdas); raises with the log when it exited."""
        if not self.alive():
            raise RuntimeError(f"dra-bridge exited with {self.proc.returncode}:\n{tail(self.log, 60)}")
        return False

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_bridge(
    node: RealNode, kubeconfig: Path, state_dir: Path, log: Path, extra: Sequence[str] = (), pod_uid: str = ""
) -> Bridge:
    """``dra-bridge run`` for the node (see the module docstring), ``extra`` flags last (they win),
    as the instance of pod ``pod_uid`` if given (``--pod-uid``: a surge rollout's socket names);
    returns once both its sockets exist (the kubelet then registers the DRA plugin)."""
    exe = Path(sys.executable).parent / "dra-bridge"
    args = [
        str(exe),
        "run",
        f"--node-name={node.name}",
        f"--kubelet-dir={node.root_dir}",
        f"--state-dir={state_dir}",
        f"--kubeconfig={kubeconfig}",
        "--poll-interval=0.5",
        "--settle-period=1",
        "--health-port=0",
        "--log-level=INFO",
        f"--cdi-dir={node.cdi_dir}",
        *([f"--pod-uid={pod_uid}"] if pod_uid else []),
        *extra,
    ]
    fh = log.open("ab")
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
    )
    fh.close()
    bridge = Bridge(proc, log, state_dir)
    instance = f"-{pod_uid}" if pod_uid else ""
    sockets = (
        node.root_dir / "plugins_registry" / f"{DRIVER}{instance}-reg.sock",
        node.root_dir / "plugins" / DRIVER / f"dra{instance}.sock",
    )
    wait_for(lambda: bridge.check_alive() or all(s.exists() for s in sockets), 30, "the bridge's plugin sockets")
    return bridge


def set_mode(kube: KubeClient, node: str, mode: str | None) -> None:
    kube.patch(api_path("v1", "nodes", name=node), {"metadata": {"labels": {NODE_MODE_LABEL: mode}}})


def claim_of(kube: KubeClient, namespace: str, pod: Obj, entry: str) -> Obj:
    """The ResourceClaim generated for the pod's ``resourceClaims`` entry."""
    path = api_path("v1", "pods", namespace, pod["metadata"]["name"])
    p = wait_for_object(
        kube,
        path,
        lambda p: any(
            s["name"] == entry and s.get("resourceClaimName")
            for s in p.get("status", {}).get("resourceClaimStatuses", [])
        ),
        30,
        f"pod {pod['metadata']['name']}'s claim {entry}",
    )
    (name,) = [s["resourceClaimName"] for s in p["status"]["resourceClaimStatuses"] if s["name"] == entry]
    return kube.get(api_path(V1, "resourceclaims", namespace, name))


def pod_device_health(kube: KubeClient, namespace: str, pod: str, resource_id: str) -> str:
    """The health the kubelet reports for ``resource_id`` (a device's first CDI ID) in the pod's
    ``status.containerStatuses[].allocatedResourcesStatus``; empty when it reports none."""
    status = kube.get(api_path("v1", "pods", namespace, pod)).get("status", {})
    for container in status.get("containerStatuses") or []:
        for resource in container.get("allocatedResourcesStatus") or []:
            for device in resource.get("resources") or []:
                if device.get("resourceID") == resource_id:
                    return str(device.get("health", ""))
    return ""


def check_health_stream(
    kube: KubeClient, node: RealNode, bridge: Bridge, namespace: str, pod: str, uuid: str, toolkit_spec: Path
) -> None:
    """The kubelet opened the agent's device health stream (the agent logs it; the kubelet's log has
    no Unimplemented WatchResources) and copies its verdicts into the pod's status: Unknown (no NVML
    here), Unhealthy while the toolkit's CDI spec is away, Unknown again once it is back."""
    wait_for(
        lambda: bridge.check_alive() or "opened the device health stream" in bridge.log_text(),
        30,
        "the kubelet's NodeWatchResources stream",
    )
    refused = [
        line
        for line in (node.log_dir / "kubelet.log").read_text(errors="replace").splitlines()
        if "WatchResources" in line and "Unimplemented" in line
    ]
    assert not refused, refused[:3]
    rid = f"nvidia.com/gpu={uuid}"

    def health() -> str:
        return pod_device_health(kube, namespace, pod, rid)

    wait_for(lambda: health() == "Unknown", 30, f"{pod}'s device health Unknown", observe=health)
    away = toolkit_spec.with_suffix(".away")  # not a spec name: neither the agent nor containerd reads it
    toolkit_spec.rename(away)
    try:
        wait_for(lambda: health() == "Unhealthy", 30, f"{pod}'s device health Unhealthy", observe=health)
    finally:
        away.rename(toolkit_spec)
    wait_for(lambda: health() == "Unknown", 30, f"{pod}'s device health Unknown again", observe=health)
