"""The capacity check (issue 12, "Capacity"): do the converted workloads fit the cluster's devices,
and where do they place differently from the legacy device-plugin path?

Pure (no I/O). By concern: the typed inputs and outputs (:mod:`~translate.capacity.model`),
workloads' demand from legacy and converted objects (:mod:`~translate.capacity.demand`), the
pods each pod template of a workload creates (:mod:`~translate.capacity.pod_counts`; a
Trainer TrainJob's from its runtime: :mod:`~translate.capacity.train_jobs`), the
cluster's devices from ResourceSlices, inventory dumps or node capacity
(:mod:`~translate.capacity.inventory`), node filters and the legacy model
(:mod:`~translate.capacity.legacy`), the DRA model (:mod:`~translate.capacity.dra`) on
:mod:`translate.alloc`, why a pod does not fit (:mod:`~translate.capacity.diagnose`; without a
scan of the nodes for the common shape: :mod:`~translate.capacity.shortage`), and the
whole check with per node pool usage (:mod:`~translate.capacity.fit`). The rules an operator
reads: docs/capacity.md.
"""

from dra_bridge.translate.capacity.demand import (
    legacy_requests,
    node_constraints,
    pod_demand,
    pod_demands,
    pod_priority,
    workload_demand,
)
from dra_bridge.translate.capacity.fit import DEFAULT_POOL_LABEL, check_capacity, device_classes
from dra_bridge.translate.capacity.inventory import ClusterDevices, cluster_devices, cluster_node
from dra_bridge.translate.capacity.model import (
    CapacityResult,
    ClaimDemand,
    ClusterNode,
    Code,
    Held,
    NodeConstraints,
    PodDemand,
    PodFit,
    PoolUsage,
    WorkloadDemand,
    WorkloadFit,
    placement_order,
)

__all__ = [
    "DEFAULT_POOL_LABEL",
    "CapacityResult",
    "ClaimDemand",
    "ClusterDevices",
    "ClusterNode",
    "Code",
    "Held",
    "NodeConstraints",
    "PodDemand",
    "PodFit",
    "PoolUsage",
    "WorkloadDemand",
    "WorkloadFit",
    "check_capacity",
    "cluster_devices",
    "cluster_node",
    "device_classes",
    "legacy_requests",
    "node_constraints",
    "placement_order",
    "pod_demand",
    "pod_demands",
    "pod_priority",
    "workload_demand",
]
