"""Device counts of extended resources.

Extended resources are whole numbers (core/v1 validation: "must be an integer"); manifests
spell them as YAML ints or quoted strings (``"2"``), occasionally with a decimal SI suffix
(``"1k"``) or a zero fraction (``"2.0"``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {"": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"([+]?[0-9]+(?:\.[0-9]*)?|[+]?\.[0-9]+)(?:(e|E)([+-]?[0-9]+)|([kMGTPE]?))")


def parse_count(value: object) -> int:
    """The integer device count of a quantity value.

    Raises ValueError with the reason when the value is not a non-negative whole number
    (negative, fractional, binary-suffixed, or not a quantity at all).
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a quantity")
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))
    elif isinstance(value, str):
        m = _QUANTITY.fullmatch(value.strip())
        if not m:
            raise ValueError(f"{value!r} is not a whole-number quantity")
        try:
            number = Decimal(m.group(1))
        except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
            raise ValueError(f"{value!r} is not a quantity") from exc
        exponent = int(m.group(3)) if m.group(3) else _SUFFIX[m.group(4) or ""]
        number = number.scaleb(exponent)
    else:
        raise ValueError(f"{type(value).__name__} is not a quantity")
    if number < 0:
        raise ValueError(f"{value!r} is negative")
    if number != number.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number (extended resources are counted in devices)")
    return int(number)
