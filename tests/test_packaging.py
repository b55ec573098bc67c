"""The distribution installs its five folders under one namespace, dra_bridge (README, "Import names").

- pyproject lists every package and maps each top-level folder to ``dra_bridge.<folder>``;
- every module imports through the namespace from outside the repository (no folder of the
  checkout on ``sys.path``), and no module is loaded twice under two names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("translate", "kube", "migrate", "webhook", "bridge")


def test_pyproject_lists_every_package_folder_under_the_namespace() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {f"dra_bridge.{folder}": folder for folder in FOLDERS}
    on_disk = sorted(
        "dra_bridge." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    )
    assert sorted(setuptools["packages"]) == on_disk


_IMPORT_ALL = """
import importlib, json, os, pkgutil, sys
import dra_bridge
names = [m.name for m in pkgutil.walk_packages(dra_bridge.__path__, "dra_bridge.")]
for name in names:
    importlib.import_module(name)
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path:
        files.setdefault(os.path.realpath(path), []).append(name)
print(json.dumps({"names": names, "top": sorted(set(sys.modules) & {%s}),
                  "twice": {p: n for p, n in files.items() if len(n) > 1 and any(x.startswith("dra_bridge") for x in n)}}))
"""


def test_every_module_imports_through_the_namespace_once(tmp_path: Path) -> None:
    code = _IMPORT_ALL % ", ".join(repr(f) for f in FOLDERS)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONSAFEPATH": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert {f"dra_bridge.{folder}" for folder in FOLDERS} <= set(report["names"])
    assert "dra_bridge.translate.plan.pod_plan" in report["names"]
    assert report["top"] == [], "a module imported a folder by its bare name"
    assert report["twice"] == {}
