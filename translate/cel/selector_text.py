"""Building blocks for guarded CEL selectors (docs/design.md D4).

Every expression built here reads an attribute only behind a membership test, so a device
that lacks the attribute (or its whole domain) makes the selector false instead of raising a
CEL runtime error, which would abort the pod's whole allocation ("no such key": see
k8s.io/dynamic-resource-allocation cel/compile.go). Method calls are also guarded by a type
check (``type(x) in [string]``; the form ``type(x) == string`` exceeds the API server's CEL
cost estimate), because the same attribute name may carry another type under another driver.

All functions return CEL source text (``str``); quoting is done by :func:`literal`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

#: Characters removed from both sides when comparing product names: GPU Feature Discovery
#: drops every character outside ``[A-Za-z0-9-_. ]`` and turns spaces into dashes
#: (NVIDIA/k8s-device-plugin internal/lm/resource.go), while the NVIDIA DRA driver publishes
#: the raw NVML name. Removing these from both forms makes them compare equal.
PRODUCT_NAME_NOISE: tuple[str, ...] = (" ", "-", "_", ".", "(", ")", "/", ",", ":", "+")


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
    if len(values) == 1:
        test = f"{ref} == {literal(values[0])}"
    else:
        test = f"{ref} in [{', '.join(literal(v) for v in values)}]"
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
    listed = ", ".join(literal(v) for v in normal)
    return f"({has_attribute(domain, name)} && type({ref}) in [string] && {normalized_string_expr(ref)} in [{listed}])"


def is_version(ref: str) -> str:
    """True when ``ref`` is not a string, int or bool, i.e. a version (Semver) value."""
    # One list per type: CEL's type checker rejects a list literal mixing type(string) and
    # type(int) (found by the API server's compiler in the e2e tests).
    return " && ".join(f"!(type({ref}) in [{t}])" for t in ("string", "int", "bool"))


def any_of(parts: Sequence[str]) -> str:
    """OR of expressions (parenthesised); ``false`` for none."""
    if not parts:
        return "false"
    if len(parts) == 1:
        return parts[0]
    return "(" + " || ".join(parts) + ")"


def all_of(parts: Sequence[str]) -> str:
    """AND of expressions (parenthesised); ``true`` for none."""
    if not parts:
        return "true"
    if len(parts) == 1:
        return parts[0]
    return "(" + " && ".join(parts) + ")"


def negate(expr: str) -> str:
    """Logical NOT of an expression."""
    return f"!{expr}" if expr.startswith("(") else f"!({expr})"
