"""The chart's cert-manager mode against cert-manager itself (v1.11.5, ``hack/cert-manager.sh``):
renewals of the serving pair never refuse a pod (docs/design.md D50).

On the test control plane: cert-manager's CRDs, its controller and cainjector as local
processes, the chart installed in cert-manager mode (no issuerRef: its own SelfSigned -> CA ->
serving chain). Once the cainjector filled the caBundle, the webhook runs as a local process
serving the serving Secret's files, which a kubelet-like loop rewrites a few seconds after each
change of the Secret. The API server reaches that process on loopback, so the test gives the
serving Certificate an IP SAN 127.0.0.1 and points the registration's enforce entry at a URL
instead of the Service (the caBundle stays the cainjector's). Then 200 pods are created through
the enforce path at 5 a second while three renewals of the serving Certificate are forced as
``cmctl renew`` forces them: none is refused, each is converted, the caBundle never changes, and
three new serial numbers are served. Last, a renewal of the CA itself (its key kept): the
caBundle changes, and pods are still admitted with the serving pair signed before.

Before the chart's CA chain (a SelfSigned Issuer signing the serving pair), each renewal changed
the caBundle seconds before the files: this test then counts refusals (about delay x rate per
renewal). 1.36 only (no server_version mark): nothing here depends on the API server's version.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from cryptography import x509

from dra_bridge.kube.errors import AlreadyExists, KubeError
from dra_bridge.translate.names import CONVERTED_LABEL
from tests.chart.render import CHART, helm, helm_binaries
from tests.e2e.certmanager import (
    CM,
    SecretFiles,
    certificate_serial,
    find_cert_manager,
    installed_crds,
    issuing,
    logs,
    renew,
    running_cert_manager,
    secret_data,
    served_serial,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace, wait_for
from tests.e2e.webhook_cluster import LEASE_NAMESPACE, legacy_pod, start_webhook

# 200 pods at 5 a second are 40 s by design; with cert-manager, Helm and the webhook started on
# a busy 2-core machine the test took 72-84 s, close to the e2e default of 120 s once the session's
# control plane starts with it: hence a limit of its own.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
PODS, RATE = 200, 5.0
RENEW_AT = (40, 90, 140)  # pod indexes: 8, 18 and 28 s into the run
AFTER_CA_RENEWAL = 10
SYNC_DELAY = 4.0  # seconds from a Secret change to the files (a kubelet: up to about a minute)


def _bundles(kube: KubeClient, name: str) -> set[bytes]:
    return {base64.b64decode(h["clientConfig"].get("caBundle", "")) for h in kube.get(f"{MWC}/{name}")["webhooks"]}


def _injected(kube: KubeClient, name: str) -> bytes | None:
    bundles = _bundles(kube, name)
    return bundles.pop() if len(bundles) == 1 and b"" not in bundles else None


def _settled(kube: KubeClient, ns: str, name: str) -> bool:
    return not issuing(kube, ns, name)


def _has_loopback_san(pem: bytes) -> bool:
    san = x509.load_pem_x509_certificate(pem).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return "127.0.0.1" in {str(ip) for ip in san.value.get_values_for_type(x509.IPAddress)}


class SerialWatch(threading.Thread):
    """The serial numbers a TLS port serves, in the order first seen (polled every 0.1 s)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True, name="serial-watch")
        self.port, self.seen, self._stop_event = port, list[int](), threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.1):
            serial = served_serial(self.port)
            if serial is not None and (not self.seen or self.seen[-1] != serial):
                self.seen.append(serial)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


def _route_enforce_to(kube: KubeClient, name: str, port: int) -> None:
    """The registration's enforce entry calls ``https://127.0.0.1:port`` instead of the Service."""
    hooks = kube.get(f"{MWC}/{name}")["webhooks"]
    (i,) = [n for n, h in enumerate(hooks) if h["name"] == "enforce.webhook.dra-bridge.io"]
    kube.patch(
        f"{MWC}/{name}",
        [
            {"op": "test", "path": f"/webhooks/{i}/name", "value": "enforce.webhook.dra-bridge.io"},
            {"op": "remove", "path": f"/webhooks/{i}/clientConfig/service"},
            {
                "op": "add",
                "path": f"/webhooks/{i}/clientConfig/url",
                "value": f"https://127.0.0.1:{port}/mutate/enforce",
            },
        ],
        "json",
    )


def _create_pods(
    kube: KubeClient, ns: str, count: int, prefix: str, renewals: dict[int, tuple[str, str]], reg: str
) -> tuple[list[str], int, set[bytes]]:
    """``count`` GPU pods in ``ns`` at RATE a second, forcing the renewal of Certificate
    ``renewals[i]`` (namespace, name) before pod i: the refusals, the number converted, and the
    caBundles of registration ``reg`` seen (every 10th pod)."""
    refusals: list[str] = []
    converted, bundles = 0, set[bytes]()
    start = time.monotonic()
    for i in range(count):
        time.sleep(max(0.0, start + i / RATE - time.monotonic()))
        if i in renewals:
            cert_ns, cert = renewals[i]
            wait_for(functools.partial(_settled, kube, cert_ns, cert), 15, f"no issuance of {cert} under way")
            renew(kube, cert_ns, cert)
        try:
            pod = kube.create(api_path("v1", "pods", ns), legacy_pod(f"{prefix}-{i}", gpus=1))
        except KubeError as err:
            refusals.append(f"pod {i} at {time.monotonic() - start:.1f}s: {err}")
            continue
        converted += CONVERTED_LABEL in (pod["metadata"].get("labels") or {})
        if i % 10 == 0:
            bundles |= _bundles(kube, reg)
    return refusals, converted, bundles


def _uninstall(helm4: Path, release: str, *args: str) -> None:
    with contextlib.suppress(AssertionError):
        helm(helm4, "uninstall", release, *args)


def _converts(kube: KubeClient, ns: str) -> bool:
    pod = kube.create(api_path("v1", "pods", ns), legacy_pod("probe", gpus=1), dry_run=True)
    return CONVERTED_LABEL in (pod["metadata"].get("labels") or {})


# One release's life under cert-manager, in order (install, injection, serving, renewals, the
# CA's renewal), each step on what the one before left: commented sections of one scenario.
def test_serving_renewals_keep_the_ca_bundle_and_refuse_no_pod(
    control_plane: ControlPlane, kube: KubeClient, tmp_path: Path
) -> None:
    began = time.monotonic()

    def lap(what: str) -> None:
        print(f"{what} {time.monotonic() - began:.1f}s after the start")

    cm_dir = find_cert_manager()
    helm4 = helm_binaries(("4",))["4"]
    suffix = uuid.uuid4().hex[:6]
    release = ns = f"cm-{suffix}"
    full, label, enforced = f"{release}-dra-bridge", f"dra-bridge-e2e/cm-{suffix}", f"cm-{suffix}-work"
    svc = f"{full}-webhook"
    args = ("--namespace", ns, "--kubeconfig", str(control_plane.kubeconfig))
    with contextlib.ExitStack() as stack:
        for name in (ns, enforced):
            create_namespace(kube, name, wait_ready=False)  # pods wait for the ServiceAccount below
            stack.callback(kube.delete, api_path("v1", "namespaces", name=name), ignore_missing=True)
        with contextlib.suppress(AlreadyExists):
            create_namespace(kube, LEASE_NAMESPACE, wait_ready=False)
        stack.enter_context(installed_crds(kube, cm_dir))
        print()
        lap("CRDs established")
        stack.callback(_uninstall, helm4, release, *args)
        helm(
            helm4,
            "install",
            release,
            str(CHART),
            *args,
            *("--set", "image.repository=registry.invalid/dra-bridge"),
            *("--set", "webhook.certificates.mode=cert-manager"),
            *("--set", "webhook.replicas=0", "--set", "agent.enabled=false"),
            *("--set", f"webhook.namespaceLabel={label}"),
        )
        # reachable on loopback: an IP SAN on the serving pair (before its first issuance), and
        # below a URL instead of the Service on the enforce entry
        kube.patch(api_path(CM, "certificates", ns, svc), {"spec": {"ipAddresses": ["127.0.0.1"]}})
        procs = stack.enter_context(running_cert_manager(control_plane, cm_dir, ns, tmp_path))
        lap("chart installed, cert-manager started")

        # the cainjector writes the CA Certificate's CA into both entries
        bundle = wait_for(lambda: _injected(kube, full), 60, "the injected caBundle", observe=lambda: logs(procs))
        assert bundle == secret_data(kube, ns, f"{svc}-ca")["ca.crt"]
        lap("caBundle injected")
        wait_for(
            lambda: _has_loopback_san(secret_data(kube, ns, f"{svc}-tls").get("tls.crt", b"")) or None,
            60,
            "the serving pair",
            observe=lambda: logs(procs),
        )
        files = SecretFiles(kube, ns, f"{svc}-tls", tmp_path / "tls", SYNC_DELAY)
        files.start()
        stack.callback(files.stop)
        certs = SimpleNamespace(cert=files.path("tls.crt"), key=files.path("tls.key"), ca_cert=files.path("ca.crt"))
        hook = start_webhook(control_plane, certs, tmp_path, "resource.k8s.io/v1", name="cm", mode_label=label)
        stack.callback(hook.stop)
        _route_enforce_to(kube, full, hook.port)
        kube.patch(api_path("v1", "namespaces", name=enforced), {"metadata": {"labels": {label: "enforce"}}})
        wait_for(lambda: _converts(kube, enforced), 30, "the API server calling the webhook")
        lap("webhook serving")
        first = certificate_serial(files.path("tls.crt").read_bytes())
        watch = SerialWatch(hook.port)
        watch.start()
        stack.callback(watch.stop)

        # 200 pods at 5 a second across three forced renewals of the serving pair
        t0 = time.monotonic()
        refusals, converted, bundles = _create_pods(kube, enforced, PODS, "p", dict.fromkeys(RENEW_AT, (ns, svc)), full)
        lap(f"{PODS} pods in {time.monotonic() - t0:.1f}s, {files.writes} Secret syncs,")
        wait_for(lambda: len(watch.seen) >= 1 + len(RENEW_AT), 30, "the last renewal served")
        assert refusals == [], "\n".join(refusals[:10])
        assert converted == PODS
        assert bundles == {bundle}, "a renewal of the serving pair changed the caBundle"
        assert watch.seen[0] == first and len(set(watch.seen)) == 1 + len(RENEW_AT), watch.seen
        assert _bundles(kube, full) == {bundle}

        # the CA renewed (its key kept): a new caBundle that still verifies the pair in force
        served = watch.seen[-1]
        renew(kube, ns, f"{svc}-ca")
        wait_for(lambda: (_injected(kube, full) or bundle) != bundle or None, 30, "the renewed CA injected")
        refusals, converted, _ = _create_pods(kube, enforced, AFTER_CA_RENEWAL, "q", {}, full)
        assert refusals == [], "\n".join(refusals[:10])
        assert converted == AFTER_CA_RENEWAL
        assert watch.seen[-1] == served, "the serving pair changed with the CA"
        lap("CA renewal checked")
    lap("stopped and uninstalled")
