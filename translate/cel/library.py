"""Kubernetes CEL library functions that cel-python lacks, as cel-python extension functions.

cel-python resolves a call by *name only*: ``x.f(a)`` and ``f(x, a)`` both call the
Python function registered as ``f`` with the receiver first. Functions that Kubernetes
overloads on the receiver type (``indexOf`` on strings and lists, ``compareTo`` on
quantities and versions) therefore dispatch on the Python type here. Every function
returns a cel-python value, or a ``CELEvalError`` carrying the message that ends up in
the ``CEL runtime error: ...`` text; none raises.

Libraries (Kubernetes sources named per group), all in :data:`LIBRARY_FUNCTIONS`:

- strings: see :mod:`translate.cel.string_functions` (cel-go ``ext.Strings`` v2).
- lists, k8s.io/apiserver ``pkg/cel/library/lists.go``: ``isSorted``, ``sum``, ``max``,
  ``indexOf``, ``lastIndexOf`` (``min`` is a built-in of cel-python).
- quantity, ``pkg/cel/library/quantity.go``: ``quantity``, ``isQuantity``,
  ``isInteger``, ``asInteger`` (error on a fraction or int64 overflow),
  ``asApproximateFloat``, ``sign``, ``add``/``sub`` (quantity or int), ``isGreaterThan``,
  ``isLessThan``, ``compareTo`` (-1/0/1).
- semver, ``pkg/cel/library/semverlib.go``: ``semver(s[, normalize])``,
  ``isSemver(s[, normalize])``, ``major``, ``minor``, ``patch``, ``isGreaterThan``,
  ``isLessThan``, ``compareTo``.
- operators: heterogeneous ``==``/``!=``/``in`` (values of different types are simply
  unequal; ``1 == 1.0``; cel-go equality semantics) and int/uint/double ordering across
  types (``CrossTypeNumericComparisons`` in ``pkg/cel/environment/base.go``). cel-python
  alone raises for ``1 == "a"`` and ``1 < 1.5`` and treats ``true == 1`` as true.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Final

from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

from dra_bridge.translate.cel.overloads import (
    CelFunction,
    LibraryFailure,
    cel_function,
    cel_type_name,
    int_arg,
    overload_error,
    string_arg,
)
from dra_bridge.translate.cel.quantity_semver import Quantity, Semver
from dra_bridge.translate.cel.string_functions import STRING_FUNCTIONS, index_of, last_index_of
from dra_bridge.translate.errors import ValueFormatError

__all__ = ["LIBRARY_FUNCTIONS", "cel_equal"]


# ---------------------------------------------------------------- lists (lists.go)


def _list_index(items: celtypes.ListType, needle: object, last: bool) -> int:
    positions = range(len(items) - 1, -1, -1) if last else range(len(items))
    for position in positions:
        if cel_equal(items[position], needle):
            return position
    return -1


def _ordered(items: Sequence[object], name: str) -> list[Any]:
    kinds = {cel_type_name(item) for item in items}
    numeric = {"int", "uint", "double"}
    if len(kinds) > 1 and not kinds <= numeric:
        raise overload_error(name, [items])
    if kinds & {"bool", "list", "map", "null_type", "kubernetes.Semver"}:
        raise overload_error(name, [items])
    return list(items)


def _sort_key(item: Any) -> Any:
    if isinstance(item, Quantity):
        return item.value
    return Fraction(item) if _is_number(item) else item


@cel_function("isSorted")
def _fn_is_sorted(*args: Any) -> Any:
    if len(args) != 1 or not isinstance(args[0], celtypes.ListType):
        raise overload_error("isSorted", args)
    items = [_sort_key(item) for item in _ordered(args[0], "isSorted")]
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(items)))


@cel_function("sum")
def _fn_sum(*args: Any) -> Any:
    if len(args) != 1 or not isinstance(args[0], celtypes.ListType):
        raise overload_error("sum", args)
    items = args[0]
    if not items:
        return celtypes.IntType(0)
    total: Any = items[0]
    for item in items[1:]:
        total = total + item  # IntType/DoubleType check their own overflow and types
    return total


@cel_function("max")
def _fn_max(*args: Any) -> Any:
    if len(args) != 1 or not isinstance(args[0], celtypes.ListType):
        raise overload_error("max", args)
    if not args[0]:
        raise LibraryFailure("max called on empty list")
    return max(_ordered(args[0], "max"), key=_sort_key)


# ---------------------------------------------------------------- quantity (quantity.go)


def _quantity_arg(value: object, name: str, args: Sequence[object]) -> Quantity:
    if isinstance(value, Quantity):
        return value
    raise overload_error(name, args)


def _quantity(text: str) -> Quantity:
    try:
        return Quantity.parse(text)
    except ValueFormatError as exc:
        raise LibraryFailure(str(exc)) from exc


@cel_function("quantity")
def _fn_quantity(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("quantity", args)
    return _quantity(string_arg(args[0], "quantity", args))


@cel_function("isQuantity")
def _fn_is_quantity(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("isQuantity", args)
    try:
        Quantity.parse(string_arg(args[0], "isQuantity", args))
    except ValueFormatError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


@cel_function("isInteger")
def _fn_is_integer(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("isInteger", args)
    return celtypes.BoolType(_quantity_arg(args[0], "isInteger", args).as_int64() is not None)


@cel_function("asInteger")
def _fn_as_integer(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("asInteger", args)
    number = _quantity_arg(args[0], "asInteger", args).as_int64()
    if number is None:
        raise LibraryFailure("cannot convert value to integer")
    return celtypes.IntType(number)


@cel_function("asApproximateFloat")
def _fn_as_approximate_float(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("asApproximateFloat", args)
    return celtypes.DoubleType(float(_quantity_arg(args[0], "asApproximateFloat", args).value))


@cel_function("sign")
def _fn_sign(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("sign", args)
    return celtypes.IntType(_quantity_arg(args[0], "sign", args).sign())


def _arithmetic(name: str, negate: bool) -> CelFunction:
    @cel_function(name)
    def function(*args: Any) -> Any:
        if len(args) != 2:
            raise overload_error(name, args)
        left = _quantity_arg(args[0], name, args)
        other = args[1]
        amount = other.value if isinstance(other, Quantity) else Fraction(int_arg(other, name, args))
        return Quantity.from_amount(left.value - amount if negate else left.value + amount)

    return function


# ---------------------------------------------------------------- semver (semverlib.go)


def _semver_args(name: str, args: Sequence[object]) -> tuple[str, bool]:
    if len(args) not in (1, 2):
        raise overload_error(name, args)
    normalize = False
    if len(args) == 2:
        if not isinstance(args[1], celtypes.BoolType):
            raise overload_error(name, args)
        normalize = bool(args[1])
    return string_arg(args[0], name, args), normalize


@cel_function("semver")
def _fn_semver(*args: Any) -> Any:
    text, normalize = _semver_args("semver", args)
    try:
        return Semver.parse(text, normalize)
    except ValueFormatError as exc:
        raise LibraryFailure(str(exc)) from exc


@cel_function("isSemver")
def _fn_is_semver(*args: Any) -> Any:
    text, normalize = _semver_args("isSemver", args)
    try:
        Semver.parse(text, normalize)
    except ValueFormatError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver_part(name: str) -> CelFunction:
    @cel_function(name)
    def function(*args: Any) -> Any:
        if len(args) != 1 or not isinstance(args[0], Semver):
            raise overload_error(name, args)
        return celtypes.IntType(getattr(args[0], name))

    return function


# ------------------------------------------------ shared: comparisons, indexOf, operators


def _compare(name: str, args: Sequence[object]) -> int:
    if len(args) == 2:
        left, right = args
        if isinstance(left, Quantity) and isinstance(right, Quantity):
            return left.compare(right)
        if isinstance(left, Semver) and isinstance(right, Semver):
            return left.compare(right)
    raise overload_error(name, args)


@cel_function("compareTo")
def _fn_compare_to(*args: Any) -> Any:
    return celtypes.IntType(_compare("compareTo", args))


@cel_function("isGreaterThan")
def _fn_is_greater_than(*args: Any) -> Any:
    return celtypes.BoolType(_compare("isGreaterThan", args) > 0)


@cel_function("isLessThan")
def _fn_is_less_than(*args: Any) -> Any:
    return celtypes.BoolType(_compare("isLessThan", args) < 0)


def _indexer(name: str, last: bool) -> CelFunction:
    @cel_function(name)
    def function(*args: Any) -> Any:
        if len(args) == 2 and isinstance(args[0], celtypes.ListType):
            return celtypes.IntType(_list_index(args[0], args[1], last))
        if len(args) not in (2, 3):
            raise overload_error(name, args)
        text, needle = (string_arg(arg, name, args) for arg in args[:2])
        offset = int_arg(args[2], name, args) if len(args) == 3 else None
        search = last_index_of if last else index_of
        return celtypes.IntType(search(text, needle, offset))

    return function


_NUMBERS: Final = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)


def _is_number(value: object) -> bool:
    return isinstance(value, _NUMBERS) and not isinstance(value, celtypes.BoolType)


def _numeric_compare(left: Any, right: Any) -> int | None:
    """Exact -1/0/1 comparison of two CEL numbers of any kind; None if one is NaN."""
    if any(isinstance(value, float) and math.isnan(value) for value in (left, right)):
        return None
    a, b = Fraction(left), Fraction(right)
    return (a > b) - (a < b)


def cel_equal(left: object, right: object) -> bool:
    """CEL heterogeneous equality: different types are unequal, numbers compare by value."""
    if _is_number(left) and _is_number(right):
        return _numeric_compare(left, right) == 0
    if cel_type_name(left) != cel_type_name(right):
        return False
    if isinstance(left, celtypes.ListType) and isinstance(right, celtypes.ListType):
        return len(left) == len(right) and all(map(cel_equal, left, right))
    if isinstance(left, celtypes.MapType) and isinstance(right, celtypes.MapType):
        return left.keys() == right.keys() and all(cel_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _fn_equal(left: Any, right: Any) -> Any:
    for value in (left, right):
        if isinstance(value, CELEvalError):
            return value
    return celtypes.BoolType(cel_equal(left, right))


def _fn_not_equal(left: Any, right: Any) -> Any:
    result = _fn_equal(left, right)
    return result if isinstance(result, CELEvalError) else celtypes.BoolType(not result)


def _fn_in(item: Any, container: Any) -> Any:
    for value in (item, container):
        if isinstance(value, CELEvalError):
            return value
    if isinstance(container, (celtypes.ListType, celtypes.MapType)):
        return celtypes.BoolType(any(cel_equal(item, element) for element in container))
    return CELEvalError(str(overload_error("_in_", [item, container])), LibraryFailure, ())


def _ordering(name: str, test: Callable[[int], bool]) -> CelFunction:
    fallback = base_functions[name]

    def function(left: Any, right: Any) -> Any:
        for value in (left, right):
            if isinstance(value, CELEvalError):
                return value
        if _is_number(left) and _is_number(right) and type(left) is not type(right):
            order = _numeric_compare(left, right)
            return celtypes.BoolType(order is not None and test(order))
        if cel_type_name(left) != cel_type_name(right):
            return CELEvalError(str(overload_error(name, [left, right])), LibraryFailure, ())
        return fallback(left, right)

    return function


LIBRARY_FUNCTIONS: Final[dict[str, CelFunction]] = {
    **STRING_FUNCTIONS,
    "_==_": _fn_equal,
    "_!=_": _fn_not_equal,
    "_in_": _fn_in,
    "_<_": _ordering("_<_", lambda c: c < 0),
    "_<=_": _ordering("_<=_", lambda c: c <= 0),
    "_>_": _ordering("_>_", lambda c: c > 0),
    "_>=_": _ordering("_>=_", lambda c: c >= 0),
    "indexOf": _indexer("indexOf", last=False),
    "lastIndexOf": _indexer("lastIndexOf", last=True),
    "isSorted": _fn_is_sorted,
    "sum": _fn_sum,
    "max": _fn_max,
    "quantity": _fn_quantity,
    "isQuantity": _fn_is_quantity,
    "isInteger": _fn_is_integer,
    "asInteger": _fn_as_integer,
    "asApproximateFloat": _fn_as_approximate_float,
    "sign": _fn_sign,
    "add": _arithmetic("add", negate=False),
    "sub": _arithmetic("sub", negate=True),
    "semver": _fn_semver,
    "isSemver": _fn_is_semver,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "compareTo": _fn_compare_to,
    "isGreaterThan": _fn_is_greater_than,
    "isLessThan": _fn_is_less_than,
}
"""Name -> implementation, passed to ``celpy.Environment.program(functions=...)``."""
