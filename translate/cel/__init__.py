"""The DRA CEL environment: compile and evaluate device selectors as the allocator does.

Owns everything about running CEL against ResourceSlice devices: the environment and its
static checks (:mod:`~translate.cel.environment`), which parts of ``device`` a selector reads
(:mod:`~translate.cel.reads`, for the allocator's cache), a Device JSON as the CEL value ``device``
(:mod:`~translate.cel.device_value`), the Kubernetes CEL library functions cel-python lacks
(:mod:`~translate.cel.library`, :mod:`~translate.cel.string_functions`, called through
:mod:`~translate.cel.overloads`), the ``Quantity`` and ``Semver`` values
(:mod:`~translate.cel.quantity_semver`), and the text of guarded selectors the migration
writes (:mod:`~translate.cel.selector_text`).
"""

from dra_bridge.translate.cel.environment import (
    MAX_EXPRESSION_BYTES,
    CompiledSelector,
    compile_selector,
    device_to_cel,
    evaluate_selectors,
)
from dra_bridge.translate.cel.quantity_semver import Quantity, Semver

__all__ = [
    "MAX_EXPRESSION_BYTES",
    "CompiledSelector",
    "Quantity",
    "Semver",
    "compile_selector",
    "device_to_cel",
    "evaluate_selectors",
]
