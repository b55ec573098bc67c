"""ResourceQuotas on legacy device resources, listed per namespace (pure).

    legacy_quotas(quotas, catalog, namespaces) -> [QuotaReport]

Every ResourceQuota of the input that limits a catalogued legacy device resource
(``requests.<name>`` or ``<name>``) or counts one of our bridge classes is listed, also when the
input has none of its namespace's workloads (``workloads``: 0): its legacy keys, the DRA class
keys it has, and the class keys the catalog's target writes for its legacy resources that it
lacks (``missing``). Where a quota would not count a converted pod, the plan keeps that pod
legacy (:func:`translate.plan.cluster_state.quota_holes`, docs/design.md D27); this list says
which quotas to look at before a namespace is enforced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.names import DRA_QUOTA_SUFFIX
from dra_bridge.translate.plan.quota import dra_quota_key


@dataclass(frozen=True)
class QuotaReport:
    """One ResourceQuota on legacy devices or our classes (see the module docstring)."""

    namespace: str
    name: str
    legacy: tuple[str, ...]
    classes: tuple[str, ...]
    missing: tuple[str, ...]
    workloads: int

    def as_json(self) -> dict[str, Any]:
        """The ``quotas[]`` entry of the JSON document."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "legacyKeys": list(self.legacy),
            "classKeys": list(self.classes),
            "missingKeys": list(self.missing),
            "workloads": self.workloads,
        }


def legacy_quotas(
    quotas: Iterable[Mapping[str, Any]], catalog: Catalog, namespaces: Iterable[str]
) -> list[QuotaReport]:
    """The quotas to list; ``namespaces``: each workload's namespace in the input (repeated per workload)."""
    per_namespace = Counter(namespaces)
    ours = {f"{c['metadata']['name']}{DRA_QUOTA_SUFFIX}" for c in catalog.device_classes()}
    out: list[QuotaReport] = []
    for q in quotas:
        meta, spec = q.get("metadata"), q.get("spec")
        hard = spec.get("hard") if isinstance(spec, Mapping) else None
        if not isinstance(hard, Mapping) or not isinstance(meta, Mapping):
            continue
        keys = [str(k) for k in hard]
        legacy, wanted = [], []
        for key in keys:
            mapping = catalog.lookup(key.removeprefix("requests."))
            if mapping is not None:
                legacy.append(key)
                if mapping.kind != "slicing":
                    wanted.append(dra_quota_key(mapping))
        classes = [k for k in keys if k.endswith(DRA_QUOTA_SUFFIX)]
        if not legacy and not set(classes) & ours:
            continue
        namespace = str(meta.get("namespace") or "")
        out.append(
            QuotaReport(
                namespace,
                str(meta.get("name") or ""),
                tuple(legacy),
                tuple(classes),
                tuple(sorted(set(wanted) - set(keys))),
                per_namespace[namespace],
            )
        )
    return sorted(out, key=lambda r: (r.namespace, r.name))
