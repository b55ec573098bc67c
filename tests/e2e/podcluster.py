"""A cluster whose pods run the product's image and talk to the API server like installed pods.

:func:`pod_cluster` starts, for one test module: a control plane bound and advertised on the
host's address (``host_ip()``, reached from the pods through their CNI bridge; never loopback),
with the API server's audit log (``audit.AUDIT_POLICY``); a real node on it; kube-proxy
(``serviceproxy.py``) so that Services work (the ``kubernetes`` Service for in-cluster clients,
a webhook's Service for the API server); and the image of ``hack/image.sh`` imported into the
node's containerd. Everything is stopped afterwards and the host checked (``hoststate``).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.audit import AUDIT_POLICY
from tests.e2e.controlplane import REPO_ROOT, ControlPlane, find_binaries
from tests.e2e.realnode import RealNode, find_parts, host_ip
from tests.e2e.serviceproxy import ServiceProxy

IMAGE_SCRIPT = REPO_ROOT / "hack" / "image.sh"


class ImageMissing(RuntimeError):
    """The image of the current sources is not built (``hack/image.sh build``)."""


def find_image() -> tuple[Path, dict[str, str]]:
    """``(docker-archive path, image.env)`` of the current sources' image."""
    proc = subprocess.run(["bash", str(IMAGE_SCRIPT), "env"], capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise ImageMissing(f"run `hack/image.sh build` (a few minutes on a cold cache): {proc.stderr.strip()}")
    directory = Path(proc.stdout.strip())
    env = dict(line.split("=", 1) for line in (directory / "image.env").read_text().split())
    return directory / "dra-bridge.tar", env


@dataclass
class PodCluster:
    control_plane: ControlPlane
    node: RealNode
    proxy: ServiceProxy
    image: str
    #: seconds: control plane, node, kube-proxy's first sync, the image's import
    timings: dict[str, float]


@contextlib.contextmanager
def pod_cluster() -> Iterator[PodCluster]:
    """See the module docstring. Raises ``NodeBusy`` when another node holds the machine's one
    kubelet slot, ``ImageMissing``/``PartsMissing``/``BinariesMissing``/``ProxyMissing`` when a
    part is not built."""
    archive, env = find_image()
    parts = find_parts()
    cp = ControlPlane(bin_dir=find_binaries(), address=host_ip(), audit_policy=AUDIT_POLICY)
    cp.start()
    node = None
    try:
        node = RealNode(parts=parts, control_plane=cp)
        node.start()
        proxy = ServiceProxy(node)
        try:
            began = time.monotonic()
            proxy.start()
            synced = time.monotonic()
            node.ctr("images", "import", str(archive))
            timings = {
                "control_plane": cp.startup_seconds,
                "node": node.timings["start"],
                "kube_proxy": synced - began,
                "image_import": time.monotonic() - synced,
            }
            print("\npod cluster: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
            yield PodCluster(cp, node, proxy, env["IMAGE"], timings)
        finally:
            proxy.stop()
    finally:
        errors = node.stop() if node is not None and node.running else []
        left = node.leftovers() if node is not None and node.before is not None else []
        cp.stop()
        assert not errors and not left, f"the real node's teardown: {errors} {left}"
