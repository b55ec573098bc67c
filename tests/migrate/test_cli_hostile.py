"""The command lines never show a traceback (issue 20, item 9).

A closed or broken standard output (a pipe into ``head``) exits quietly with
:data:`kube.streams.EXIT_CLOSED_OUTPUT`; a FIFO or a device given as ``-f`` or ``--catalog`` is
refused in one line; ``!!binary`` and ``!!timestamp`` values reach ``-o json`` as strings; a
non-UTF-8 ``--catalog`` is one line; YAML aliases are bounded per input, not per document.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dra_bridge.kube.streams import EXIT_CLOSED_OUTPUT
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK
from dra_bridge.migrate.manifests import MAX_VALUES
from tests.migrate.test_convert_inputs import EXAMPLES, run

BIN = Path(sys.executable).parent
EXAMPLE = str(EXAMPLES / "01-pod-limits-only-toleration.yaml")


def _closed_pipe_run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` with its stdout a pipe whose reader has already gone (``| head`` that exited)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, cwd=cwd, timeout=120, check=False)
    finally:
        os.close(write)


COMMANDS = [
    pytest.param(["dra-migrate", "classes"], id="migrate-classes"),
    pytest.param(["dra-migrate", "convert", "-f", EXAMPLE], id="migrate-convert"),
    pytest.param(["dra-migrate", "report", "-f", EXAMPLE], id="migrate-report"),
    pytest.param(["dra-migrate", "--help"], id="migrate-help"),
    pytest.param(["dra-webhook", "certs", "--namespace", "ns", "--service", "svc", "--out", "out"], id="webhook-certs"),
    pytest.param(["dra-webhook", "--help"], id="webhook-help"),
]


@pytest.mark.parametrize("argv", COMMANDS)
def test_a_broken_stdout_exits_quietly_with_the_documented_status(argv: list[str], tmp_path: Path) -> None:
    done = _closed_pipe_run([str(BIN / argv[0]), *argv[1:]], tmp_path)
    assert done.stderr == b"", done.stderr.decode()
    assert done.returncode == EXIT_CLOSED_OUTPUT


@pytest.mark.parametrize("argv", COMMANDS[:3])
def test_a_closed_stdout_exits_quietly_with_the_documented_status(argv: list[str], tmp_path: Path) -> None:
    script = 'exec "$0" "$@" >&-'
    done = subprocess.run(
        ["sh", "-c", script, str(BIN / argv[0]), *argv[1:]], capture_output=True, cwd=tmp_path, timeout=120
    )
    assert done.stderr == b"", done.stderr.decode()
    assert done.returncode == EXIT_CLOSED_OUTPUT


def _in_thread(*args: str) -> tuple[int, str, str]:
    """``run(*args)`` that cannot hang the test run: a blocked read fails the test instead."""
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(run(*args)), daemon=True)
    worker.start()
    worker.join(20)
    assert result, f"dra-migrate {' '.join(args)} did not return"
    return result[0]


@pytest.mark.parametrize("kind", ["fifo", "dev-null", "dev-zero"])
@pytest.mark.parametrize("flag", ["-f", "--catalog"])
def test_a_fifo_or_device_is_refused_in_one_line(kind: str, flag: str, tmp_path: Path) -> None:
    if kind == "fifo":
        source = tmp_path / "manifests.yaml"
        os.mkfifo(source)
    else:
        source = Path("/dev/null" if kind == "dev-null" else "/dev/zero")
    args = ["convert", "-f", str(source)] if flag == "-f" else ["convert", "-f", EXAMPLE, "--catalog", str(source)]
    code, out, err = _in_thread(*args)
    assert code == EXIT_ERROR and out == ""
    assert err.startswith(f"dra-migrate: error: {source}: not a regular file") and err.count("\n") == 1, err


def test_a_non_utf8_catalog_is_one_line(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_bytes(b"apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\n# \xff\xfe\n")
    code, out, err = run("convert", "-f", EXAMPLE, "--catalog", str(catalog))
    assert code == EXIT_ERROR and out == ""
    assert err.startswith(f"dra-migrate: error: {catalog}: not UTF-8") and err.count("\n") == 1, err


def test_binary_and_timestamp_values_are_written_as_strings_in_json(tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        "binaryData:\n  blob: !!binary |\n    aGVs\n    bG8=\n"
        "data:\n  when: !!timestamp 2020-01-02T03:04:05Z\n  day: 2020-01-02\n"
    )
    code, out, err = run("convert", "-f", str(manifest), "-o", "json")
    assert code == EXIT_OK, err
    cm = json.loads(out)["items"][0]
    assert base64.b64decode(cm["binaryData"]["blob"]) == b"hello"
    assert cm["data"] == {"when": "2020-01-02T03:04:05Z", "day": "2020-01-02"}


def _laughs(name: str) -> str:
    """A document of a few hundred bytes that expands to 9**5 (59,049) values."""
    lines = [f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\nl0: &l0 [a, a, a, a, a, a, a, a, a]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 5)]
    return "\n".join(lines) + "\n"


def test_yaml_aliases_are_bounded_per_input_not_per_document(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(_laughs("a"))
    many = tmp_path / "many.yaml"
    many.write_text("---\n".join(_laughs(f"c{i}") for i in range(20)))  # each document well under the bound
    assert MAX_VALUES + len(many.read_text()) < 20 * 9**5 and MAX_VALUES / 10 > 9**5
    assert run("convert", "-f", str(one), "-o", "json")[0] == EXIT_OK
    code, out, err = run("convert", "-f", str(many), "-o", "json")
    assert code == EXIT_ERROR and out == ""
    assert f"{many}: expands to more than" in err and "aliases" in err and err.count("\n") == 1, err


def test_an_unexpected_error_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import dra_bridge.migrate.cli as cli

    def broken(*_args: object) -> int:
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(cli, "classes", broken)
    code, out, err = run("classes")
    assert code == EXIT_ERROR and out == "" and err.count("\n") == 1, err
    assert err.startswith("dra-migrate: error: internal error: TypeError: 'int' object is not iterable"), err


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import dra_bridge.migrate.cli as cli
    from dra_bridge.kube.streams import EXIT_INTERRUPTED

    def interrupted(*_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "classes", interrupted)
    code, out, err = run("classes")
    assert (code, out, err) == (EXIT_INTERRUPTED, "", "")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_integer_too_long_to_convert_is_one_line_naming_the_file(tmp_path: Path, suffix: str) -> None:
    huge = "1" * 5001
    path = tmp_path / f"pod{suffix}"
    path.write_text(
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": '
        f'[{{"name": "c", "resources": {{"limits": {{"nvidia.com/gpu": {huge}}}}}}}]}}}}\n'
    )
    code, out, err = run("convert", "-f", str(path))
    assert code == EXIT_ERROR and out == "" and "internal error" not in err, err
    assert str(path) in err and "integer too long" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("tagged", ["!!float abc", "!!bool maybe", "!!int abc"], ids=["float", "bool", "int"])
def test_a_tagged_scalar_not_of_its_tag_is_one_line_naming_the_file_and_value(tmp_path: Path, tagged: str) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels:\n    a: {tagged}\n")
    code, out, err = run("convert", "-f", str(path))
    assert code == EXIT_ERROR and out == "" and "internal error" not in err, err
    assert str(path) in err and f"{tagged.split()[1]!r} is not" in err and len(err.splitlines()) == 1, err
