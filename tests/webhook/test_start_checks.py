"""Settings that cannot work are refused when ``dra-webhook serve`` starts: one line, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.webhook.certs import CertPaths, write_certs
from dra_bridge.webhook.cli import main
from tests.webhook.test_startup_errors import _one_error_line


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> CertPaths:
    return write_certs(tmp_path_factory.mktemp("certs"), "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))


def _serve(pair: CertPaths, *flags: str) -> int:
    argv = ["--tls-cert-file", str(pair.cert), "--tls-key-file", str(pair.key), "--api-version", "v1"]
    return main([*argv, "--host", "127.0.0.1", "--port", "1", *flags])


@pytest.mark.parametrize("namespace", ["../x", "a/b", "Upper", "x" * 64, "-a"])
def test_a_namespace_that_is_not_a_dns_label_is_refused_at_start(
    pair: CertPaths, namespace: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _serve(pair, f"--namespace={namespace}") == 1
    line = _one_error_line(caplog, capsys)
    assert "--namespace" in line and "DNS label" in line, line


@pytest.mark.parametrize("kind", ["directory", "not-pem", "missing"])
def test_a_client_ca_that_does_not_load_at_start_is_one_line_with_no_previous_one(
    pair: CertPaths,
    tmp_path: Path,
    kind: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    client_ca = {"directory": tmp_path, "not-pem": tmp_path / "ca.pem", "missing": tmp_path / "none.pem"}[kind]
    if kind == "not-pem":
        client_ca.write_text("not a certificate\n")
    assert _serve(pair, "--client-ca-file", str(client_ca)) == 1
    line = _one_error_line(caplog, capsys)
    assert str(client_ca) in line and "previous" not in line, line


def test_a_serving_pair_that_does_not_load_at_start_is_one_line_with_no_previous_one(
    pair: CertPaths, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--tls-cert-file", str(tmp_path), "--tls-key-file", str(pair.key), "--api-version", "v1"]) == 1
    line = _one_error_line(caplog, capsys)
    assert str(tmp_path) in line and "previous" not in line, line
