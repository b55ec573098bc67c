"""Topology alignment (issue 14): matchAttribute constraints over one container's (or the pod's)
requests, written only where every target publishes the attribute."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.alignment import Alignment
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod
from dra_bridge.translate.plan.record import ConversionRecord
from tests.factories import gpu, make_container, make_pod
from tests.translate.checks import check_limits, devices_seen

NUMA = "resource.kubernetes.io/numaNode"
PCIE = "resource.kubernetes.io/pcieRoot"
VERSIONS = {"resource.k8s.io/v1": "1.34.0", "resource.k8s.io/v1beta2": "1.33.0", "resource.k8s.io/v1beta1": "1.32.0"}


def _plan(
    catalog: Catalog,
    pod: dict[str, Any],
    policy: str = "numa",
    scope: str = "container",
    target: str = "bridge",
    api_version: str = "resource.k8s.io/v1",
) -> Plan:
    catalog = catalog.with_target("vendor") if target == "vendor" else catalog
    return plan_pod(
        pod,
        catalog,
        Options(api_version=api_version, alignment=policy, alignment_scope=scope),  # type: ignore[arg-type]
        "team-a",
    )


def _constraints(plan: Plan) -> list[list[tuple[str, ...]]]:
    """Per template, the constraints as tuples of the containers whose requests they cover."""
    users: dict[str, set[str]] = {}
    for c in plan.pod["spec"].get("initContainers", []) + plan.pod["spec"]["containers"]:
        for ref in (c.get("resources") or {}).get("claims") or []:
            users.setdefault(ref["request"], set()).add(c["name"])
    out = []
    for t in plan.templates:
        internal = internal_from_template(t)
        out.append(
            [
                (*sorted({u for r in con["requests"] for u in users[r]}), con["matchAttribute"])
                for con in internal.get("constraints", [])
            ]
        )
    return out


def _requests_of(plan: Plan, container: str) -> list[str]:
    for c in plan.pod["spec"].get("initContainers", []) + plan.pod["spec"]["containers"]:
        if c["name"] == container:
            return [r["request"] for r in c["resources"]["claims"]]
    raise AssertionError(container)


@pytest.mark.parametrize("count", [2, 4, 8], ids=["2", "4", "8"])
@pytest.mark.parametrize("policy,attribute", [("numa", NUMA), ("pcie", PCIE)], ids=["numa", "pcie"])
def test_a_container_with_several_gpus_gets_one_constraint_over_its_requests(
    catalog: Catalog, count: int, policy: str, attribute: str
) -> None:
    plan = _plan(catalog, make_pod([make_container("main", gpu(count))]), policy)
    internal = internal_from_template(plan.templates[0])
    assert internal["constraints"] == [{"requests": _requests_of(plan, "main"), "matchAttribute": attribute}]
    assert devices_seen(plan.pod, list(plan.templates)) == {("main", "nvidia-gpu.dra-bridge.io"): count}


def test_one_device_needs_no_constraint(catalog: Catalog) -> None:
    plan = _plan(catalog, make_pod([make_container("a", gpu(1)), make_container("b", gpu(1))]))
    assert _constraints(plan) == [[]]
    assert "constraints" not in plan.templates[0]["spec"]["spec"]["devices"]


def test_pod_scope_aligns_every_container_together(catalog: Catalog) -> None:
    pod = make_pod([make_container("a", gpu(1)), make_container("b", gpu(2))])
    assert _constraints(_plan(catalog, pod, scope="pod")) == [[("a", "b", NUMA)]]
    assert _constraints(_plan(catalog, pod)) == [[("b", NUMA)]]


@pytest.mark.parametrize("count", [2, 4, 8], ids=["2", "4", "8"])
def test_each_container_is_aligned_on_its_own_with_container_scope(catalog: Catalog, count: int) -> None:
    pod = make_pod([make_container("a", gpu(count)), make_container("b", gpu(count))])
    assert _constraints(_plan(catalog, pod)) == [[("a", NUMA), ("b", NUMA)]]
    assert _constraints(_plan(catalog, pod, scope="pod")) == [[("a", "b", NUMA)]]


def test_an_init_container_reusing_app_devices_is_aligned_over_exactly_its_requests(catalog: Catalog) -> None:
    # init 4 borrows app's 2 and 2 extra: app's constraint covers its request, the init's both.
    pod = make_pod([make_container("app", gpu(2))], init=[make_container("setup", gpu(4))])
    plan = _plan(catalog, pod)
    app, setup = _requests_of(plan, "app"), _requests_of(plan, "setup")
    assert len(app) == 1 and len(setup) == 2 and app[0] in setup
    internal = internal_from_template(plan.templates[0])
    assert internal["constraints"] == [
        {"requests": app, "matchAttribute": NUMA},
        {"requests": setup, "matchAttribute": NUMA},
    ]
    assert devices_seen(plan.pod, list(plan.templates)) == {
        ("app", "nvidia-gpu.dra-bridge.io"): 2,
        ("setup", "nvidia-gpu.dra-bridge.io"): 4,
    }


def test_an_init_container_reusing_part_of_an_app_container_splits_it_and_both_stay_aligned(catalog: Catalog) -> None:
    # init 1 of app 4: the app is split (1 + 3); the app's constraint covers both parts, the init none.
    pod = make_pod([make_container("app", gpu(4))], init=[make_container("setup", gpu(1))])
    plan = _plan(catalog, pod)
    assert len(_requests_of(plan, "app")) == 2
    internal = internal_from_template(plan.templates[0])
    assert internal["constraints"] == [{"requests": _requests_of(plan, "app"), "matchAttribute": NUMA}]


def test_sidecars_and_apps_each_get_their_own_constraint(catalog: Catalog) -> None:
    pod = make_pod(
        [make_container("app", gpu(2))],
        init=[make_container("log", gpu(2), restart_policy="Always"), make_container("setup", gpu(3))],
    )
    plan = _plan(catalog, pod)
    got = {frozenset(c["requests"]) for c in internal_from_template(plan.templates[0])["constraints"]}
    want = {frozenset(_requests_of(plan, n)) for n in ("app", "log", "setup")}
    assert got == want


def test_mig_devices_align_on_the_pcie_root_but_not_the_numa_node(catalog: Catalog) -> None:
    pod = make_pod([make_container("main", gpu(2, "nvidia.com/mig-1g.10gb"))])
    pcie = _plan(catalog, pod, "pcie")
    assert _constraints(pcie) == [[("main", PCIE)]]
    numa = _plan(catalog, pod, "numa")
    assert _constraints(numa) == [[]]
    [finding] = [f for f in numa.findings if f.outcome == "partial" and "alignment" in f.reason]
    assert "does not publish resource.kubernetes.io/numaNode for MIG devices" in finding.reason
    assert "alignment pcie is published for them" in finding.reason
    assert finding.path == "spec.containers[0].resources.limits[nvidia.com/mig-1g.10gb]"


def test_a_container_mixing_aligned_and_unalignable_resources_gets_no_constraint(catalog: Catalog) -> None:
    pod = make_pod(
        [make_container("main", {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1}), make_container("other", gpu(2))]
    )
    plan = _plan(catalog, pod)
    assert _constraints(plan) == [[("other", NUMA)]]


@pytest.mark.parametrize(
    "resource,policy,written",
    [
        ("nvidia.com/gpu", "numa", True),
        ("nvidia.com/gpu", "pcie", True),
        ("nvidia.com/mig-1g.10gb", "numa", False),
        ("nvidia.com/mig-1g.10gb", "pcie", True),
        ("amd.com/gpu", "numa", False),
        ("amd.com/gpu", "pcie", True),
        ("gpu.intel.com/i915", "pcie", True),
    ],
    ids=lambda v: str(v),
)
def test_vendor_target_writes_only_attributes_the_vendor_driver_publishes(
    catalog: Catalog, resource: str, policy: str, written: bool
) -> None:
    plan = _plan(catalog, make_pod([make_container("main", gpu(2, resource))]), policy, target="vendor")
    assert bool(_constraints(plan)[0]) is written
    assert any(f.outcome == "partial" and "alignment" in f.reason for f in plan.findings) is not written


@pytest.mark.parametrize(
    "resource,policy",
    [("amd.com/gpu", "pcie"), ("gpu.intel.com/i915", "pcie"), ("amd.com/gpu", "numa")],
    ids=lambda v: str(v),
)
def test_bridge_target_needs_both_the_bridge_and_the_vendor_to_publish(
    catalog: Catalog, resource: str, policy: str
) -> None:
    # the bridge knows no PCIe root of AMD/Intel devices; the AMD driver publishes no numaNode.
    plan = _plan(catalog, make_pod([make_container("main", gpu(2, resource))]), policy)
    assert _constraints(plan) == [[]]
    assert any(f.outcome == "partial" and "alignment" in f.reason for f in plan.findings)


def test_numa_on_nvidia_gpus_says_which_driver_versions_publish_it(catalog: Catalog) -> None:
    plan = _plan(catalog, make_pod([make_container("main", gpu(2))]))
    [note] = [f for f in plan.findings if "aligned" in f.reason]
    assert note.outcome == "translated" and "recent versions" in note.reason


def test_an_unalignable_pod_stays_legacy_when_partial_translations_are_kept(catalog: Catalog) -> None:
    pod = make_pod([make_container("main", gpu(2, "nvidia.com/mig-1g.10gb"))])
    plan = plan_pod(pod, catalog, Options(alignment="numa", keep_legacy_partial=True))
    assert not plan.changed


def test_alignment_none_is_todays_output(catalog: Catalog) -> None:
    pod = make_pod([make_container("app", gpu(4))], init=[make_container("setup", gpu(6))])
    assert plan_pod(pod, catalog, Options(alignment="none")) == plan_pod(pod, catalog, Options())
    assert "alignment" not in plan_pod(pod, catalog).pod["metadata"]["annotations"]["dra-bridge.io/conversion"]


def test_a_constrained_group_is_kept_in_one_claim(catalog: Catalog) -> None:
    # 20 + 20 devices: two claims; each container's requests stay together.
    pod = make_pod([make_container("a", gpu(20)), make_container("b", gpu(20))])
    plan = _plan(catalog, pod)
    assert _constraints(plan) == [[("a", NUMA)], [("b", NUMA)]]
    for t in plan.templates:
        check_limits([t], plan.pod)


def test_a_pod_over_one_claim_cannot_be_aligned_with_pod_scope(catalog: Catalog) -> None:
    pod = make_pod([make_container("a", gpu(20)), make_container("b", gpu(20))])
    plan = _plan(catalog, pod, scope="pod")
    assert _constraints(plan) == [[], []]
    assert any(f.outcome == "partial" and "32 devices" in f.reason for f in plan.findings)


def test_alignment_is_recorded_and_the_record_replans_the_same_templates(catalog: Catalog) -> None:
    pod = make_pod([make_container("main", gpu(2))])
    plan = _plan(catalog, pod, "pcie", "pod")
    record = ConversionRecord.read(plan.pod)
    assert record is not None and record.options.topology == Alignment("pcie", "pod")
    again = plan_pod(pod, catalog, record.options.apply(Options()), "team-a")
    assert again.templates == plan.templates
    assert ConversionRecord.parse(record.to_json()) == record


def test_a_record_with_a_bad_alignment_is_refused() -> None:
    from dra_bridge.translate.errors import RecordError

    text = '{"options":{"alignment":"numa-node"},"plan":"x","templates":["dra-bridge-x"]}'
    with pytest.raises(RecordError, match=r"options\.alignment must be one of none, numa, pcie"):
        ConversionRecord.parse(text, "Pod a/b")


@pytest.mark.parametrize("api_version", list(VERSIONS))
@pytest.mark.parametrize("scope", ["container", "pod"])
def test_constrained_templates_are_valid_in_every_api_version(catalog: Catalog, api_version: str, scope: str) -> None:
    pod = make_pod(
        [make_container("app", gpu(2)), make_container("mig", gpu(2, "nvidia.com/mig-1g.10gb"))],
        init=[make_container("setup", gpu(3))],
    )
    plan = _plan(catalog, pod, "pcie", scope, api_version=api_version)
    assert any(internal_from_template(t).get("constraints") for t in plan.templates)
    for out in [*plan.templates, plan.pod]:
        kubernetes_validate.validate(out, VERSIONS[api_version], strict=True)
    check_limits(list(plan.templates), plan.pod)
