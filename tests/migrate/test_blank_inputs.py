"""Input that is only white space (a newline, a space, 64 KiB of blanks) is read to its end: it is
empty input, as a 0-byte file is, never a read that goes round forever; white space before a
manifest is skipped, however long."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK
from tests.migrate.test_convert_inputs import EXAMPLES, run

POD = EXAMPLES / "01-pod-limits-only-toleration.yaml"
#: More than the reader's first chunk (64 KiB) of blanks: the read ahead must go past it.
LONG_BLANKS = "  \n\r\n" * (1 << 14)
BLANKS = [
    pytest.param("\n", id="newline"),
    pytest.param(" ", id="space"),
    pytest.param("\ufeff\n", id="bom-newline"),
    pytest.param(LONG_BLANKS, id="over-64KiB"),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("text", BLANKS)
def test_blank_stdin_is_empty_input(text: str) -> None:
    code, out, err = run("convert", "-f", "-", stdin=text)
    assert (code, out) == (EXIT_ERROR, "")
    assert (
        err
        == "dra-migrate: error: -: no Kubernetes objects (standard input is empty); pass --allow-empty if that is expected\n"
    )


@pytest.mark.timeout(20)
@pytest.mark.parametrize("text", BLANKS)
def test_blank_file_is_empty_input(text: str, tmp_path: Path) -> None:
    blank = tmp_path / "nl.yaml"
    blank.write_text(text, encoding="utf-8", newline="")
    code, out, err = run("convert", "-f", str(blank))
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith(f"dra-migrate: error: {blank}: no Kubernetes objects (") and err.count("\n") == 1, err


@pytest.mark.timeout(20)
@pytest.mark.parametrize("command", ["convert", "report"])
def test_a_blank_file_next_to_manifests_adds_nothing(command: str, tmp_path: Path) -> None:
    (tmp_path / "a-blank.yaml").write_text("\n", encoding="utf-8")
    (tmp_path / "b-pod.yaml").write_text(POD.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run(command, "-f", str(tmp_path))
    alone = run(command, "-f", str(tmp_path / "b-pod.yaml"))
    assert code == EXIT_OK, err
    assert (out, err) == alone[1:]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("manifest", ["yaml", "json"])
def test_a_manifest_after_long_blanks_is_read(manifest: str, tmp_path: Path) -> None:
    text = POD.read_text(encoding="utf-8")
    if manifest == "json":
        text = json.dumps(yaml.safe_load(text))
    source = tmp_path / f"pod.{manifest}"
    source.write_text(LONG_BLANKS + text, encoding="utf-8", newline="")
    code, out, err = run("convert", "-f", str(source))
    assert code == EXIT_OK, err
    assert out == run("convert", "-f", str(POD))[1]
