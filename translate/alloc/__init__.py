"""The allocation engine: which devices the scheduler would allocate to ResourceClaims on a node.

Pure (no I/O). By concern: shapes of the input documents (:mod:`~translate.alloc.shapes`:
v1beta1/v1beta2 -> v1, checked), feature gates (:mod:`~translate.alloc.features`), node
matching (:mod:`~translate.alloc.node_match`), pools (:mod:`~translate.alloc.pools`), cached
CEL selectors (:mod:`~translate.alloc.selectors`), constraints
(:mod:`~translate.alloc.constraints`), consumable capacity (:mod:`~translate.alloc.capacity`),
what claims allocated earlier hold (:mod:`~translate.alloc.state`), device taints
(:mod:`~translate.alloc.taints`), the claims' requests validated (:mod:`~translate.alloc.validation`),
the search (:mod:`~translate.alloc.engine`), the
``status.allocation`` it writes (:mod:`~translate.alloc.results`), first-fit placement of many
pods over many nodes (:mod:`~translate.alloc.placement`), and a whole scenario
(:mod:`~translate.alloc.simulate`).
Rules are re-typed from k8s.io/dynamic-resource-allocation ``structured/`` (see each module).
"""

from dra_bridge.translate.alloc.engine import NodeAllocator
from dra_bridge.translate.alloc.features import (
    DEFAULT_GATES,
    RELEASE_DEFAULTS,
    Features,
    features_of,
    parse_gates,
    release_defaults,
)
from dra_bridge.translate.alloc.node_match import Node
from dra_bridge.translate.alloc.pools import gather_pools
from dra_bridge.translate.alloc.selectors import SelectorCache
from dra_bridge.translate.alloc.simulate import ClaimOutcome, Simulation, simulate
from dra_bridge.translate.alloc.state import AllocatedState

__all__ = [
    "DEFAULT_GATES",
    "RELEASE_DEFAULTS",
    "AllocatedState",
    "ClaimOutcome",
    "Features",
    "Node",
    "NodeAllocator",
    "SelectorCache",
    "Simulation",
    "features_of",
    "gather_pools",
    "parse_gates",
    "release_defaults",
    "simulate",
]
