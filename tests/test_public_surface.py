"""Every package of the distribution has an ``__all__`` that is exactly its public surface.

The packages are those pyproject ships (``[tool.setuptools] packages``), checked against the
packages on disk, so a new subpackage is covered without editing this module. For each: the
``__all__`` exists, lists no name twice, each name resolves, and the public names (not
underscored, not a submodule, not a ``from __future__`` feature) are exactly those it lists.
"""

from __future__ import annotations
import __future__

import importlib
import pkgutil
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import dra_bridge

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
PACKAGES = sorted(tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["packages"])


def public_names(package: ModuleType) -> set[str]:
    """The names a reader of ``package`` sees: not underscored, no submodule, no ``__future__`` feature."""
    return {
        n
        for n, v in vars(package).items()
        if not n.startswith("_") and not isinstance(v, ModuleType | __future__._Feature)
    }


def test_the_packages_checked_are_every_package_of_the_namespace() -> None:
    on_disk = {m.name for m in pkgutil.walk_packages(dra_bridge.__path__, "dra_bridge.") if m.ispkg}
    assert set(PACKAGES) == on_disk


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names_and_each_resolves(name: str) -> None:
    package = importlib.import_module(name)
    assert hasattr(package, "__all__"), f"{name} has no __all__"
    listed = list(package.__all__)
    assert len(listed) == len(set(listed)), f"{name}.__all__ lists a name twice"
    assert [n for n in listed if not hasattr(package, n)] == [], f"{name}.__all__ names what it lacks"
    assert public_names(package) == set(listed)


def test_the_check_sees_a_public_name_missing_from_all() -> None:
    package = ModuleType("dra_bridge.example")
    vars(package).update(__all__=["Listed"], Listed=1, unlisted=2, _private=3, sub=ModuleType("dra_bridge.example.sub"))
    assert public_names(package) == {"Listed", "unlisted"}
