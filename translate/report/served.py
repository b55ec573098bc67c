"""What the cluster serves, as a report judges paths by it: ``resource.k8s.io`` versions and the
DRA feature gates that decide paths. Pure.

    gates_from_metrics(text) -> {gate: enabled}          the ``kubernetes_feature_enabled`` samples
    cluster_features(minor, metrics, why) -> ClusterFeatures
    Served(features, api_versions)                        Settings.served of a report

Gates that decide paths (:data:`PATH_GATES`): ``DRAExtendedResource`` (KEP-5004's
extended-resource mapping: the ``kep-5004`` path), ``DRADeviceTaints`` and
``DRAPartitionableDevices`` (what the capacity check's allocator honours: taints on devices,
devices that share counters). They come from the API server's ``kubernetes_feature_enabled``
metric (``/metrics``; component-base's feature metric, one sample per gate the server
registers, 1 on, 0 off) where the report may read it, else from the release's defaults
(:func:`translate.alloc.release_defaults`); :attr:`ClusterFeatures.source` says which.
``Served.api_versions`` None means not known (a file report); empty means the cluster serves no
``resource.k8s.io`` version, and every path is ``blocked`` (:data:`NO_DRA`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from dra_bridge.translate.alloc import RELEASE_DEFAULTS, Features, features_of, release_defaults
from dra_bridge.translate.names import API_VERSIONS

PATH_GATES = ("DRAExtendedResource", "DRADeviceTaints", "DRAPartitionableDevices")
_SAMPLE = re.compile(r"^kubernetes_feature_enabled\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)", re.MULTILINE)
_NAME = re.compile(r'(?:^|,)\s*name="(?P<name>[^"]*)"')
#: The reason every path is blocked on a cluster that serves no resource.k8s.io version.
NO_DRA = (
    f"the cluster serves no resource.k8s.io version ({', '.join(v.rsplit('/', 1)[1] for v in API_VERSIONS)}): "
    "DRA is off, no claim can be allocated (1.32-1.33 need the DynamicResourceAllocation gate and the "
    "beta API in --runtime-config)"
)


def gates_from_metrics(text: str) -> dict[str, bool]:
    """Gate name -> enabled, from the ``kubernetes_feature_enabled`` samples of a Prometheus text
    page (value 1 on, anything else off); empty when the page has none."""
    out: dict[str, bool] = {}
    for m in _SAMPLE.finditer(text):
        name = _NAME.search(m.group("labels"))
        if name:
            try:
                out[name.group("name")] = float(m.group("value")) == 1.0
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class ClusterFeatures:
    """The DRA gates (:data:`translate.alloc.RELEASE_DEFAULTS`' names) and where they came from:
    ``source`` ``metrics`` (the API server's) or ``defaults`` (Kubernetes ``1.<minor>``'s), and
    ``note`` (why defaults, when they are)."""

    gates: dict[str, bool]
    source: Literal["metrics", "defaults"]
    minor: int
    note: str = ""

    @property
    def extended_resource(self) -> bool:
        """KEP-5004's extended-resource mapping (``DRAExtendedResource``) is on."""
        return self.gates.get("DRAExtendedResource", False)

    def mapping_off(self) -> str:
        """Why KEP-5004's extended-resource mapping does not serve pods here (empty: it does)."""
        if self.extended_resource:
            return ""
        if self.source == "metrics":
            return (
                "the extended-resource mapping is off on this cluster (DRAExtendedResource disabled on the API server)"
            )
        first = next(m for m, on in RELEASE_DEFAULTS["DRAExtendedResource"] if on)
        return (
            f"the extended-resource mapping is served from Kubernetes 1.{first} (target 1.{self.minor}: "
            "DRAExtendedResource off by default)"
        )

    def allocator(self) -> Features:
        """The capacity check's allocator features."""
        return features_of(self.gates)

    def as_json(self) -> dict[str, Any]:
        """``inputs.features`` of the report document."""
        return {
            "source": self.source,
            "kubernetesVersion": f"1.{self.minor}",
            "gates": {g: self.gates.get(g, False) for g in PATH_GATES},
            "note": self.note,
        }


def cluster_features(minor: int, metrics: str | None = None, why: str = "") -> ClusterFeatures:
    """The gates from ``metrics`` (the API server's ``/metrics`` text) where it has
    ``kubernetes_feature_enabled`` samples (a gate it lacks is off: the server does not have
    it), else Kubernetes ``1.<minor>``'s defaults with ``why`` (or why the page did not do)."""
    defaults = release_defaults(minor)
    if metrics is not None:
        seen = gates_from_metrics(metrics)
        if seen:
            return ClusterFeatures({g: seen.get(g, False) for g in defaults}, "metrics", minor)
        why = why or "the API server's /metrics has no kubernetes_feature_enabled samples"
    return ClusterFeatures(defaults, "defaults", minor, why or f"the documented defaults of Kubernetes 1.{minor}")


@dataclass(frozen=True)
class Served:
    """What the report judges against: the ``resource.k8s.io`` versions served (None: not
    known) and the DRA gates."""

    features: ClusterFeatures
    api_versions: tuple[str, ...] | None = None

    @property
    def no_dra(self) -> bool:
        """True when the cluster is known to serve no ``resource.k8s.io`` version."""
        return self.api_versions is not None and not any(v in API_VERSIONS for v in self.api_versions)
