"""Settings from flags and env twins; the ``dra-webhook certs`` command."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509

from dra_bridge.webhook.cli import main
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.settings import Settings
from tests.webhook.conftest import write_kubeconfig


def test_flags_win_over_env_twins_and_defaults_fill_the_rest() -> None:
    env = {
        "DRA_WEBHOOK_TLS_CERT_FILE": "/env/tls.crt",
        "DRA_WEBHOOK_TLS_KEY_FILE": "/env/tls.key",
        "DRA_WEBHOOK_PORT": "9443",
        "DRA_WEBHOOK_API_VERSION": "v1beta1",
    }
    s = Settings.from_args(["--port", "10443", "--policy", "/p.yaml"], env)
    assert s.port == 10443 and s.tls_cert_file == Path("/env/tls.crt") and s.policy_file == Path("/p.yaml")
    assert s.api_version == "resource.k8s.io/v1beta1" and s.kubeconfig is None and s.host == "0.0.0.0"
    assert Settings.from_env(env).port == 9443


def test_missing_certificate_names_the_alternatives() -> None:
    with pytest.raises(WebhookConfigError, match="dra-webhook certs"):
        Settings.from_args([], {})


@pytest.mark.parametrize(
    "argv", [["--port", "0"], ["--port", "x"], ["--api-version", "v2"], ["--reload-interval", "-1"]], ids=" ".join
)
def test_bad_values_are_config_errors(argv: list[str]) -> None:
    with pytest.raises(WebhookConfigError):
        Settings.from_args(["--tls-cert-file", "c", "--tls-key-file", "k", *argv], {})


def test_a_service_link_in_the_port_twin_names_its_cause() -> None:
    """A Service named dra-webhook in the pod's namespace makes the kubelet set the Docker-link
    variable DRA_WEBHOOK_PORT=tcp://IP:PORT, the port's env twin (found by the image e2e)."""
    env = {"DRA_WEBHOOK_TLS_CERT_FILE": "c", "DRA_WEBHOOK_TLS_KEY_FILE": "k", "DRA_WEBHOOK_PORT": "tcp://10.96.0.7:443"}
    with pytest.raises(WebhookConfigError) as err:
        Settings.from_env(env)
    message = str(err.value)
    assert "--port/DRA_WEBHOOK_PORT" in message and "'tcp://10.96.0.7:443'" in message, message
    assert "enableServiceLinks: false" in message, message


def test_certs_command_writes_a_ca_and_a_serving_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "certs",
                "--namespace",
                "gpu-system",
                "--service",
                "dra-webhook",
                "--out",
                str(tmp_path),
                "--ip",
                "127.0.0.1",
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert all(str(tmp_path / f) in said for f in ("ca.crt", "tls.crt", "tls.key", "ca.key")), said
    assert "keep it private" in said
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "dra-webhook.gpu-system.svc" in names.get_values_for_type(x509.DNSName)


def test_serve_without_a_certificate_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DRA_WEBHOOK_TLS_CERT_FILE", "DRA_WEBHOOK_TLS_KEY_FILE"):
        monkeypatch.delenv(var, raising=False)
    assert main([]) == 1


def test_every_serve_flag_explains_itself_and_names_its_env_twin() -> None:
    from dra_bridge.webhook.settings import build_parser

    for action in build_parser()._actions:
        if action.option_strings in (["-h", "--help"], ["--version"]):  # no settings, so no twins
            continue
        env = "DRA_WEBHOOK_" + action.option_strings[0][2:].replace("-", "_").upper()
        assert action.help and env in action.help and len(action.help) > len(env) + 10, action.option_strings


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--ip", "notanip"], "--ip"),
        (["--days", "-5"], "--days"),
        (["--days", "0"], "--days"),
        (["--days", "soon"], "--days"),
        (["--days", "2932000"], "--days"),
        (["--days", "1" + "0" * 30], "--days"),
        (["--namespace", "Bad NS"], "--namespace"),
        (["--service", "x/y"], "--service"),
        (["--service", "svc-"], "--service"),
        (["--namespace", "a" * 64], "--namespace"),
    ],
    ids=[
        "ip-not-an-address",
        "days-negative",
        "days-zero",
        "days-not-a-number",
        "days-past-year-9999",
        "days-past-timedelta",
        "namespace-not-dns",
        "service-slash",
        "service-trailing-dash",
        "namespace-64-characters",
    ],
)
def test_certs_bad_values_exit_1_with_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], flag: str
) -> None:
    argv = ["certs", "--namespace", "gpu-system", "--service", "dra-webhook", "--out", str(tmp_path / "out")]
    assert main([*argv, *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dra-webhook certs: error: {flag} ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_certs_unwritable_out_dir_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert main(["certs", "--namespace", "ns", "--service", "svc", "--out", str(tmp_path / "file" / "sub")]) == 1
    assert capsys.readouterr().err.startswith("dra-webhook certs: error: --out ")


def test_certs_missing_flag_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["certs", "--service", "svc", "--out", "x"])
    assert exc.value.code == 1


def test_every_certs_flag_has_help() -> None:
    import argparse

    from dra_bridge.webhook.cli import _certs_parser

    parser = argparse.ArgumentParser()
    _certs_parser(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["certs"]
    for action in sub._actions:
        assert action.help and len(action.help) > 20, action.option_strings


def test_serve_without_api_version_exits_1_when_discovery_cannot_reach_the_api_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.webhook.test_api_unreachable import closed_port

    for var in ("DRA_WEBHOOK_API_VERSION", "DRA_WEBHOOK_KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert main(["certs", "--namespace", "ns", "--service", "svc", "--out", str(tmp_path)]) == 0
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port()}")
    assert (
        main(
            [
                "--tls-cert-file",
                str(tmp_path / "tls.crt"),
                "--tls-key-file",
                str(tmp_path / "tls.key"),
                "--kubeconfig",
                str(kubeconfig),
                "--port",
                str(closed_port()),
            ]
        )
        == 1
    )


async def test_discovery_through_a_server_that_drops_the_connection_is_a_configuration_error() -> None:
    import asyncio

    from kubernetes_asyncio import client

    from dra_bridge.kube.api import ApiServer
    from dra_bridge.kube.client import Client
    from dra_bridge.webhook.cli import _api_version

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cfg = client.Configuration(host=f"http://127.0.0.1:{port}")
    api = Client(client.ApiClient(cfg))
    try:
        with pytest.raises(WebhookConfigError, match="API discovery failed"):
            await _api_version(Settings(Path("c"), Path("k")), ApiServer(api))
    finally:
        await api.close()
        server.close()


def _certs_argv(out: Path, *extra: str) -> list[str]:
    return ["certs", "--namespace", "gpu-system", "--service", "dra-webhook", "--out", str(out), *extra]


@pytest.mark.parametrize("name", ["tls.key", "ca.key", "tls.crt", "ca.crt"])
def test_certs_never_follow_a_planted_temporary_link(tmp_path: Path, name: str) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious\n")
    victim.chmod(0o644)
    (out / f"{name}.tmp").symlink_to(victim)
    assert main(_certs_argv(out)) == 0
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    for written in ("tls.key", "ca.key", "tls.crt", "ca.crt"):
        path = out / written
        assert not path.is_symlink() and path.is_file(), written
        assert b"-----BEGIN" in path.read_bytes()
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "ca.key").stat().st_mode) == 0o600


def test_certs_keys_are_0600_whatever_a_planted_temporary_file_allowed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in ("tls.key.tmp", "ca.key.tmp"):
        (out / name).write_text("")
        (out / name).chmod(0o666)
    assert main(_certs_argv(out)) == 0
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "ca.key").stat().st_mode) == 0o600


def test_certs_refuse_to_overwrite_a_ca_key_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(_certs_argv(out)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main(_certs_argv(out)) == 1
    err = capsys.readouterr().err
    assert err.startswith("dra-webhook certs: error: --out ") and "ca.key" in err and "--force" in err, err
    assert err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "a refused run wrote something"
    assert main(_certs_argv(out, "--force")) == 0
    assert (out / "ca.key").read_bytes() != before["ca.key"]
