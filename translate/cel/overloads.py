"""How a DRA CEL library function is called: arguments, overload errors, failures.

cel-python calls an extension function with its arguments, possibly an error value among
them. :func:`cel_function` wraps an implementation so that an error argument propagates and a
:class:`LibraryFailure` (or a Python ``TypeError``/``ValueError``) becomes a cel-python
``CELEvalError`` whose message ends up in ``CEL runtime error: ...``; :func:`string_arg` and
:func:`int_arg` check an argument's type and :func:`overload_error` says which overload is
missing, in the words of cel-go (``no such overload: f(int, string)``); :func:`cel_type_name`
names a value's CEL type. Used by :mod:`translate.cel.string_functions` and
:mod:`translate.cel.library`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from dra_bridge.translate.cel.quantity_semver import Quantity, Semver
from dra_bridge.translate.errors import SelectorError

__all__ = [
    "CelFunction",
    "LibraryFailure",
    "cel_function",
    "cel_type_name",
    "int_arg",
    "overload_error",
    "string_arg",
]

CelFunction = Callable[..., Any]


class LibraryFailure(SelectorError):
    """Raised inside a library function; becomes a CELEvalError with this message (never
    leaves :func:`cel_function`'s wrapper)."""


def cel_type_name(value: object) -> str:
    """The CEL name of a value's type, for error messages (``int``, ``string``...)."""
    names: list[tuple[type, str]] = [
        (celtypes.BoolType, "bool"),
        (celtypes.IntType, "int"),
        (celtypes.UintType, "uint"),
        (celtypes.DoubleType, "double"),
        (celtypes.StringType, "string"),
        (celtypes.BytesType, "bytes"),
        (celtypes.ListType, "list"),
        (celtypes.MapType, "map"),
        (Quantity, "kubernetes.Quantity"),
        (Semver, "kubernetes.Semver"),
        (type(None), "null_type"),
    ]
    for python_type, name in names:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def overload_error(name: str, args: Sequence[object]) -> LibraryFailure:
    kinds = ", ".join(cel_type_name(arg) for arg in args)
    return LibraryFailure(f"no such overload: {name}({kinds})")


def cel_function(name: str) -> Callable[[CelFunction], CelFunction]:
    """Wrap a library function: propagate error arguments, turn failures into errors."""

    def decorate(implementation: CelFunction) -> CelFunction:
        @functools.wraps(implementation)
        def wrapper(*args: Any) -> Any:
            for arg in args:
                if isinstance(arg, CELEvalError):
                    return arg
            try:
                return implementation(*args)
            except LibraryFailure as failure:
                return CELEvalError(str(failure), LibraryFailure, failure.args)
            except (TypeError, ValueError, IndexError) as exc:
                error = CELEvalError(str(overload_error(name, args)), type(exc), exc.args)
                error.__cause__ = exc
                return error

        return wrapper

    return decorate


def string_arg(value: object, name: str, args: Sequence[object]) -> str:
    if isinstance(value, str):
        return value
    raise overload_error(name, args)


def int_arg(value: object, name: str, args: Sequence[object]) -> int:
    if isinstance(value, int) and not isinstance(value, celtypes.BoolType):
        return int(value)
    raise overload_error(name, args)
