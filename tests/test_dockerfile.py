"""The user Dockerfile cannot be built here (no registry to pull a base image from), so its
rules are checked on the parsed file: stages, base, user, what the final stage holds, and
that it copies every package folder pyproject installs and offers the three commands."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|build-essential|python3?-dev|libffi-dev|apt-get|apk|pip)\b")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [arg for o, arg in self.instructions if o == op]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages): instructions with line continuations joined, comments dropped."""
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
    args: dict[str, str] = {}
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
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
    return args, stages


def _dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse((ROOT / "Dockerfile").read_text())


def test_parse_reads_stages_and_joins_continuations() -> None:
    args, stages = parse("ARG B=x:1\nFROM ${B} AS one\nRUN a \\\n  && b\n# c\nFROM ${B}\nUSER 1\n")
    assert args == {"B": "x:1"}
    assert [(s.base, s.name) for s in stages] == [("${B}", "one"), ("${B}", None)]
    assert stages[0].all("RUN") == ["a  && b"]


def test_the_header_says_it_is_not_built_here() -> None:
    header = (ROOT / "Dockerfile").read_text().split("\nARG", 1)[0]
    assert "NOT BUILT HERE" in header and "no container registry" in header


def test_multi_stage_on_a_slim_python_base() -> None:
    args, stages = _dockerfile()
    assert len(stages) >= 2
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", args["PYTHON_IMAGE"])
    assert {s.base for s in stages} == {"${PYTHON_IMAGE}"}
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11" and args["PYTHON_IMAGE"].startswith("python:3.11")


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
    (install,) = [r for r in build.all("RUN") if "pip install" in r]
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
