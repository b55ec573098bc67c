"""``dra-migrate report -o html`` rendered by headless Chromium: the DOM holds the pictures and
totals, and a screenshot is written for a person to look at (its path is printed)."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dra_bridge.migrate.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("chromium is missing (.ci/run installs Debian's chromium)", pytrace=False)
    pytest.skip("chromium is missing: apt-get install -y chromium")


def _headless(chromium: str, *args: str, home: Path) -> str:
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={home / 'profile'}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=50,
        env={**os.environ, "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.timeout(120)
def test_html_page_renders_with_pictures_and_totals(tmp_path: Path) -> None:
    chromium = _chromium()
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "report",
            "-f",
            str(DATA / "examples"),
            "-f",
            str(DATA / "report"),
            "-o",
            "html",
            "--kubernetes-version",
            "1.36",
        ],
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    page = tmp_path / "report.html"
    page.write_text(out.getvalue())
    assert not re.search(r"(src|href)=\"https?:", out.getvalue()), "the page must not reach the network"
    dom = _headless(chromium, "--dump-dom", page.as_uri(), home=tmp_path)
    pictures = re.findall(r'<svg class="picture" data-group="(\w+)" data-name="([^"]+)"', dom)
    assert ("namespace", "team-a") in pictures and ("namespace", "team-b") in pictures
    assert ("pool", "NVIDIA-H100-80GB-HBM3") in pictures and ("pool", "NVIDIA-A100-SXM4-40GB") in pictures
    totals = dict(re.findall(r'<dd data-total="([^"]+)">(\d+)</dd>', dom))
    assert totals["workloads"] == "18" and totals["blocked"] == "2" and totals["needs-conversion"] == "9"
    team_b = dom.split('data-name="team-b"', 1)[1].split("</svg>", 1)[0]
    assert re.findall(r'data-path="(\S+)" data-count="(\d+)"', team_b) == [
        ("nothing-to-do", "1"),
        ("kep-5004", "2"),
        ("needs-conversion", "2"),
        ("blocked", "1"),
    ]
    capacity = {
        name: dict(re.findall(r'data-bar="([\w-]+)" data-used="(\d+)" data-total="\d+"', body))
        for name, body in re.findall(r'<svg class="capacity" data-name="([^"]+)"[^>]*>(.*?)</svg>', dom)
    }
    h100 = capacity["NVIDIA-H100-80GB-HBM3"]
    assert set(h100) == {"dra-before", "dra-after", "legacy-before", "legacy-after"}
    assert h100["dra-before"] == "0" and int(h100["dra-after"]) > 0 and h100["legacy-before"] == "0"
    assert totals["pods that fit"] == "4" and "converted pods" in totals
    shot = tmp_path / "report.png"
    _headless(chromium, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri(), home=tmp_path)
    assert shot.stat().st_size > 10_000
    print(f"report screenshot: {shot}")
