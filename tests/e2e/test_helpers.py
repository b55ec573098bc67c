"""The e2e helpers on their own (no control plane needed): certificates, the REST client
against a tiny TLS server that demands the client certificate, and ``wait_for``."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dra_bridge.kube.errors import NotFound
from tests.e2e.certs import CertificateAuthority, KeyPair
from tests.e2e.kubeapi import KubeClient, WaitTimeout, api_path, wait_for


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        peer = self.connection.getpeercert()
        subject = dict(x[0] for x in peer["subject"])
        self.seen.append((self.command, self.path, self.headers.get("Content-Type", ""), body))
        if self.path.startswith("/api/v1/namespaces/missing"):
            code, out = 404, {"kind": "Status", "reason": "NotFound", "message": "not there"}
        else:
            code, out = 200, {"method": self.command, "user": subject["commonName"]}
        data = json.dumps(out).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _answer


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, KeyPair]:
    ca = CertificateAuthority(tmp_path_factory.mktemp("pki"))
    client = ca.issue("admin", "tester", organization="system:masters", client=True)
    return ca, client


@pytest.fixture(scope="module")
def server(pki: tuple[CertificateAuthority, KeyPair]) -> Iterator[str]:
    ca, _ = pki
    serving = ca.issue("srv", "srv", server=True, ip_addresses=("127.0.0.1",))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(serving.cert, serving.key)
    ctx.load_verify_locations(ca.cert_file)
    ctx.verify_mode = ssl.CERT_REQUIRED
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_api_path() -> None:
    assert api_path("v1", "nodes") == "/api/v1/nodes"
    assert api_path("v1", "pods", "ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert (
        api_path("resource.k8s.io/v1", "resourceclaims", "ns", "c")
        == "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c"
    )
    assert api_path("resource.k8s.io/v1", "deviceclasses") == "/apis/resource.k8s.io/v1/deviceclasses"


def test_client_over_mutual_tls(server: str, pki: tuple[CertificateAuthority, KeyPair]) -> None:
    ca, client_pair = pki
    kube = KubeClient(server, ca.cert_file, client_pair.cert, client_pair.key)
    assert kube.get("/api/v1/nodes") == {"method": "GET", "user": "tester"}
    kube.create("/api/v1/nodes", {"metadata": {"name": "n"}})
    kube.patch("/api/v1/nodes/n", {"spec": {}}, "strategic")
    kube.patch_status("/api/v1/nodes/n", [{"op": "add", "path": "/x", "value": 1}], "json")
    method, path, ctype, body = _Handler.seen[-1]
    assert (method, ctype) == ("PATCH", "application/json-patch+json")
    assert path.startswith("/api/v1/nodes/n/status?fieldManager=")
    assert body == [{"op": "add", "path": "/x", "value": 1}]
    assert _Handler.seen[-2][2] == "application/strategic-merge-patch+json"

    with pytest.raises(NotFound) as info:
        kube.get("/api/v1/namespaces/missing")
    assert (info.value.status, info.value.reason) == (404, "NotFound")
    assert "not there" in str(info.value)
    assert kube.delete("/api/v1/namespaces/missing", ignore_missing=True) is None
    assert not kube.exists("/api/v1/namespaces/missing")


def test_tls_fails_across_different_cas(server: str, tmp_path: Path) -> None:
    other = CertificateAuthority(tmp_path / "other")
    stranger = other.issue("x", "stranger", client=True)
    kube = KubeClient(server, other.cert_file, stranger.cert, stranger.key)
    with pytest.raises(ssl.SSLError):
        kube.get("/api/v1/nodes")


def test_wait_for_reports_last_state() -> None:
    calls = iter(range(100))
    assert wait_for(lambda: next(calls) >= 2, 5, "three calls", interval=0.01) is True
    with pytest.raises(WaitTimeout) as info:
        wait_for(
            lambda: {"phase": "Pending"}.get("nodeName"),
            0.1,
            "binding",
            interval=0.02,
            observe=lambda: {"phase": "Pending"},
        )
    text = str(info.value)
    assert "waiting for binding" in text
    assert '"phase": "Pending"' in text
