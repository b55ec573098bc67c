"""MIGRATION.md's commands, as a new user would copy them (``test_migration_guide.py``).

:func:`guide_commands` reads the guide and returns every command it gives, in the order they
appear, as :class:`Command` (section title, text): each logical line of a ````sh`` block
(backslash continuations joined, a trailing ``# comment`` dropped) and each inline code span
that starts with a command the guide tells the operator to run (``kubectl``, ``helm``,
``dra-migrate``, ``dra-bridge``, ``docker``, ``nvidia-ctk``), whitespace collapsed. Texts are
unique keys: the same command written twice is one entry (its first place).

:class:`GuideShell` runs such a command with ``bash -c`` in a working directory, with
``KUBECONFIG`` and a ``PATH`` that holds ``kubectl``, ``helm`` and the project's commands, after
the substitutions a user makes (placeholders such as ``NODE``, ``REGISTRY``), and records which
commands ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.e2e.controlplane import REPO_ROOT

GUIDE = REPO_ROOT / "MIGRATION.md"
COMMANDS = ("kubectl", "helm", "dra-migrate", "dra-bridge", "docker", "nvidia-ctk")
_INLINE = re.compile(r"`([^`]+)`")
_COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class Command:
    section: str
    text: str


def _sh_lines(block: list[str]) -> list[str]:
    out: list[str] = []
    pending = ""
    for line in block:
        line = line.strip()
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = _COMMENT.sub("", pending + line).strip()
        pending = ""
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _inline(paragraph: str) -> list[str]:
    spans = (" ".join(m.group(1).split()) for m in _INLINE.finditer(paragraph))
    return [s for s in spans if s.split(" ", 1)[0] in COMMANDS and " " in s]


def _check_yaml(section: str, lines: list[str]) -> None:
    """A YAML snippet of the guide must parse: a user pastes it as it is."""
    try:
        yaml.safe_load(textwrap.dedent("\n".join(lines)))
    except yaml.YAMLError as e:
        raise ValueError(f"MIGRATION.md, section {section!r}: a ```yaml block that does not parse: {e}") from e


def guide_commands(text: str) -> list[Command]:
    """Every command of the guide ``text`` (see the module docstring), first place first."""
    found: dict[str, Command] = {}
    section = ""
    block: list[str] | None = None
    snippet: list[str] | None = None  # a ```yaml block: an object to paste, not a command
    paragraph: list[str] = []

    def add(texts: list[str]) -> None:
        for t in texts:
            found.setdefault(t, Command(section, t))

    def flush() -> None:
        add(_inline(" ".join(paragraph)))
        paragraph.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if block is not None:
            if stripped.startswith("```"):
                add(_sh_lines(block))
                block = None
            else:
                block.append(line)
        elif snippet is not None:
            if stripped.startswith("```"):
                _check_yaml(section, snippet)
                snippet = None
            else:
                snippet.append(line)
        elif stripped.startswith("```"):
            flush()
            if stripped == "```sh":
                block = []
            elif stripped == "```yaml":
                snippet = []
            else:
                raise ValueError(f"MIGRATION.md: a code block that is neither ```sh nor ```yaml: {stripped}")
        elif line.startswith("#"):
            flush()
            section = line.lstrip("#").strip()
        elif not stripped or stripped.startswith("|"):
            flush()
            add(_inline(stripped))
        else:
            paragraph.append(stripped)
    flush()
    return list(found.values())


@dataclass
class GuideShell:
    """Runs the guide's commands; ``substitutions`` maps a placeholder to its value."""

    cwd: Path
    kubeconfig: Path
    path: list[Path]
    substitutions: dict[str, str]
    known: set[str]
    ran: list[str] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)

    def substitute(self, command: str) -> str:
        for placeholder, value in self.substitutions.items():
            if placeholder.isidentifier():  # a word: only where it stands alone (NODE, not NODES)
                command = re.sub(rf"\b{placeholder}\b", value, command)
            else:
                command = command.replace(placeholder, value)
        return command

    def run(
        self, command: str, *, ok: bool = True, extra: str = "", timeout: float = 150
    ) -> subprocess.CompletedProcess[str]:
        """Run the guide's ``command`` (substituted, then ``extra`` appended: a test-environment
        argument); assert it exits 0 unless ``ok`` is False."""
        assert command in self.known, f"not a command of MIGRATION.md (the guide changed?): {command}"
        line = self.substitute(command) + extra
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.pathsep.join([*(str(p) for p in self.path), os.environ.get("PATH", "")]),
        }
        proc = subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=self.cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        self.ran.append(command)
        self.transcript.append(f"$ {line}\n(exit {proc.returncode})\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        if ok:
            assert proc.returncode == 0, (
                f"`{line}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return proc
