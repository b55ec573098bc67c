"""cert-manager on the test control plane, and what a kubelet and ``cmctl renew`` do, for the
chart's cert-manager mode (``test_cert_manager_e2e.py``).

- :func:`find_cert_manager` -> the directory ``hack/cert-manager.sh env`` prints (controller,
  cainjector, crds.yaml of the pinned release); not built: fails in CI, skips locally.
- :func:`installed_crds`: its CRDs created and Established; deleted on exit.
- :func:`running_cert_manager`: its controller (limited to one namespace, which is also its
  cluster resource namespace) and cainjector as local processes with the admin kubeconfig.
- :func:`renew`: a re-issuance forced as ``cmctl renew`` forces it (the ``Issuing`` condition
  True with reason ManuallyTriggered, through the status subresource).
- :class:`SecretFiles`: a Secret's keys mirrored into files as the kubelet updates a Secret
  volume: a delay after each change, then an atomic swap of the ``..data`` link.
- :func:`served_serial`: the serial number of the certificate a TLS server presents.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from dra_bridge.kube.errors import Conflict, KubeError
from tests.e2e.controlplane import REPO_ROOT, ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.processes import Component, die_with_parent, free_port, tail

BUILD_SCRIPT = REPO_ROOT / "hack" / "cert-manager.sh"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CM = "cert-manager.io/v1"


def find_cert_manager() -> Path:
    """The directory with ``controller``, ``cainjector`` and ``crds.yaml``."""
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), "env"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        msg = f"cert-manager is not built: run `hack/cert-manager.sh build` ({proc.stderr.strip()})"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return Path(proc.stdout.strip())


def _established(kube: KubeClient, name: str) -> bool:
    conditions = kube.get(f"{CRDS}/{name}").get("status", {}).get("conditions", [])
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@contextlib.contextmanager
def installed_crds(kube: KubeClient, directory: Path) -> Iterator[list[str]]:
    """cert-manager's CRDs (``crds.yaml``) created and Established; deleted on exit."""
    # libyaml's loader when present: the pure-Python one takes seconds over these 390 kB
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds = [d for d in yaml.load_all((directory / "crds.yaml").read_text(), Loader=loader) if d]
    names = [c["metadata"]["name"] for c in crds]
    try:
        for crd in crds:
            kube.create(CRDS, crd)
        for name in names:
            wait_for(functools.partial(_established, kube, name), 30, f"CRD {name} Established")
        yield names
    finally:
        for name in names:
            kube.delete(f"{CRDS}/{name}", ignore_missing=True)


def _spawn(directory: Path, name: str, args: list[str], log_dir: Path) -> Component:
    log = log_dir / f"cert-manager-{name}.log"
    fh = log.open("ab")
    proc = subprocess.Popen(
        [str(directory / name), *args],
        stdin=subprocess.DEVNULL,
        stdout=fh,
        stderr=subprocess.STDOUT,
        cwd=log_dir,
        preexec_fn=die_with_parent,
    )
    return Component(name, proc, log, args, fh)


@contextlib.contextmanager
def running_cert_manager(cp: ControlPlane, directory: Path, namespace: str, log_dir: Path) -> Iterator[list[Component]]:
    """The controller (only ``namespace``, ClusterIssuers off) and the cainjector, stopped on exit."""
    kubeconfig = f"--kubeconfig={cp.kubeconfig}"
    components = [
        _spawn(
            directory,
            "controller",
            [
                kubeconfig,
                "--leader-elect=false",
                f"--namespace={namespace}",
                f"--cluster-resource-namespace={namespace}",
                f"--metrics-listen-address=127.0.0.1:{free_port()}",
                "--v=2",
            ],
            log_dir,
        ),
        _spawn(directory, "cainjector", [kubeconfig, "--leader-elect=false", "--v=2"], log_dir),
    ]
    try:
        yield components
    finally:
        for c in components:
            c.stop(grace=5)


def logs(components: list[Component]) -> str:
    """The tail of each component's log (for a failure message)."""
    return "\n".join(f"----- {c.name} -----\n{tail(c.log, 30)}" for c in components)


def renew(kube: KubeClient, namespace: str, name: str) -> None:
    """Force a re-issuance of Certificate ``name`` as ``cmctl renew`` does."""
    path = api_path(CM, "certificates", namespace, name)
    for _ in range(5):
        cert = kube.get(path)
        status = cert.setdefault("status", {})
        conditions = [c for c in status.get("conditions", []) if c["type"] != "Issuing"]
        conditions.append(
            {
                "type": "Issuing",
                "status": "True",
                "reason": "ManuallyTriggered",
                "message": "Certificate re-issuance manually triggered",
                "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "observedGeneration": cert["metadata"]["generation"],
            }
        )
        status["conditions"] = conditions
        try:
            kube.replace_status(path, cert)
            return
        except Conflict:  # the controller wrote the status in between: again, on its version
            continue
    raise AssertionError(f"could not set Issuing on Certificate {namespace}/{name}")


def issuing(kube: KubeClient, namespace: str, name: str) -> bool:
    """Whether Certificate ``name`` has an ``Issuing`` condition True (a re-issuance under way)."""
    cert = kube.get(api_path(CM, "certificates", namespace, name))
    return any(c["type"] == "Issuing" and c["status"] == "True" for c in cert.get("status", {}).get("conditions", []))


def secret_data(kube: KubeClient, namespace: str, name: str) -> dict[str, bytes]:
    data = kube.get(api_path("v1", "secrets", namespace, name)).get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


@dataclass
class SecretFiles:
    """Secret ``name``'s keys as files in ``directory`` (``<key>`` -> ``..data/<key>``), rewritten
    ``delay`` seconds after the Secret changed, as the kubelet updates a Secret volume (its
    period and cache make that up to about a minute: any delay opens the window a changing
    caBundle would open). ``writes`` counts the swaps."""

    kube: KubeClient
    namespace: str
    name: str
    directory: Path
    delay: float
    writes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    errors: list[str] = field(default_factory=list)

    def path(self, key: str) -> Path:
        return self.directory / key

    def start(self) -> None:
        """Writes the Secret's current keys at once, then follows it in a thread."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._write(secret_data(self.kube, self.namespace, self.name))
        self._thread = threading.Thread(target=self._run, name=f"secret-files-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _write(self, data: dict[str, bytes]) -> None:
        stamp = self.directory / f"..{time.monotonic_ns()}"
        stamp.mkdir()
        for key, value in data.items():
            (stamp / key).write_bytes(value)
        link = self.directory / "..data_tmp"
        link.unlink(missing_ok=True)
        link.symlink_to(stamp.name)
        old = (self.directory / "..data").resolve() if (self.directory / "..data").is_symlink() else None
        link.replace(self.directory / "..data")
        for key in data:
            if not self.path(key).is_symlink():
                self.path(key).symlink_to(f"..data/{key}")
        if old is not None:
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        self.writes += 1

    def _run(self) -> None:
        current = secret_data(self.kube, self.namespace, self.name)
        due: tuple[float, dict[str, bytes]] | None = None
        while not self._stop.wait(0.25):
            try:
                seen = secret_data(self.kube, self.namespace, self.name)
            except (KubeError, OSError) as err:
                self.errors.append(str(err))
                continue
            if seen != current and (due is None or due[1] != seen):
                due = (time.monotonic() + self.delay, seen)
            if due is not None and time.monotonic() >= due[0]:
                self._write(due[1])
                current, due = due[1], None


def served_serial(port: int, host: str = "127.0.0.1") -> int | None:
    """The serial number of the certificate served on ``host:port``; None when nothing answers."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=2) as sock, ctx.wrap_socket(sock) as tls:
            der = tls.getpeercert(binary_form=True)
    except OSError:
        return None
    return x509.load_der_x509_certificate(der).serial_number if der else None


def certificate_serial(pem: bytes) -> int:
    return x509.load_pem_x509_certificate(pem).serial_number
