"""Cluster-state rules: DaemonSet pods per node mode, quota safety."""

from __future__ import annotations

from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.cluster_state import daemonset_node, held_back
from dra_bridge.translate.plan.pod_plan import plan_pod
from dra_bridge.translate.plan.record import ConversionRecord
from dra_bridge.translate.plan.stay_legacy import CLUSTER_STATE
from tests.factories import gpu, make_container, make_pod

KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"


def _pinned(node: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            }
        }
    }


def _converted(catalog: Catalog) -> tuple[ConversionRecord | None, dict[str, Any]]:
    pod = make_pod([make_container("c", gpu(1))], affinity=_pinned("n1"))
    return plan_pod(pod, catalog).record, pod["spec"]


def test_daemonset_pods_convert_only_on_nodes_handed_over_to_dra(catalog: Catalog) -> None:
    migrated, spec = _converted(catalog)
    assert daemonset_node(spec) == "n1"
    legacy = held_back(migrated, spec, "DaemonSet", lambda n: None, frozenset(), catalog)
    assert [f.outcome for f in legacy] == ["kept-legacy"]
    assert held_back(migrated, spec, "DaemonSet", {"n1": "dra"}.get, frozenset(), catalog) == []
    assert held_back(migrated, spec, "ReplicaSet", lambda n: None, frozenset(), catalog) == []


def test_a_quota_on_the_legacy_resource_alone_keeps_the_pod_legacy(catalog: Catalog) -> None:
    migrated, spec = _converted(catalog)
    only_legacy = frozenset({"requests.nvidia.com/gpu"})
    assert [f.outcome for f in held_back(migrated, spec, "", lambda n: None, only_legacy, catalog)] == ["kept-legacy"]
    ignored = held_back(migrated, spec, "", lambda n: None, only_legacy, catalog, ignore_legacy_quota=True)
    assert [f.outcome for f in ignored] == ["partial"]
    both = held_back(migrated, spec, "", lambda n: None, only_legacy | {KEY}, catalog)
    assert [f.outcome for f in both] == ["partial"] and "Pending" in both[0].reason
    assert held_back(migrated, spec, "", lambda n: None, frozenset({"pods"}), catalog) == []


def test_an_unknown_quota_keeps_the_pod_legacy_and_says_why(catalog: Catalog) -> None:
    from dra_bridge.translate.plan.cluster_state import QuotaUnknown

    migrated, spec = _converted(catalog)
    unknown = QuotaUnknown("missing permission list core/resourcequotas")
    held = held_back(migrated, spec, "", lambda n: None, unknown, catalog)
    assert [(f.path, f.outcome) for f in held] == [("(quota-view)", "kept-legacy")]
    assert "list core/resourcequotas" in held[0].reason and "nvidia.com/gpu" in held[0].legacy
    ignored = held_back(migrated, spec, "", lambda n: None, unknown, catalog, ignore_legacy_quota=True)
    assert [(f.path, f.outcome) for f in ignored] == [("(quota-view)", "partial")]


def test_cluster_state_findings_carry_their_codes(catalog: Catalog) -> None:
    from dra_bridge.translate.findings import QUOTA_CLASS_NOT_COUNTED
    from dra_bridge.translate.plan.cluster_state import QuotaUnknown

    migrated, spec = _converted(catalog)
    found = [
        *held_back(migrated, spec, "DaemonSet", lambda n: None, frozenset(), catalog),
        *held_back(migrated, spec, "", lambda n: None, frozenset({"requests.nvidia.com/gpu"}), catalog),
        *held_back(migrated, spec, "", lambda n: None, frozenset({"nvidia.com/gpu", KEY}), catalog),
        *held_back(migrated, spec, "", lambda n: None, frozenset({"nvidia.com/gpu"}), catalog, True),
        *held_back(migrated, spec, "", lambda n: None, QuotaUnknown(), catalog),
        *held_back(migrated, spec, "", lambda n: None, QuotaUnknown(), catalog, True),
    ]
    assert len(found) == 6 and {f.code for f in found} == CLUSTER_STATE - {QUOTA_CLASS_NOT_COUNTED}
    assert held_back(None, spec, "", lambda n: None, QuotaUnknown(), catalog) == []


VENDOR_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def test_a_quota_on_the_bridge_class_alone_keeps_the_pod_legacy_under_the_vendor_target(catalog: Catalog) -> None:
    """MIGRATION.md's vendor step: quotas still count our class while new claims name the vendor's."""
    from dra_bridge.translate.findings import QUOTA_CLASS_NOT_COUNTED

    vendor = catalog.with_target("vendor")
    migrated, spec = _converted(vendor)
    for keys in ({KEY}, {KEY, "requests.nvidia.com/gpu"}):
        (held,) = held_back(migrated, spec, "", lambda n: None, frozenset(keys), vendor)
        assert (held.path, held.outcome, held.code, held.remedy_subject) == (
            "(quota)",
            "kept-legacy",
            QUOTA_CLASS_NOT_COUNTED,
            VENDOR_KEY,
        )
        assert held.code in CLUSTER_STATE
        assert KEY in held.reason and VENDOR_KEY in held.reason
    counted = held_back(migrated, spec, "", lambda n: None, frozenset({KEY, VENDOR_KEY}), vendor)
    assert [f.outcome for f in counted] == []
    waived = held_back(migrated, spec, "", lambda n: None, frozenset({KEY}), vendor, ignore_legacy_quota=True)
    assert waived == []
    bridge_target = _converted(catalog)[0]
    assert held_back(bridge_target, spec, "", lambda n: None, frozenset({KEY}), catalog) == []


def test_a_hand_edited_conversion_record_does_not_break_the_quota_rule_of_convert(catalog: Catalog) -> None:
    from dra_bridge.translate.names import CONVERSION_ANNOTATION
    from dra_bridge.translate.plan.cluster_state import hold_for_quota
    from dra_bridge.translate.plan.workloads import convert_object

    pod = make_pod([make_container("c", gpu(1))])
    pod["metadata"]["annotations"] = {CONVERSION_ANNOTATION: "{not json"}
    converted = convert_object(pod, catalog)
    held = hold_for_quota(pod, converted, frozenset({"requests.nvidia.com/gpu"}), catalog, False)
    assert held.findings == converted.findings  # the plan says why it stays; no RecordError
