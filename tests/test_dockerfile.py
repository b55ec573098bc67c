"""The user Dockerfile cannot be built here (no registry to pull a base image from), so its
rules are checked on the parsed file: stages, base, user, what the final stage holds, and
that it copies every package folder pyproject installs and offers the three commands. The base
is a required build argument that must carry a digest (docs/design.md D47): the build stage's
first step, which refuses anything else, is run here by sh on the values a user may pass."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|build-essential|python3?-dev|libffi-dev|apt-get|apk|pip)\b")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [arg for o, arg in self.instructions if o == op]


def parse(text: str) -> tuple[dict[str, str | None], list[Stage]]:
    """(global ARG defaults, None for an ARG without one; stages): instructions with line
    continuations joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    args: dict[str, str | None] = {}
    stages: list[Stage] = []
    for line in lines:
        op, _, rest = line.partition(" ")
        op = op.upper()
        if op == "FROM":
            words = rest.split()
            stages.append(Stage(words[0], words[2] if len(words) > 2 and words[1].upper() == "AS" else None))
        elif stages:
            stages[-1].instructions.append((op, rest.strip()))
        elif op == "ARG":
            k, eq, v = rest.partition("=")
            args[k.strip()] = v.strip() if eq else None
    return args, stages


def _dockerfile() -> tuple[dict[str, str | None], list[Stage]]:
    return parse((ROOT / "Dockerfile").read_text())


def test_parse_reads_stages_and_joins_continuations() -> None:
    args, stages = parse("ARG B=x:1\nARG C\nFROM ${B} AS one\nRUN a \\\n  && b\n# c\nFROM ${B}\nUSER 1\n")
    assert args == {"B": "x:1", "C": None}
    assert [(s.base, s.name) for s in stages] == [("${B}", "one"), ("${B}", None)]
    assert stages[0].all("RUN") == ["a  && b"]


def test_the_header_says_it_is_not_built_here() -> None:
    header = (ROOT / "Dockerfile").read_text().split("\nARG", 1)[0]
    assert "NOT BUILT HERE" in header and "no container registry" in header


def test_multi_stage_on_a_base_given_by_digest_with_no_default() -> None:
    args, stages = _dockerfile()
    assert len(stages) >= 2
    assert args == {"BASE_IMAGE": None}, "the base is a required build argument: no default tag to drift"
    assert {s.base for s in stages} == {"${BASE_IMAGE}"}
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    header = (ROOT / "Dockerfile").read_text().split("\nARG", 1)[0]
    # the documented base: the slim Python of the lock's interpreter, by digest, and how to find it
    assert requires == ">=3.11" and "--build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest>" in header
    assert "skopeo inspect --format '{{.Digest}}' docker://python:3.11-slim-bookworm" in header


def _digest_check() -> str:
    """The build stage's first RUN: the check of BASE_IMAGE (the ARG re-declared before it)."""
    build = _dockerfile()[1][0]
    assert build.instructions[:2] == [("ARG", "BASE_IMAGE"), ("RUN", build.instructions[1][1])]
    return build.instructions[1][1]


DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("base", "accepted"),
    [
        (f"python:3.11-slim-bookworm@{DIGEST}", True),
        (f"registry.example.com:5000/python@{DIGEST}", True),
        ("python:3.11-slim-bookworm", False),
        ("", False),
        (f"python:3.11-slim-bookworm@{DIGEST[:-1]}", False),
        (f"python:3.11-slim-bookworm@{DIGEST}0", False),
        (f"python:3.11-slim-bookworm@{DIGEST.upper().replace('SHA256', 'sha256')}", False),
        ("python@sha512:" + "ab" * 64, False),
        (f"python:3.11-slim-bookworm@{DIGEST[:-1]}g", False),
    ],
    ids=["tag and digest", "registry port", "tag only", "empty", "short", "long", "upper case", "sha512", "not hex"],
)
def test_the_first_step_refuses_a_base_without_a_digest(base: str, accepted: bool) -> None:
    proc = subprocess.run(
        ["sh", "-c", _digest_check()],
        env={"PATH": os.environ["PATH"], "BASE_IMAGE": base},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    if accepted:
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
    else:
        assert proc.returncode == 1
        assert "BASE_IMAGE must name the base image by digest (NAME@sha256:<64 hex>)" in proc.stderr
        assert f"got '{base}'" in proc.stderr and "skopeo inspect --format" in proc.stderr


def test_final_stage_is_non_root_and_holds_no_build_tools() -> None:
    _, stages = _dockerfile()
    final = stages[-1]
    (user,) = final.all("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root user (runAsNonRoot can check it)"
    assert not final.all("RUN"), "the final stage runs nothing: no package manager, no compiler"
    copies = final.all("COPY")
    assert copies and all(c.startswith("--from=") for c in copies), "only the build stage's output"
    for op, arg in final.instructions:
        assert not BUILD_TOOLS.search(arg) or op in ("LABEL", "CMD", "ENV"), (op, arg)


def test_the_build_stage_copies_every_package_folder_and_installs_the_wheel() -> None:
    _, stages = _dockerfile()
    build = stages[0]
    copied = {c.split()[0] for c in build.all("COPY")}
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    assert folders | {"pyproject.toml"} <= copied | {"pyproject.toml"}
    assert "pyproject.toml" in " ".join(build.all("COPY")) and "README.md" in " ".join(build.all("COPY"))
    (install,) = [r for r in build.all("RUN") if "--version" in r]
    assert "install --no-deps --no-index /tmp/wheel/*.whl" in install and "pip check" in install
    for command in pyproject["project"]["scripts"]:
        assert f"{command} --version" in install, f"the build checks {command} runs"


def test_the_three_commands_are_on_path_in_the_final_stage() -> None:
    _, stages = _dockerfile()
    final = stages[-1]
    env = " ".join(final.all("ENV"))
    assert "PATH=/opt/dra-bridge/bin:$PATH" in env
    assert "--from=build /opt/dra-bridge /opt/dra-bridge" in final.all("COPY")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {"dra-webhook", "dra-bridge", "dra-migrate"}
    assert shlex.split(final.all("CMD")[0].strip("[]").replace(",", " "))[0] in scripts


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv"} <= ignored
    _, stages = _dockerfile()
    needed = {c.split()[0] for c in stages[0].all("COPY")} | {"README.md"}
    assert not needed & ignored
