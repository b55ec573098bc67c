"""Exceptions raised by the migration rules.

The tree (one per package; third-party errors are chained with ``raise ... from``)::

    TranslateError                 base of every error raised by ``translate``
    ├── CatalogError               a catalog file is malformed (names the file, key and rule)
    ├── InputError                 an object cannot be read as the kind it claims to be
    │   ├── PolicyError            a webhook policy file violates its schema (translate/policy.py)
    │   └── RecordError            a pod's conversion record is malformed (names the pod, the
    │                              annotation and the rule)
    ├── SelectorError              a CEL selector does not compile or fails at evaluation
    │   └── LibraryFailure         raised inside a CEL library function, returned to cel-python as
    │                              its error value (translate/cel/overloads.py)
    ├── InventoryError             a device-plugin inventory cannot become ResourceSlices
    ├── ClaimError                 a ResourceClaim the kubelet asks us to prepare cannot be (names
    │                              the claim and the rule: translate/cdi.py)
    ├── AllocationError            the allocator refuses a set of claims as upstream's does (an
    │   │                          unknown class, a CEL error, a pool being updated: translate/alloc)
    │   └── PlacementError         one not about a node (a CEL error, an unknown class): the
    │                              search over nodes stops (translate/alloc/placement.py)
    ├── Untranslatable             a GPU label requirement with device meaning that cannot become a
    │                              selector: a finding (translate/plan/gfd_selectors.py)
    ├── OverLimit                  text being rendered would cross a limit the API server enforces
    │                              (a CEL selector's length or cost): a finding, never an object the
    │                              API server refuses (translate/cel/selector_text.py, docs/design.md D33)
    ├── _NotPlain                  a YAML node translate/fast_yaml.py leaves to PyYAML's constructor
    │                              (caught there, never raised out)
    ├── ApiVersionError            a resource.k8s.io version we do not render (also a ValueError)
    ├── CountError                 a device count that is not a whole number (also a ValueError)
    └── ValueFormatError           a string that is not a Kubernetes quantity or a semantic
                                   version (also a ValueError)

Two private signals of one module each derive from ``TranslateError`` too and never leave it:
``_MaxSize`` (the allocator's backtracking, translate/alloc/engine.py) and ``_Unsure``
(translate/cel/reads.py). No class name here is used by another package (tests/test_exceptions.py).

``ApiVersionError``, ``CountError`` and ``ValueFormatError`` are ValueErrors too, so that callers written against
the builtin keep working; new code catches them by name.

Findings about a pod (something that cannot be translated) are *not* exceptions: they are
returned in the plan, so a whole manifest set is always processed.
"""

from __future__ import annotations


class TranslateError(Exception):
    """Base class of every error raised by the ``translate`` package."""


class CatalogError(TranslateError):
    """A catalog (shipped or user-supplied) violates its schema or a rule."""


class InputError(TranslateError):
    """An input object is not a well-formed instance of its kind."""


class SelectorError(TranslateError):
    """A CEL selector failed to compile or raised an error when evaluated."""


class InventoryError(TranslateError):
    """A device-plugin inventory cannot be turned into ResourceSlices."""


class ClaimError(TranslateError):
    """A claim cannot be prepared; the message names the claim and the rule it breaks."""


class AllocationError(TranslateError):
    """The allocator stops with an error for a set of claims (translate/alloc; upstream's message)."""


class PolicyError(InputError):
    """A webhook policy file violates its schema (names the file, the key and the rule:
    ``translate.policy``)."""


class RecordError(InputError):
    """A conversion record annotation is malformed; the message names the pod, the annotation and the rule."""


class ApiVersionError(TranslateError, ValueError):
    """A ``resource.k8s.io`` version other than v1, v1beta2 and v1beta1."""


class CountError(TranslateError, ValueError):
    """A device count (an extended-resource quantity) that is not a non-negative whole number."""


class ValueFormatError(TranslateError, ValueError):
    """A string that is not a Kubernetes quantity (``40Gi``) or a semantic version (``1.2.3``)."""


class OverLimit(TranslateError):
    """Text being rendered would cross a limit the API server enforces; ``limit`` names it (the
    constant of the API types, such as ``CELSelectorExpressionMaxLength``). Raised as soon as the
    limit is crossed, so the work stays bounded by the limit, not by the input (docs/design.md D33)."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit
