"""Every package's docstring is a true map of it: it names each of its modules and subpackages.

A module is each ``*.py`` of the package but ``__init__.py``; the generated gRPC stubs
(``*_pb2.py``, ``*_pb2.pyi``, ``*_pb2_grpc.py``) may be named as one group, by ``_pb2``. A name counts
when it appears as a whole word (``pod_plan``, ``:mod:`~translate.plan.pod_plan```, ``plan/``).
docs/design.md D22.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("translate", "kube", "migrate", "webhook", "bridge")
STUB = re.compile(r"_pb2(_grpc)?$")

PACKAGES = sorted(init.parent for folder in FOLDERS for init in (ROOT / folder).rglob("__init__.py"))


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""


def members(package: Path) -> list[str]:
    modules = [p.stem for p in package.glob("*.py") if p.stem != "__init__" and not STUB.search(p.stem)]
    subpackages = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    stubs = ["_pb2"] if any(STUB.search(p.stem) for p in package.glob("*.py")) else []
    return sorted(modules + subpackages) + stubs


def named(doc: str, name: str) -> bool:
    if name == "_pb2":
        return "_pb2" in doc
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", doc) is not None


def test_every_package_folder_is_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PACKAGES}
    assert {"translate", "translate/plan", "bridge/kubeletapi", "kube", "migrate", "webhook"} <= names


@pytest.mark.parametrize("package", PACKAGES, ids=[p.relative_to(ROOT).as_posix() for p in PACKAGES])
def test_the_package_docstring_names_every_module_and_subpackage(package: Path) -> None:
    doc = docstring(package)
    assert len(doc) > 80
    assert [name for name in members(package) if not named(doc, name)] == []


def test_a_name_counts_only_as_a_whole_word() -> None:
    doc = "the plan (:mod:`~translate.plan.pod_plan`), ``cel/`` and the stubs (``api_pb2.py``)"
    assert named(doc, "pod_plan") and named(doc, "cel") and named(doc, "_pb2")
    assert not named(doc, "pod")
    assert not named(doc, "plan_pod") and not named(doc, "stubs_")
