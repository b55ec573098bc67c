"""translate/names.py defines the NVIDIA labels and prefixes once: no other product module spells them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dra_bridge.translate import names

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("translate", "bridge", "webhook", "migrate", "kube")
NAMES_MODULE = ROOT / "translate" / "names.py"
#: What spells an NVIDIA label, resource prefix or CDI kind in a string: its domain with the
#: slash (also in a regular expression), or the bare domain compared as a whole.
SPELLINGS = ("nvidia.com/", "nvidia\\.com/")
DOMAIN = "nvidia.com"


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions (prose may name labels)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            # a bare string statement (a module, class, function or attribute docstring) is prose
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def spelled(source: str) -> list[tuple[int, str]]:
    """(line, string) of each string constant in code (not in a docstring) that spells an NVIDIA name."""
    tree = ast.parse(source)
    prose = docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and (node.value == DOMAIN or any(s in node.value for s in SPELLINGS))
    ]


def product_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if p != NAMES_MODULE)


def test_no_product_module_outside_names_spells_an_nvidia_label_or_prefix() -> None:
    found = {
        f"{p.relative_to(ROOT)}:{line}": text for p in product_modules() for line, text in spelled(p.read_text("utf-8"))
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('KEY = "nvidia.com/gpu.product"\n', id="a-constant"),
        pytest.param('def f(k):\n    return k.startswith("nvidia.com/")\n', id="a-prefix-test"),
        pytest.param('def f(v):\n    return v == "nvidia.com"\n', id="the-bare-domain"),
        pytest.param('import re\nX = re.compile(r"nvidia\\.com/(gpu\\.count)")\n', id="a-regular-expression"),
        pytest.param('def f(p):\n    return f"nvidia.com/{p}.major"\n', id="an-f-string"),
        pytest.param(
            'def f():\n    """Prose."""\n    raise ValueError("select nodes by nvidia.com/gpu.product too")\n',
            id="a-message-in-a-function-with-a-docstring",
        ),
    ],
)
def test_the_check_finds_each_way_of_spelling_one(source: str) -> None:
    assert spelled(source)


def test_the_check_leaves_prose_and_catalog_data_alone() -> None:
    assert spelled('"""Labels such as ``nvidia.com/gpu.product``."""\nX = 1\n"""GFD: nvidia.com/gpu.memory."""\n') == []
    assert not any(p.suffix != ".py" for p in product_modules())  # translate/data/*.yaml is data


def test_the_nvidia_names_keep_their_values() -> None:
    assert names.NVIDIA_RESOURCE_DOMAIN == "nvidia.com"
    assert names.NVIDIA_RESOURCE_PREFIX == names.GFD_PREFIX == "nvidia.com/"
    assert names.GFD_PRODUCT_LABEL == "nvidia.com/gpu.product"
    assert names.GFD_MEMORY_LABEL == "nvidia.com/gpu.memory"
    assert names.GFD_FAMILY_LABEL == "nvidia.com/gpu.family"
    assert (names.GFD_COMPUTE_MAJOR_LABEL, names.GFD_COMPUTE_MINOR_LABEL) == (
        "nvidia.com/gpu.compute.major",
        "nvidia.com/gpu.compute.minor",
    )
    assert names.GFD_MIG_STRATEGY_LABEL == "nvidia.com/mig.strategy"
    assert names.NVIDIA_TOOLKIT_CDI_KIND == "nvidia.com/gpu"
