"""A reader that goes away in the middle of a large output: the documented exit status 141
(:data:`kube.streams.EXIT_CLOSED_OUTPUT`), also with ``PYTHONUNBUFFERED=1`` (the image sets it),
where standard output's binary layer is unbuffered and Python drops the rest of a short write;
a reader that stays gets every byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dra_bridge.kube.streams import EXIT_CLOSED_OUTPUT
from dra_bridge.migrate.errors import EXIT_OK

BIN = Path(sys.executable).parent
POD = (
    "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{0}, namespace: team-a}}\n"
    "spec: {{containers: [{{name: c, image: i, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}\n"
)


def _many(tmp_path: Path, pods: int = 1500) -> Path:
    path = tmp_path / "many.yaml"
    path.write_text("".join(POD.format(i) for i in range(pods)), encoding="utf-8")
    return path


def _env(unbuffered: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


COMMANDS = [
    pytest.param(["convert"], id="convert"),
    pytest.param(["convert", "-o", "json"], id="convert-json"),
    pytest.param(["report", "-o", "json"], id="report-json"),
    pytest.param(["report", "-o", "wide"], id="report-wide"),
    pytest.param(["report", "-o", "html"], id="report-html"),
]


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("argv", COMMANDS)
def test_a_reader_that_closes_after_the_first_line_gives_141(argv: list[str], unbuffered: bool, tmp_path: Path) -> None:
    many = _many(tmp_path)
    with subprocess.Popen(
        [str(BIN / "dra-migrate"), *argv, "-f", str(many)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(unbuffered),
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()  # `| head -1`
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert code == EXIT_CLOSED_OUTPUT, err.decode()


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_reader_that_stays_gets_the_whole_output(unbuffered: bool, tmp_path: Path) -> None:
    many = _many(tmp_path)
    argv = [str(BIN / "dra-migrate"), "report", "-o", "json", "-f", str(many)]
    to_file = tmp_path / "out.json"
    with to_file.open("wb") as sink:
        assert subprocess.run(argv, stdout=sink, env=_env(unbuffered), timeout=120, check=False).returncode == EXIT_OK
    # a slow reader: the pipe fills, so the writes are partial and must be resumed
    done = subprocess.run(
        ["sh", "-c", '"$@" | (sleep 1; cat)', "sh", *argv], capture_output=True, env=_env(unbuffered), timeout=120
    )
    assert done.returncode == EXIT_OK
    assert done.stdout == to_file.read_bytes()
