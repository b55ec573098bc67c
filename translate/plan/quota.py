"""ResourceQuota and DRA: the class key that counts devices, and converting a quota (pure).

KEP-4381 quota counts DRA devices per DeviceClass under ``<class>.deviceclass.resource.k8s.io/devices``;
the legacy key ``requests.<resource>`` stops applying to converted pods (design: traps). A
converted ResourceQuota keeps its legacy keys and gains the class key with the same allowance
(the sum, where several legacy resources share one class), so converted pods stay limited
while legacy ones remain. What a quota means for one converted pod is decided in
:mod:`translate.plan.cluster_state` (and :func:`translate.plan.stay_legacy.legacy_quota_only`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_bridge.translate.catalog import Catalog, ResourceMapping
from dra_bridge.translate.errors import CountError
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.json_copy import clone_mapping
from dra_bridge.translate.names import DRA_QUOTA_SUFFIX
from dra_bridge.translate.plan.device_counts import parse_count


def dra_quota_key(mapping: ResourceMapping) -> str:
    """The ResourceQuota key that counts devices of the mapping's class (KEP-4381)."""
    return f"{mapping.device_class}{DRA_QUOTA_SUFFIX}"


def convert_quota(obj: Mapping[str, Any], catalog: Catalog) -> tuple[dict[str, Any], tuple[Finding, ...]]:
    """A ResourceQuota (v1) with each legacy ``requests.<name>`` key joined by its DRA class key;
    never mutates ``obj``. Returns the new object and findings."""
    new = clone_mapping(obj)
    spec = new.get("spec")
    hard = spec.get("hard") if isinstance(spec, dict) else None
    findings: list[Finding] = []
    if not isinstance(hard, dict):
        return new, ()
    # Several legacy keys may map to one class (the vendor's mig.nvidia.com serves every MIG
    # profile): the class key gets their sum, so no allowance is lost.
    sums: dict[str, tuple[int, list[str]]] = {}
    for key in list(hard):
        if not isinstance(key, str) or not key.startswith("requests."):
            continue
        mapping = catalog.lookup(key[len("requests.") :])
        if mapping is None or mapping.kind == "slicing":
            continue
        dra_key = dra_quota_key(mapping)
        path = f"spec.hard[{key}]"
        if dra_key in hard and dra_key not in sums:
            continue
        try:
            count = parse_count(hard[key])
        except CountError as exc:
            findings.append(Finding(path, f"{key}: {hard[key]}", "unsupported", f"invalid quantity: {exc}"))
            continue
        total, keys = sums.get(dra_key, (0, []))
        sums[dra_key] = (total + count, [*keys, key])
        hard[dra_key] = str(total + count)
    for dra_key, (total, keys) in sums.items():
        merged = f" (the sum of {', '.join(keys)}: per-resource limits become one limit)" if len(keys) > 1 else ""
        findings.append(
            Finding(
                f"spec.hard[{keys[0]}]",
                ", ".join(f"{k}: {hard[k]}" for k in keys),
                "partial",
                f"converted pods are charged to {dra_key} = {total}{merged}; until the legacy "
                "keys go, the namespace's total allowance is doubled",
            )
        )
    return new, tuple(findings)
