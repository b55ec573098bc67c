"""A DRA CEL environment: evaluate DeviceClass / ResourceClaim selectors like the allocator.

Pure (no I/O). Built on cel-python (``celpy``, its interpreted runner) plus:

- :mod:`translate.cel.device_value`: Device JSON (v1/v1beta2/v1beta1) -> the ``device`` value;
- :mod:`translate.cel.library`, :mod:`translate.cel.string_functions`: the Kubernetes CEL
  functions cel-python lacks (quantity, semver, strings, lists, heterogeneous equality),
  called through :mod:`translate.cel.overloads`;
- :mod:`translate.cel.quantity_semver`: the ``Quantity`` and ``Semver`` value types.

Public API::

    compile_selector(expression) -> CompiledSelector        (cached; raises SelectorError)
    CompiledSelector.matches(device, driver) -> bool         (raises SelectorError)
    evaluate_selectors(expressions, device, driver) -> bool  (all must match)
    device_to_cel(device, driver) -> the CEL value of ``device``

The variable ``device`` (https://github.com/kubernetes/dynamic-resource-allocation/blob/master/cel/compile.go):

- ``driver``: string; ``allowMultipleAllocations``: bool (false when unset).
- ``attributes``: map domain -> map id -> value. ``int``/``bool``/``string`` become CEL
  int/bool/string, ``version`` a ``Semver`` object, the alpha list forms
  (``ints``/``bools``/``strings``/``versions``) lists of those.
- ``capacity``: map domain -> map id -> ``Quantity`` object.
- A bare attribute or capacity name belongs to the driver's domain; a qualified name
  ``domain/id`` is split at its last ``/`` (``parseQualifiedName`` in compile.go).
- An unknown domain yields an empty map (compile.go's mapper), so
  ``device.attributes["x.com"].foo`` is a "no such key" runtime error, while
  ``"foo" in device.attributes["x.com"]`` and ``has(device.attributes["x.com"].foo)`` are
  false.

Device input shapes: resource.k8s.io/v1 (and v1beta2) ``Device`` JSON
(``{"name", "attributes", "capacity"}``) or v1beta1 (``{"name", "basic": {...}}``).

Errors (all :class:`translate.errors.SelectorError`):

- compile: a syntax error, an expression over 10240 bytes (resource.k8s.io/v1
  validation), a call of a function this environment does not provide, or a reference
  to an undeclared variable (cel-go's checker rejects both at compile time).
- evaluation: ``selector on device <driver>/<device>: CEL runtime error: <detail>``, the
  shape the allocator uses (dynamic-resource-allocation ``structured`` allocator and
  ``cel/errors.go``); a "no such key" error carries a hint to guard the read. A result
  that is not a bool is an error too (compile.go).

Differences from Kubernetes, because cel-python cannot express them:

- No static type check: an ill-typed expression (``device.driver + 1``) fails only at
  evaluation, and a non-bool result only when evaluated.
- No optional syntax (``.?x``, ``orValue``): cel-python's grammar rejects it, so it is a
  compile error here. Guard with ``has()`` or ``in`` (docs/design.md D4).
- ``cel.bind(var, init, body)`` *is* supported (an evaluator hook in this module).
- No cost estimation or runtime cost limit.
- Kubernetes libraries not listed in :mod:`translate.cel.library` (URLs, regex
  ``find``, IP/CIDR, format, sets, authz) are compile errors here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, Context, Evaluator, base_functions

from dra_bridge.translate.cel.device_value import device_label, device_to_cel
from dra_bridge.translate.cel.library import LIBRARY_FUNCTIONS
from dra_bridge.translate.cel.overloads import cel_type_name
from dra_bridge.translate.errors import SelectorError

__all__ = [
    "MAX_EXPRESSION_BYTES",
    "CompiledSelector",
    "compile_selector",
    "device_to_cel",
    "evaluate_selectors",
]

MAX_EXPRESSION_BYTES: Final = 10240
"""CELDeviceSelector.expression limit (CELSelectorExpressionMaxLength, resource/v1)."""

_Tree = lark.Tree[Any]

_MACROS: Final = frozenset({"all", "exists", "exists_one", "map", "filter"})
_FUNCTIONS: Final = (
    frozenset(base_functions)
    | frozenset(LIBRARY_FUNCTIONS)
    | {
        "has",
        "dyn",
        "min",  # a built-in list method of cel-python, and of the Kubernetes lists library
    }
)
_GLOBALS: Final = frozenset(
    {"device", "bool", "bytes", "double", "duration", "int", "list", "map", "null_type"}
    | {"string", "timestamp", "type", "uint", "dyn"}
)
_OPERATORS: Final = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "_in_",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}
_NO_SUCH_KEY_HINT: Final = (
    ' (hint: the device lacks this key; guard the read with has(...) or "<id>" in device.attributes["<domain>"])'
)


# ------------------------------------------------------------------ evaluation engine


def _single_ident(tree: object) -> str | None:
    """The name if ``tree`` is an expression consisting of one identifier, else None."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def _is_bind(tree: _Tree) -> bool:
    return _single_ident(tree.children[0]) == "cel" and str(tree.children[1]) == "bind"


class _DraEvaluator(Evaluator):
    """cel-python's interpreter plus ``cel.bind(var, init, body)`` (cel-go ext.Bindings)."""

    def sub_evaluator(self, ast: _Tree) -> Evaluator:
        return _DraEvaluator(ast, activation=self.activation)

    def member_dot_arg(self, tree: _Tree) -> Any:
        if not _is_bind(tree):
            return super().member_dot_arg(tree)
        var_tree, init_tree, body_tree = tree.children[2].children
        value = self.visit(init_tree)
        if isinstance(value, CELEvalError):
            return value
        try:
            variable = str(_single_ident(var_tree))  # checked by _check at compile time
            return self.sub_evaluator(body_tree).evaluate({variable: value})
        except CELEvalError as error:
            return error


class _DraRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Context) -> celtypes.Value:
        return _DraEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)


@functools.cache
def _environment() -> Any:
    return celpy.Environment(runner_class=_DraRunner)


# ------------------------------------------------------------------ static checks


def _check(tree: _Tree, scope: frozenset[str], problems: list[str]) -> None:
    """Find unknown functions and undeclared variables, respecting macro/bind scopes."""
    kind = tree.data
    children = [child for child in tree.children if isinstance(child, lark.Tree)]
    if kind == "ident":
        name = str(tree.children[0])
        if name not in scope and name not in _GLOBALS:
            problems.append(f"undeclared reference to '{name}'")
        return
    if kind in ("ident_arg", "member_dot_arg"):
        name = str(tree.children[0 if kind == "ident_arg" else 1])
        receiver = children[0] if kind == "member_dot_arg" else None
        args = children[-1].children if children and children[-1].data == "exprlist" else []
        arg_trees = [arg for arg in args if isinstance(arg, lark.Tree)]
        binder = receiver is not None and (name in _MACROS or _is_bind(tree))
        if binder:
            variable = _single_ident(arg_trees[0]) if arg_trees else None
            wanted = 3 if name == "bind" else 2
            if variable is None or len(arg_trees) != wanted:
                problems.append(f"invalid arguments to {name}(): expected a variable name first")
                return
            if name == "bind":  # the receiver is the namespace ``cel``, not a variable
                _check(arg_trees[1], scope, problems)
                _check(arg_trees[2], scope | {variable}, problems)
            else:
                _check(receiver, scope, problems)  # type: ignore[arg-type]
                for arg in arg_trees[1:]:
                    _check(arg, scope | {variable}, problems)
            return
        if name not in _FUNCTIONS:
            problems.append(f"undeclared reference to function '{name}'")
    for child in children:
        _check(child, scope, problems)


# ------------------------------------------------------------------ compiled selectors


def _runtime_detail(error: CELEvalError) -> str:
    """Turn a cel-python error into a cel-go-like message (``no such key: model``)."""
    message = str(error.args[0]) if error.args else "evaluation failed"
    exc_class = error.args[1] if len(error.args) > 1 else None
    exc_args = error.args[2] if len(error.args) > 2 else None
    if exc_class is KeyError or message.startswith("no such member in mapping"):
        key = re.sub(r"^no such (member in mapping|key):? ?", "", message).strip("'")
        if not key and exc_args:
            key = str(exc_args[0])
        return f"no such key: {key}{_NO_SUCH_KEY_HINT}"
    message = message.split(" (in activation", 1)[0]
    match = re.match(r"found no matching overload for (.*?) applied to '\((.*)\)'", message)
    if match:
        operator = re.sub(r"^Token\('RULE', '(\w+)'\)$", r"\1", match.group(1)).strip("'")
        operator = _OPERATORS.get(operator, operator)
        kinds = re.findall(r"<class '(?:[\w]+\.)*(\w+?)(?:Type)?'>", match.group(2))
        return f"no such overload: {operator}({', '.join(kind.lower() for kind in kinds)})"
    if message == "return error for overflow":
        return "integer overflow"
    return message


@dataclass(frozen=True)
class CompiledSelector:
    """A compiled CEL device selector; evaluate it with :meth:`matches`."""

    expression: str
    _runner: Any = field(repr=False, compare=False)

    def matches(self, device: Mapping[str, Any], driver: str) -> bool:
        """Whether ``device`` (v1 or v1beta1 Device JSON) of ``driver`` satisfies this selector.

        Raises SelectorError for a malformed device (bad version or quantity), a CEL
        runtime error, or a non-bool result.
        """
        return self.evaluate(device_to_cel(device, driver), device_label(device, driver))

    def evaluate(self, cel_device: Any, label: str) -> bool:
        """Evaluate against a value from :func:`device_to_cel`; ``label`` names the device."""
        prefix = f"selector on device {label}: CEL runtime error: "
        try:
            result = self._runner.evaluate({"device": cel_device})
        except CELEvalError as error:
            raise SelectorError(prefix + _runtime_detail(error)) from error
        except (RecursionError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
            raise SelectorError(prefix + f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(result, celtypes.BoolType):
            raise SelectorError(
                f"selector on device {label}: CEL result of type {cel_type_name(result)}"
                f" is not a bool (expression {self.expression!r})"
            )
        return bool(result)


def _syntax_error(expression: str, error: CELParseError) -> str:
    line, column = getattr(error, "line", None), getattr(error, "column", None)
    if line is None or column is None:
        return f"syntax error: {str(error.args[0]).splitlines()[0]}"
    source = expression.splitlines()[line - 1] if expression.splitlines() else ""
    return f"syntax error at {line}:{column}\n | {source}\n | {'.' * (column - 1)}^"


@functools.lru_cache(maxsize=1024)
def _compile(expression: str) -> CompiledSelector:
    size = len(expression.encode("utf-8"))
    if size > MAX_EXPRESSION_BYTES:
        raise SelectorError(
            f"CEL selector expression at most 10 KiB: resource.k8s.io/v1 validation (this one has {size} bytes)"
        )
    environment = _environment()
    try:
        ast = environment.compile(expression)
    except CELParseError as error:
        raise SelectorError(
            f"CEL selector {expression!r} does not compile: {_syntax_error(expression, error)}"
        ) from error
    problems: list[str] = []
    _check(ast, frozenset(), problems)
    if problems:
        detail = "; ".join(dict.fromkeys(problems))
        raise SelectorError(f"CEL selector {expression!r} does not compile: {detail}")
    return CompiledSelector(expression, environment.program(ast, functions=LIBRARY_FUNCTIONS))


def compile_selector(expression: str) -> CompiledSelector:
    """Compile a CEL selector (cached: the same selectors are evaluated many times).

    Raises SelectorError naming the expression and the problem: a syntax error, an
    unknown function or variable, or more than 10240 bytes (resource.k8s.io/v1).
    """
    if not isinstance(expression, str):
        raise SelectorError(f"CEL selector must be a string, not {type(expression).__name__}")
    return _compile(expression)


def evaluate_selectors(expressions: Iterable[str], device: Mapping[str, Any], driver: str) -> bool:
    """True if every selector matches ``device`` (AND, as in a request or DeviceClass).

    Compiles each expression (cached) and converts the device once. Evaluation stops at
    the first selector that does not match, as the allocator does. Raises SelectorError.
    """
    compiled = [compile_selector(expression) for expression in expressions]
    if not compiled:
        return True
    cel_device = device_to_cel(device, driver)
    label = device_label(device, driver)
    return all(selector.evaluate(cel_device, label) for selector in compiled)
