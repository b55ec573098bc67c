"""Building blocks for guarded CEL selectors (docs/design.md D4).

Every expression built here reads an attribute only behind a membership test, so a device
that lacks the attribute (or its whole domain) makes the selector false instead of raising a
CEL runtime error, which would abort the pod's whole allocation ("no such key": see
k8s.io/dynamic-resource-allocation cel/compile.go). Method calls are also guarded by a type
check (``type(x) in [string]``; the form ``type(x) == string`` exceeds the API server's CEL
cost estimate), because the same attribute name may carry another type under another driver.

All functions return CEL source text (``str``); quoting is done by :func:`literal`.

Bounded (docs/design.md D33): the API server refuses a selector longer than
:data:`MAX_EXPRESSION_LENGTH` or one whose estimated cost exceeds :data:`MAX_EXPRESSION_COST`.
Every list these functions join is consumed lazily and checked part by part (:func:`join`), and
:func:`checked` checks a finished selector: :class:`~translate.errors.OverLimit` is raised as
soon as a limit is crossed, so a pod listing thousands of values costs work up to the limit,
never text many times its own size.

The cost bound. No Python port of the API server's CEL cost estimator exists, so the estimate is
bounded from the text: no node of the shapes built here is estimated above
:data:`COST_PER_CHARACTER` (64). The costliest are string functions over an attribute, which
the API server's size estimator bounds at 64 bytes (``DeviceAttributeMaxValueLength``):
``replace`` traverses it twice at 0.1 per byte (13), ``lowerAscii`` once (7), string equality
once (7); ``x in [...]`` costs one per element, and each element takes at least three characters;
a list literal costs 10 to build and takes at least two (the Kubernetes library's cost.go, cel-go's
checker/cost.go). Each node takes at least one character of text, so an expression costs at
most 64 per character: at the length limit 64 x 10240 = 655,360, under 1,000,000, so for these
shapes the length limit is always crossed first. The e2e test
(tests/e2e/test_api_limits_e2e.py) creates a selector just under the length limit, built from
the densest shape (the product-name test with its ten ``replace`` calls), and the API server
accepts it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from dra_bridge.translate.errors import OverLimit

#: The longest CEL selector the API server accepts (resource.k8s.io ``CELSelectorExpressionMaxLength``).
MAX_EXPRESSION_LENGTH = 10 * 1024
#: The highest estimated cost of a CEL selector it accepts (``CELSelectorExpressionMaxCost``).
MAX_EXPRESSION_COST = 1_000_000
#: The most any one node of the shapes built here is estimated to cost, and so a bound on the
#: cost per character of their text (the derivation: the module docstring).
COST_PER_CHARACTER = 64

#: Characters removed from both sides when comparing product names: GPU Feature Discovery
#: drops every character outside ``[A-Za-z0-9-_. ]`` and turns spaces into dashes
#: (NVIDIA/k8s-device-plugin internal/lm/resource.go), while the NVIDIA DRA driver publishes
#: the raw NVML name. Removing these from both forms makes them compare equal.
PRODUCT_NAME_NOISE: tuple[str, ...] = (" ", "-", "_", ".", "(", ")", "/", ",", ":", "+")


def _crossed(length: int) -> OverLimit | None:
    """The limit an expression of ``length`` characters crosses, or None."""
    if length > MAX_EXPRESSION_LENGTH:
        return OverLimit(
            f"the device selector would be longer than {MAX_EXPRESSION_LENGTH} characters, the API server's "
            "limit (CELSelectorExpressionMaxLength)",
            "CELSelectorExpressionMaxLength",
        )
    if length * COST_PER_CHARACTER > MAX_EXPRESSION_COST:
        return OverLimit(
            f"the device selector's estimated CEL cost could exceed {MAX_EXPRESSION_COST}, the API server's "
            "limit (CELSelectorExpressionMaxCost)",
            "CELSelectorExpressionMaxCost",
        )
    return None


def checked(expr: str) -> str:
    """``expr``, or OverLimit when the API server would refuse it for its length or cost."""
    crossed = _crossed(len(expr))
    if crossed is not None:
        raise crossed
    return expr


def bounded(parts: Iterable[str], sep: str) -> list[str]:
    """``parts`` as a list, read one at a time: OverLimit as soon as they, joined by ``sep``,
    would cross a limit (the rest is never produced)."""
    out: list[str] = []
    size = -len(sep)
    for part in parts:
        size += len(part) + len(sep)
        crossed = _crossed(size)
        if crossed is not None:
            raise crossed
        out.append(part)
    return out


def join(parts: Iterable[str], sep: str = ", ") -> str:
    """``parts`` joined by ``sep``, bounded as :func:`bounded`."""
    return sep.join(bounded(parts, sep))


def literal(value: str | int | bool) -> str:
    """Render a Python scalar as a CEL literal (strings JSON-quoted, which CEL accepts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def attributes(domain: str) -> str:
    """The CEL map of a domain's attributes: ``device.attributes["<domain>"]``."""
    return f"device.attributes[{literal(domain)}]"


def capacity(domain: str) -> str:
    """The CEL map of a domain's capacities: ``device.capacity["<domain>"]``."""
    return f"device.capacity[{literal(domain)}]"


def has_attribute(domain: str, name: str) -> str:
    """True when the device carries ``<domain>/<name>`` (never an error)."""
    return f"{literal(name)} in {attributes(domain)}"


def has_capacity(domain: str, name: str) -> str:
    """True when the device carries capacity ``<domain>/<name>`` (never an error)."""
    return f"{literal(name)} in {capacity(domain)}"


def attribute(domain: str, name: str) -> str:
    """Unguarded read of an attribute; only use behind :func:`has_attribute`."""
    return f"{attributes(domain)}.{name}"


def string_attribute_in(domain: str, name: str, values: Sequence[str]) -> str:
    """The device's string attribute equals one of ``values`` (false when absent)."""
    ref = attribute(domain, name)
    listed = literal(values[0]) if len(values) == 1 else f"[{join(literal(v) for v in values)}]"
    test = f"{ref} {'==' if len(values) == 1 else 'in'} {listed}"
    # Equality and list membership are false across types (heterogeneous equality): no
    # type guard needed, unlike method calls.
    return f"({has_attribute(domain, name)} && {test})"


def normalized_product(value: str) -> str:
    """The comparison form of a product name: lower case, noise characters removed.

    ``"NVIDIA A100-SXM4-40GB"`` and the GFD label value ``"NVIDIA-A100-SXM4-40GB"`` both
    become ``"nvidiaa100sxm440gb"``.
    """
    out = value.lower()
    for ch in PRODUCT_NAME_NOISE:
        out = out.replace(ch, "")
    return out


def normalized_string_expr(ref: str) -> str:
    """CEL that normalises a string expression like :func:`normalized_product`."""
    out = f"{ref}.lowerAscii()"
    for ch in PRODUCT_NAME_NOISE:
        out += f'.replace({literal(ch)}, "")'
    return out


def product_in(domain: str, name: str, values: Iterable[str]) -> str:
    """The device's product name matches one of ``values`` in normalised form."""
    normal = sorted({normalized_product(v) for v in values})
    ref = attribute(domain, name)
    listed = join(literal(v) for v in normal)
    return f"({has_attribute(domain, name)} && type({ref}) in [string] && {normalized_string_expr(ref)} in [{listed}])"


def is_version(ref: str) -> str:
    """True when ``ref`` is not a string, int or bool, i.e. a version (Semver) value."""
    # One list per type: CEL's type checker rejects a list literal mixing type(string) and
    # type(int) (found by the API server's compiler in the e2e tests).
    return " && ".join(f"!(type({ref}) in [{t}])" for t in ("string", "int", "bool"))


def any_of(parts: Iterable[str]) -> str:
    """OR of expressions (parenthesised); ``false`` for none. Bounded (:func:`bounded`)."""
    parts = bounded(parts, " || ")
    if not parts:
        return "false"
    if len(parts) == 1:
        return parts[0]
    return "(" + " || ".join(parts) + ")"


def all_of(parts: Iterable[str]) -> str:
    """AND of expressions (parenthesised); ``true`` for none. Bounded (:func:`bounded`)."""
    parts = bounded(parts, " && ")
    if not parts:
        return "true"
    if len(parts) == 1:
        return parts[0]
    return "(" + " && ".join(parts) + ")"


def negate(expr: str) -> str:
    """Logical NOT of an expression."""
    return f"!{expr}" if expr.startswith("(") else f"!({expr})"
