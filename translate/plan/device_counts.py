"""Device counts of extended resources.

Extended resources are whole numbers (core/v1 validation: "must be an integer"); manifests
spell them as YAML ints or quoted strings (``"2"``), and sometimes as any other Kubernetes
quantity of the same amount (``"2000m"``, ``"2.0"``, ``"1k"``). They are parsed as the API
server parses quantities (:class:`translate.cel.quantity_semver.Quantity`, the one quantity
parser of translate), so ``requests: 2000m`` equals ``limits: "2"``.
"""

from __future__ import annotations

import math

from dra_bridge.translate.cel.quantity_semver import Quantity
from dra_bridge.translate.errors import CountError, ValueFormatError

#: Kubernetes quantities hold at most 2^63-1 milli-units: a larger count is refused.
MAX_COUNT = (2**63 - 1) // 1000
#: Longer text is not a quantity a person wrote (and would only make the arithmetic slow).
MAX_TEXT = 64


def parse_count(value: object) -> int:
    """The integer device count of a quantity value.

    Raises CountError (a ValueError) with the reason when the value is not a non-negative whole number
    (negative, fractional, out of range, or not a quantity at all). Binary suffixes (``Ki``...)
    are valid quantities, if odd for device counts.
    """
    if type(value) is int and 0 <= value <= MAX_COUNT:  # the common spellings, without the quantity parser
        return value
    if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 15 and value[0] != "0":
        return int(value)
    if isinstance(value, bool):
        raise CountError(f"{str(value).lower()} (a boolean) is not a quantity")
    if isinstance(value, float) and not math.isfinite(value):
        raise CountError(f"{value!r} is not a finite number")
    if isinstance(value, int | float):
        text = repr(value)
    elif isinstance(value, str):
        text = value
    elif value is None:
        raise CountError("an empty value (null) is not a quantity")
    else:
        raise CountError(f"a {type(value).__name__} is not a quantity")
    if len(text) > MAX_TEXT:
        raise CountError(f"{text[:MAX_TEXT]!r}... is not a quantity")
    try:
        number = Quantity.parse(text).value
    except ValueFormatError as exc:
        raise CountError(f"{value!r} is not a whole-number quantity") from exc
    if number < 0:
        raise CountError(f"{value!r} is negative")
    if number.denominator != 1:
        raise CountError(f"{value!r} is not a whole number (extended resources are counted in devices)")
    if number > MAX_COUNT:
        raise CountError(f"{value!r} is out of range")
    return int(number)
