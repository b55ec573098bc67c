"""Consumable capacity (DRAConsumableCapacity): what a request consumes of a device's capacity.

Pure (no I/O). Rules (``CmpRequestOverCapacity`` and the consumed-capacity helpers of
https://github.com/kubernetes/dynamic-resource-allocation/tree/master/structured; the device's
``capacity[].requestPolicy`` in https://github.com/kubernetes/api/blob/master/resource/v1/types.go):

- a request's ``capacity.requests`` names capacities of the device (a bare name belongs to
  the device's driver); a name the device lacks makes the device unsuitable;
- a device without ``allowMultipleAllocations`` only needs each requested amount to be at
  most its capacity (nothing is consumed, no result carries ``consumedCapacity``);
- a device with ``allowMultipleAllocations`` is consumed per capacity: with no request
  policy, the requested amount (the whole capacity when none is requested); with a policy
  and no request, its ``default``; ``validValues``: the smallest listed value at least the
  request; ``validRange``: at least ``min``, rounded up to ``min + n*step``, at most ``max``
  (a request no policy value satisfies makes the device unsuitable); the amounts already
  allocated plus those being allocated plus this one must fit in the capacity.

Amounts are exact numbers (:class:`fractions.Fraction`); each keeps the text it came from
for the ``consumedCapacity`` written into results.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from dra_bridge.translate.alloc.pools import quantity
from dra_bridge.translate.cel.quantity_semver import Quantity

__all__ = ["Amount", "consumption", "render"]

Amount = tuple[Fraction, str]


def render(amount: Fraction) -> str:
    """A canonical quantity string for an amount computed here."""
    return Quantity.from_amount(amount).text


def _text(value: Any) -> str:
    raw = value.get("value") if isinstance(value, Mapping) else value
    return str(raw)


def _lookup(capacity: Mapping[str, Any], name: str, driver: str) -> str | None:
    if name in capacity:
        return name
    domain, _, ident = name.rpartition("/")
    if domain == driver and ident in capacity:
        return ident
    if not domain and f"{driver}/{name}" in capacity:
        return f"{driver}/{name}"
    return None


def _by_policy(requested: Amount | None, capacity: Mapping[str, Any], where: str) -> Amount | None:
    total = quantity(capacity, where)
    policy = capacity.get("requestPolicy")
    if not policy:
        return requested if requested is not None else (total, _text(capacity))
    if requested is None:
        default = policy.get("default")
        return (
            (quantity(default, f"{where}.requestPolicy.default"), str(default))
            if default is not None
            else (total, _text(capacity))
        )
    amount = requested[0]
    if policy.get("validValues"):
        values = sorted((quantity(v, f"{where}.requestPolicy.validValues"), str(v)) for v in policy["validValues"])
        return next((v for v in values if v[0] >= amount), None)
    valid_range = policy.get("validRange")
    if valid_range:
        low = quantity(valid_range.get("min"), f"{where}.requestPolicy.validRange.min")
        if amount <= low:
            return (low, str(valid_range.get("min")))
        step = valid_range.get("step")
        if step is not None:
            size = quantity(step, f"{where}.requestPolicy.validRange.step")
            steps = -(-(amount - low) // size)
            amount = low + steps * size
        high = valid_range.get("max")
        if high is not None and amount > quantity(high, f"{where}.requestPolicy.validRange.max"):
            return None
        return (amount, requested[1] if amount == requested[0] else render(amount))
    return requested


def consumption(
    device: Mapping[str, Any], driver: str, requests: Mapping[str, Any], multiple: bool, used: Mapping[str, Fraction]
) -> dict[str, Amount] | None:
    """What the request consumes of ``device`` (``{capacity name: amount}``), or None if it does not fit.

    ``multiple``: the device allows multiple allocations (and the gate is on); ``used``: the
    amounts already allocated or being allocated, by capacity name. For a device without
    multiple allocations the result is ``{}`` when every requested amount fits.
    """
    capacity = device.get("capacity") or {}
    wanted: dict[str, Amount] = {}
    for name, value in requests.items():
        key = _lookup(capacity, str(name), driver)
        if key is None:
            return None
        wanted[key] = (quantity(value, f"capacity.requests[{name!r}]"), str(value))
    if not multiple:
        for key, (amount, _) in wanted.items():
            if amount > quantity(capacity[key], f"device {device.get('name')} capacity[{key!r}]"):
                return None
        return {}
    out: dict[str, Amount] = {}
    for key, cap in capacity.items():
        where = f"device {device.get('name')} capacity[{key!r}]"
        consumed = _by_policy(wanted.get(key), cap, where)
        if consumed is None or used.get(key, Fraction(0)) + consumed[0] > quantity(cap, where):
            return None
        out[key] = consumed
    return out
