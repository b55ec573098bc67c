"""The layers contract inside translate (.importlinter) places every module of translate.

import-linter checks only the modules a contract names: a new subpackage or top-level module
of translate left out of the rows would be free to import anything. This test fails then.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layered() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contract = config["importlinter:contract:translate-layers"]
    assert contract["containers"].split() == ["dra_bridge.translate"]
    return {name for row in contract["layers"].split("\n") for name in re.split(r"[|\s]+", row) if name}


def test_every_translate_module_and_subpackage_is_in_a_layer() -> None:
    folder = ROOT / "translate"
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in folder.glob("*/__init__.py")}
    assert _layered() == modules | packages
