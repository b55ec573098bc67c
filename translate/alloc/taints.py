"""Device taints and the tolerations of a request, as the allocator reads them.

Pure (no I/O). Rules (k8s.io/dynamic-resource-allocation ``resourceclaim.ToleratesTaint`` and
the ``structured`` allocator's taint check): a device is not allocated for a request when one of
its taints with effect ``NoSchedule`` or ``NoExecute`` is tolerated by none of the request's
tolerations; a toleration with an effect or a key matches only that effect or key, ``Exists``
matches any value, ``Equal`` (the default) the same value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """resourceclaim.ToleratesTaint."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a ``NoSchedule`` or ``NoExecute`` taint among ``taints`` is tolerated by none of
    ``tolerations`` (the device is then not allocated)."""
    return any(
        taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations)
        for taint in taints
    )
