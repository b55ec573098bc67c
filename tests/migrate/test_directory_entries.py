"""A ``-f DIR`` entry named like a manifest (``.yaml``, ``.yml``, ``.json``) that is not a regular
file (a FIFO, a link to a device or to nothing) is an error naming it, as the same thing given
directly to ``-f`` is: never dropped unseen, never "a directory without manifest files"."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK
from tests.migrate.test_convert_inputs import EXAMPLES, run

POD = EXAMPLES / "01-pod-limits-only-toleration.yaml"


def _fifo(entry: Path) -> None:
    os.mkfifo(entry)


def _link_to_nothing(entry: Path) -> None:
    entry.symlink_to(entry.parent / "gone.yaml")


def _link_to_dev_zero(entry: Path) -> None:
    entry.symlink_to("/dev/zero")


def _link_to_a_directory(entry: Path) -> None:
    (entry.parent.parent / "elsewhere").mkdir()
    (entry.parent.parent / "elsewhere" / "pod.yaml").write_text(POD.read_text(encoding="utf-8"), encoding="utf-8")
    entry.symlink_to(entry.parent.parent / "elsewhere")


ENTRIES = [
    pytest.param(_fifo, "not a regular file", id="fifo"),
    pytest.param(_link_to_nothing, "a link to nothing", id="link-to-nothing"),
    pytest.param(_link_to_dev_zero, "not a regular file", id="link-to-dev-zero"),
    pytest.param(_link_to_a_directory, "a link to a directory", id="link-to-directory"),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("command", ["convert", "report"])
@pytest.mark.parametrize("alone", [True, False], ids=["alone", "next-to-a-manifest"])
@pytest.mark.parametrize(("make", "says"), ENTRIES)
def test_an_entry_that_is_not_a_regular_file_is_an_error_naming_it(
    make: Callable[[Path], None], says: str, alone: bool, command: str, tmp_path: Path
) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    if not alone:
        (directory / "a-pod.yaml").write_text(POD.read_text(encoding="utf-8"), encoding="utf-8")
    entry = directory / "b-entry.yaml"
    make(entry)
    code, out, err = run(command, "-f", str(directory))
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith(f"dra-migrate: error: {entry}: ") and says in err and err.count("\n") == 1, err


@pytest.mark.timeout(20)
@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_every_manifest_suffix_is_checked(suffix: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / f"pipe{suffix}")
    code, out, err = run("convert", "-f", str(tmp_path))
    assert (code, out) == (EXIT_ERROR, "") and f"pipe{suffix}: not a regular file" in err, err


@pytest.mark.timeout(20)
def test_other_entries_are_still_left_out(tmp_path: Path) -> None:
    """A FIFO without a manifest's suffix, a link to a manifest file, and a sub-directory named
    like a manifest (its files are read) are what they were."""
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "pod.yaml").write_text(POD.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "linked.yaml").symlink_to(tmp_path / "real" / "pod.yaml")
    (tmp_path / "sub.yaml").mkdir()
    (tmp_path / "sub.yaml" / "pod.yml").write_text(POD.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run("convert", "-f", str(tmp_path))
    assert code == EXIT_OK, err
    assert [d["kind"] for d in yaml.safe_load_all(out)].count("Pod") == 3, out
