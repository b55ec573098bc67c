"""pytest's configuration (pyproject): a misspelt mark and any warning fail the run.

Each test runs pytest in a child process, under the project's pyproject.toml, over one small
test file written here, and reads its exit status and report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: a child pytest takes 1-4 s on 2 busy cores
pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(tmp_path: Path, source: str) -> tuple[int, str]:
    """pytest's exit status and output over a test file holding ``source``, under our pyproject."""
    test = tmp_path / "test_sample.py"
    test.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"), str(test)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_a_registered_mark_and_a_quiet_test_pass(tmp_path: Path) -> None:
    code, out = run_pytest(tmp_path, "import pytest\n\n@pytest.mark.property\ndef test_quiet():\n    pass\n")
    assert code == 0 and "1 passed" in out, out


def test_a_misspelt_mark_fails_the_run(tmp_path: Path) -> None:
    code, out = run_pytest(tmp_path, "import pytest\n\n@pytest.mark.e2ee\ndef test_marked():\n    pass\n")
    assert code != 0 and "'e2ee' not found in `markers` configuration option" in out, out


def test_a_resource_warning_fails_the_test(tmp_path: Path) -> None:
    code, out = run_pytest(
        tmp_path, "import warnings\n\ndef test_warns():\n    warnings.warn('a socket left open', ResourceWarning)\n"
    )
    assert code == 1 and "1 failed" in out and "ResourceWarning: a socket left open" in out, out


def test_a_file_left_open_fails_the_test_that_dropped_it(tmp_path: Path) -> None:
    source = (
        "import gc\n\n"
        "def test_leaks():\n"
        "    open(__file__)  # never closed: a ResourceWarning when collected\n"
        "    gc.collect()\n"
    )
    code, out = run_pytest(tmp_path, source)
    assert code == 1 and "1 failed" in out and "unclosed file" in out, out
