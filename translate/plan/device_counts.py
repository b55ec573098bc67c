"""Device counts of extended resources.

Extended resources are whole numbers (core/v1 validation: "must be an integer"); manifests
spell them as YAML ints or quoted strings (``"2"``), occasionally with a decimal SI suffix
(``"1k"``) or a zero fraction (``"2.0"``).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, DecimalException

from dra_bridge.translate.errors import CountError

#: Kubernetes quantities hold at most 10^18 (int64 milli-units): larger exponents are refused
#: before any arithmetic.
MAX_EXPONENT = 30
_SUFFIX = {"": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(r"([+]?[0-9]+(?:\.[0-9]*)?|[+]?\.[0-9]+)(?:(e|E)([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei)|([kMGTPE]?))")


def parse_count(value: object) -> int:
    """The integer device count of a quantity value.

    Raises CountError (a ValueError) with the reason when the value is not a non-negative whole number
    (negative, fractional, out of range, or not a quantity at all). Binary suffixes (``Ki``...)
    are valid quantities, if odd for device counts.
    """
    if isinstance(value, bool):
        raise CountError(f"{str(value).lower()} (a boolean) is not a quantity")
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CountError(f"{value!r} is not a finite number")
        number = Decimal(repr(value))
    elif isinstance(value, str):
        m = _QUANTITY.fullmatch(value)
        if not m:
            raise CountError(f"{value!r} is not a whole-number quantity")
        exponent = int(m.group(3)) if m.group(3) else _SUFFIX[m.group(5) or ""]
        if abs(exponent) > MAX_EXPONENT:
            raise CountError(f"{value!r} is out of range")
        try:
            number = Decimal(m.group(1)).scaleb(exponent) * (2 ** _BINARY[m.group(4)] if m.group(4) else 1)
        except DecimalException as exc:
            raise CountError(f"{value!r} is not a quantity") from exc
    elif value is None:
        raise CountError("an empty value (null) is not a quantity")
    else:
        raise CountError(f"a {type(value).__name__} is not a quantity")
    if number < 0:
        raise CountError(f"{value!r} is negative")
    if number != number.to_integral_value():
        raise CountError(f"{value!r} is not a whole number (extended resources are counted in devices)")
    return int(number)
