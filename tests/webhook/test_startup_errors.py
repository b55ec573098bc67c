"""Start-up failures of ``dra-webhook serve`` end in one line and exit 1, never a traceback.

Real endpoints on loopback: an HTTP server answering discovery with a body that is not the
APIGroup it should be, and a port another socket already listens on. A bad policy file is not
a start-up failure: ``dra-webhook serve`` (a real process) serves unready until the file is fixed.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dra_bridge.webhook.certs import CertPaths, write_certs
from dra_bridge.webhook.cli import main
from tests.webhook.conftest import write_kubeconfig


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> CertPaths:
    return write_certs(tmp_path_factory.mktemp("certs"), "dra", "webhook", ("127.0.0.1",))


def _discovery_server(answer: bytes) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: object) -> None:
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)


@pytest.fixture
def discovery(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig whose API server answers every GET with ``request.param``."""
    server = _discovery_server(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


def _one_error_line(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> str:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert all(r.exc_info is None for r in caplog.records), "a traceback was logged"
    assert "Traceback" not in capsys.readouterr().err
    line = errors[0].getMessage()
    assert "\n" not in line, line
    return line


@pytest.mark.parametrize(
    "discovery",
    [
        pytest.param(b'{"versions": [nope', id="not-json"),
        pytest.param(b'["resource.k8s.io/v1"]', id="a-list"),
        pytest.param(b'{"versions": "v1"}', id="versions-not-a-list"),
        pytest.param(b'{"versions": [{"version": "v1"}]}', id="version-without-groupVersion"),
    ],
    indirect=True,
)
def test_a_malformed_discovery_answer_exits_1_with_one_line(
    discovery: Path,
    pair: CertPaths,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DRA_WEBHOOK_API_VERSION", raising=False)
    code = main(
        [
            "--tls-cert-file",
            str(pair.cert),
            "--tls-key-file",
            str(pair.key),
            "--kubeconfig",
            str(discovery),
            "--host",
            "127.0.0.1",
            "--port",
            "1",
        ]
    )
    line = _one_error_line(caplog, capsys)
    assert code == 1
    assert "API discovery failed" in line and "/apis/resource.k8s.io" in line and "--api-version" in line, line


def test_a_port_already_in_use_exits_1_with_one_line(
    pair: CertPaths, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.webhook.test_api_unreachable import closed_port

    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port()}")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(
            [
                "--tls-cert-file",
                str(pair.cert),
                "--tls-key-file",
                str(pair.key),
                "--kubeconfig",
                str(kubeconfig),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--api-version",
                "v1",
            ]
        )
    line = _one_error_line(caplog, capsys)
    assert code == 1
    assert f"127.0.0.1:{port}" in line and "--port" in line and "in use" in line, line


def _get(url: str, ca: Path) -> tuple[int, str]:
    """(status, body) of a GET over HTTPS verified by ``ca``; (0, why) when nothing answers."""
    ctx = ssl.create_default_context(cafile=str(ca))
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _wait_for(url: str, ca: Path, status: int, proc: subprocess.Popen[str], seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    got: tuple[int, str] = (0, "")
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"dra-webhook serve exited {proc.returncode}"
        got = _get(url, ca)
        if got[0] == status:
            return got[1]
        time.sleep(0.1)
    raise AssertionError(f"{url}: wanted {status}, last answer {got}")


def _bomb(levels: int) -> str:
    """A policy of a few hundred bytes whose lists of aliases expand to 9**levels values."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [("defaults: {onError: sometimes}\n", "defaults.onError"), (_bomb(10), "nested YAML aliases")],
    ids=["wrong-value", "alias-bomb"],
)
def test_serve_with_a_bad_policy_stays_up_unready_until_the_file_is_fixed(
    pair: CertPaths, tmp_path: Path, text: str, why: str
) -> None:
    """A surge rollout with a bad policy stalls (an unready pod) instead of crash-looping; an
    alias bomb is refused as fast as any other mistake."""
    from tests.webhook.test_api_unreachable import closed_port

    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port()}")
    port = closed_port()
    argv = ["serve", "--tls-cert-file", str(pair.cert), "--tls-key-file", str(pair.key), "--kubeconfig"]
    argv += [str(kubeconfig), "--host", "127.0.0.1", "--port", str(port), "--api-version", "v1"]
    argv += ["--policy", str(policy), "--reload-interval", "0.2"]
    script = Path(sys.executable).with_name("dra-webhook")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRA_WEBHOOK_")}
    with subprocess.Popen([script, *argv], stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            detail = json.loads(_wait_for(f"https://127.0.0.1:{port}/readyz", pair.ca_cert, 503, proc))
            assert detail["ready"] is False
            assert str(policy) in detail["policy"] and why in detail["policy"], detail
            assert _get(f"https://127.0.0.1:{port}/healthz", pair.ca_cert)[0] == 200
            policy.write_text("defaults: {onError: deny}\n")
            detail = json.loads(_wait_for(f"https://127.0.0.1:{port}/readyz", pair.ca_cert, 200, proc))
            assert "refused" not in detail["policy"], detail
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    refusals = [line for line in err.splitlines() if "refused" in line and str(policy) in line]
    assert len(refusals) == 1 and why in refusals[0], err


def test_an_unexpected_error_in_serve_is_one_line_and_exit_1(
    pair: CertPaths,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dra_bridge.webhook.cli as cli

    async def broken(_settings: object) -> None:
        raise RuntimeError("something no one expected")

    monkeypatch.setattr(cli, "serve", broken)
    code = main(["--tls-cert-file", str(pair.cert), "--tls-key-file", str(pair.key)])
    line = _one_error_line(caplog, capsys)
    assert code == 1 and "RuntimeError: something no one expected" in line, line
