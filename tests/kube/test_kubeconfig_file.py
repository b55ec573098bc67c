"""A kubeconfig that is not a readable YAML file (a FIFO, a device, a directory, too large,
unparsable): every command that reads one exits 1 with one line naming the file; never a
hang, a traceback or "internal error"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _kubeconfig(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        path = tmp_path / "kc-fifo"
        os.mkfifo(path)
        return str(path)
    if kind == "device":
        return "/dev/zero"
    if kind == "directory":
        return str(tmp_path)
    path = tmp_path / "kc"
    if kind == "unparsable":
        path.write_text("garbage: [\n", encoding="utf-8")
    elif kind == "not-utf8":
        path.write_bytes(b"apiVersion: v1\nkind: \xff\xfe\n")
    else:  # too large
        path.write_text("# " + "x" * (5 << 20) + "\n", encoding="utf-8")
    return str(path)


def _certs(tmp_path: Path) -> Path:
    out = tmp_path / "certs"
    done = subprocess.run(
        [str(BIN / "dra-webhook"), "certs", "--namespace", "ns", "--service", "svc", "--out", str(out)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return out


def _argv(command: str, kubeconfig: str, tmp_path: Path) -> list[str]:
    if command == "bridge":
        return [str(BIN / "dra-bridge"), "run", "--node-name", "n", "--health-port", "0", "--kubeconfig", kubeconfig]
    if command == "webhook":
        certs = _certs(tmp_path)
        return [
            str(BIN / "dra-webhook"),
            "serve",
            "--tls-cert-file",
            str(certs / "tls.crt"),
            "--tls-key-file",
            str(certs / "tls.key"),
            "--port",
            "65001",  # never listened on: the kubeconfig is read first
            "--kubeconfig",
            kubeconfig,
        ]
    return [str(BIN / "dra-migrate"), "report", "--kubeconfig", kubeconfig]


KINDS = ["fifo", "device", "directory", "unparsable", "not-utf8", "too-large"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["bridge", "webhook", "migrate"])
def test_a_kubeconfig_that_is_not_a_yaml_file_is_one_line_naming_it(command: str, kind: str, tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(kind, tmp_path)
    argv = _argv(command, kubeconfig, tmp_path)
    done = subprocess.run(argv, capture_output=True, timeout=20, check=False, cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    lines = [line for line in err.splitlines() if "Traceback" in line or "internal error" in line]
    assert not lines, err
    last = err.strip().splitlines()[-1]
    assert kubeconfig in last, err
    assert "Traceback" not in err and err.count("\n") <= 2, err  # a start-up log line at most before it
