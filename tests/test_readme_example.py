"""README's first set-up command reports on the shipped examples, and the sample of its output
that README shows is what the command prints today (a changed rule must change the sample too)."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

from dra_bridge.migrate.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_sample_of_the_report_is_what_the_first_command_prints() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, flags=re.DOTALL)
    command = next(body for lang, body in blocks if lang == "sh" and "dra-migrate report" in body)
    argv = shlex.split(command.split(".venv/bin/dra-migrate ", 1)[1].strip())
    sample = next(body for lang, body in blocks if lang == "" and body.startswith("capacity:"))
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 0, err.getvalue()
    printed = out.getvalue().splitlines()
    for line in sample.splitlines():
        if line.strip() != "...":
            assert line in printed, f"README shows {line!r}; the command prints:\n{out.getvalue()}"
