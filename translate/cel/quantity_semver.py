"""Kubernetes Quantity and Semver values for the DRA CEL environment (pure, no I/O).

Both classes are immutable Python objects that the CEL evaluator (cel-python) carries as
opaque values; the functions that operate on them live in :mod:`translate.cel.library`.

``Quantity``
    A ``resource.Quantity`` from k8s.io/apimachinery ``pkg/api/resource/quantity.go``:
    ``<sign?><digits>[.<digits>]<suffix>`` where the suffix is a decimal SI suffix
    (``n u m "" k M G T P E``), a binary suffix (``Ki Mi Gi Ti Pi Ei``) or a decimal
    exponent (``e3``, ``E-2``). The value is exact (:class:`fractions.Fraction`); like
    Kubernetes, anything finer than 1n is rounded up (away from zero) to the next nano.
``Semver``
    A semantic version (semver.org 2.0.0). ``Semver.parse`` is strict (what
    ``semver(s)`` and DRA ``version`` attributes accept: k8s.io/apiserver
    ``pkg/cel/library/semverlib.go``, resource validation ``semverRe``);
    ``Semver.parse(s, normalize=True)`` first strips a leading ``v``, fills a missing
    minor/patch with ``0`` and drops leading zeros from major/minor/patch (the
    ``semver(s, true)`` form of the same library). Ordering follows semver 2.0.0
    precedence; build metadata is ignored when comparing.

Errors: both parsers raise :class:`~translate.errors.ValueFormatError` with a message saying what is wrong; the
CEL library turns that into a CEL runtime error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from dra_bridge.translate.errors import ValueFormatError

__all__ = ["Quantity", "Semver"]

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
# sign, integer digits, fraction digits, suffix (validated separately).
_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT_RE: Final = re.compile(r"[eE]([+-]?[0-9]+)")
# An exponent beyond this is certainly outside anything Kubernetes can represent and
# would only make Fraction arithmetic slow.
_MAX_EXPONENT: Final = 1000
_NANO: Final = Fraction(1, 10**9)
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _parse_suffix(suffix: str, text: str) -> Fraction:
    """Return the multiplier of a quantity suffix (resource/suffix.go rules)."""
    if suffix in _DECIMAL_SUFFIXES:
        return Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return Fraction(2 ** _BINARY_SUFFIXES[suffix])
    match = _EXPONENT_RE.fullmatch(suffix)
    if match is None:
        raise ValueFormatError(f"quantities must match the regular expression: invalid suffix in {text!r}")
    exponent = int(match.group(1))
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueFormatError(f"quantity {text!r} is out of range")
    return Fraction(10) ** exponent


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Round away from zero to a multiple of 1n (ParseQuantity rounds up past nano)."""
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    magnitude = -(-abs(scaled.numerator) // scaled.denominator)  # ceil(|scaled|)
    return Fraction(magnitude if value > 0 else -magnitude) * _NANO


@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact Kubernetes quantity, e.g. ``Quantity.parse("40Gi")``.

    ``value`` is the exact amount; ``text`` is the string it was parsed from (or a
    canonical decimal for results of arithmetic). ``==`` compares amounts, so
    ``quantity("1Gi") == quantity("1073741824")`` (Kubernetes ``Quantity.Equal``).
    """

    value: Fraction
    text: str = field(default="")

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse a quantity string; raise ValueFormatError if it is not one.

        Rules: k8s.io/apimachinery ``resource.ParseQuantity`` (sign, digits with an
        optional fraction, then one suffix; no spaces; at least one digit).
        """
        match = _QUANTITY_RE.fullmatch(text)
        if not text or match is None:
            raise ValueFormatError("quantities must match the regular expression: empty quantity")
        sign, whole, fraction, suffix = match.groups()
        fraction = fraction or ""
        if not whole and not fraction:
            raise ValueFormatError(f"quantities must match the regular expression: {text!r}")
        mantissa = Fraction(int(whole + fraction or "0"), 10 ** len(fraction))
        value = _round_up_to_nano(mantissa * _parse_suffix(suffix, text))
        return cls(-value if sign == "-" else value, text)

    @classmethod
    def from_amount(cls, value: Fraction) -> Quantity:
        """A quantity holding ``value`` (rounded up to nano), rendered canonically."""
        value = _round_up_to_nano(value)
        if value.denominator == 1:
            return cls(value, str(value.numerator))
        return cls(value, f"{value.numerator * 10**9 // value.denominator}n")

    def sign(self) -> int:
        """-1, 0 or 1 (``Quantity.Sign``)."""
        return (self.value > 0) - (self.value < 0)

    def as_int64(self) -> int | None:
        """The value as an int64, or None if it is fractional or out of range."""
        if self.value.denominator != 1:
            return None
        number = self.value.numerator
        return number if _INT64_MIN <= number <= _INT64_MAX else None

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1 as ``self`` is less than, equal to or greater than ``other``."""
        return (self.value > other.value) - (self.value < other.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


_NUM: Final = r"(?:0|[1-9][0-9]*)"
_PRE_ID: Final = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID: Final = r"[0-9A-Za-z-]+"
_SEMVER_RE: Final = re.compile(
    rf"({_NUM})\.({_NUM})\.({_NUM})"
    rf"(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?"
    rf"(?:\+({_BUILD_ID}(?:\.{_BUILD_ID})*))?"
)
_CORE_PART_RE: Final = re.compile(r"[0-9]+")


def _normalize(text: str) -> str:
    """Apply the ``semver(s, true)`` normalisation (semverlib.go normalizeAndParse)."""
    text = text.removeprefix("v")
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    core, rest = text[:cut], text[cut:]
    parts = core.split(".")
    if len(parts) > 3:
        raise ValueFormatError(f"invalid semver {text!r}: more than three dot-separated parts")
    if not all(_CORE_PART_RE.fullmatch(part) for part in parts):
        raise ValueFormatError(f"invalid semver {text!r}: major, minor and patch must be digits")
    parts = [part.lstrip("0") or "0" for part in parts]
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts) + rest


def _compare_prerelease(left: tuple[str, ...], right: tuple[str, ...]) -> int:
    """Semver 2.0.0 rule 11: precedence of pre-release identifier lists."""
    if left == right:
        return 0
    if not left:
        return 1  # a release ranks above any of its pre-releases
    if not right:
        return -1
    for a, b in zip(left, right, strict=False):
        if a == b:
            continue
        a_num, b_num = a.isdigit(), b.isdigit()
        if a_num and b_num:
            return -1 if int(a) < int(b) else 1
        if a_num != b_num:
            return -1 if a_num else 1  # numeric identifiers rank below alphanumeric
        return -1 if a < b else 1  # ASCII order
    return -1 if len(left) < len(right) else 1


@dataclass(frozen=True, eq=False)
class Semver:
    """A semantic version; ``==`` and ``compare`` use semver precedence (build ignored)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """Parse ``text``; raise ValueFormatError if it is not a semver 2.0.0 version."""
        candidate = _normalize(text) if normalize else text
        match = _SEMVER_RE.fullmatch(candidate)
        if match is None:
            raise ValueFormatError(f"invalid semver {text!r}")
        major, minor, patch, pre, build = match.groups()
        return cls(
            int(major),
            int(minor),
            int(patch),
            tuple(pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver 2.0.0 precedence."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        return _compare_prerelease(self.prerelease, other.prerelease)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Semver):
            return self.compare(other) == 0
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"
