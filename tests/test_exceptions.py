"""One exception tree per package, and no two exception classes of the distribution share a name.

Every module of dra_bridge is imported (pkgutil.walk_packages) and every exception class it
defines is collected by package (translate, kube, migrate, webhook, bridge; a subpackage counts
as its package). Each package has exactly one root, a class whose bases are all builtin
exceptions, and every other class derives from it; a name is defined once across packages, so
``except PolicyError`` always means one class.
"""

from __future__ import annotations

import builtins
import importlib
import pkgutil
from collections import defaultdict

import dra_bridge

PACKAGES = ("bridge", "kube", "migrate", "translate", "webhook")
BUILTIN_EXCEPTIONS = frozenset(
    v for v in vars(builtins).values() if isinstance(v, type) and issubclass(v, BaseException)
)


def _exceptions() -> dict[str, list[type[BaseException]]]:
    """Package -> the exception classes its modules define (not those they import)."""
    found: dict[str, list[type[BaseException]]] = defaultdict(list)
    for info in pkgutil.walk_packages(dra_bridge.__path__, "dra_bridge."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == info.name:
                found[info.name.split(".")[1]].append(value)
    return found


def _label(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_package_defines_exceptions_and_only_its_packages_are_walked() -> None:
    assert sorted(_exceptions()) == list(PACKAGES)


def test_no_two_exception_classes_share_a_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for classes in _exceptions().values():
        for cls in classes:
            by_name[cls.__name__].append(_label(cls))
    assert {name: where for name, where in by_name.items() if len(where) > 1} == {}


def test_each_package_has_one_root_and_every_other_exception_derives_from_it() -> None:
    for package, classes in sorted(_exceptions().items()):
        roots = [c for c in classes if all(base in BUILTIN_EXCEPTIONS for base in c.__bases__)]
        assert len(roots) == 1, f"{package}: roots {[_label(r) for r in roots]}"
        (root,) = roots
        strays = [_label(c) for c in classes if not issubclass(c, root)]
        assert strays == [], f"{package}: not under {root.__name__}"
