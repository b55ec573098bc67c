"""Pod plans: counts and containers (docs/design.md D3), kinds, pod-level rules, idempotency."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.findings import Remedy
from dra_bridge.translate.names import CONVERSION_ANNOTATION
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.request_layout import Demand, layout, legacy_total
from tests.factories import gpu, make_container, make_pod
from tests.translate.checks import check_limits, devices_seen

GPU_CLASS = "nvidia-gpu.dra-bridge.io"


def outcomes(plan: Any) -> list[str]:
    return [f.outcome for f in plan.findings]


def held(plan: Any) -> int:
    return sum(r["count"] for t in plan.templates for r in internal_from_template(t)["requests"])


@pytest.mark.parametrize(
    ("apps", "sidecars", "inits", "total"),
    [
        ([2], [], [], 2),
        ([1], [1], [1], 2),
        ([4], [], [3], 4),
        ([4, 1], [], [6], 6),
        ([], [], [40], 40),
        ([1], [1, 2], [5], 5),
        ([1, 1, 1], [], [2, 3], 3),
    ],
    ids=[
        "one-app",
        "sidecar-init-app",
        "init-subset",
        "init-exceeds",
        "init-only-40",
        "init-between-sidecars",
        "two-inits",
    ],
)
def test_layout_gives_each_container_its_count_and_the_pod_the_legacy_total(
    apps: list[int], sidecars: list[int], inits: list[int], total: int
) -> None:
    demands = [Demand(f"a{i}", "app", i, n) for i, n in enumerate(apps)]
    demands += [Demand(f"s{i}", "sidecar", 2 * i + 1, n) for i, n in enumerate(sidecars)]
    demands += [Demand(f"i{i}", "init", 2 * i, n) for i, n in enumerate(inits)]
    parts = layout(demands)
    assert sum(p.count for p in parts) == total == legacy_total(demands)
    for d in demands:
        assert sum(p.count for p in parts if d.container in p.users) == d.count
    assert all(p.count <= 32 for p in parts)


def test_init_container_references_a_subset_of_the_app_devices(catalog: Catalog) -> None:
    pod = make_pod([make_container("app", gpu(4))], init=[make_container("warm", gpu(1))])
    plan = plan_pod(pod, catalog)
    assert held(plan) == 4
    assert devices_seen(plan.pod, list(plan.templates)) == {("app", GPU_CLASS): 4, ("warm", GPU_CLASS): 1}


def test_more_than_32_devices_split_into_several_claims(catalog: Catalog) -> None:
    pod = make_pod([make_container("a", gpu(20)), make_container("b", gpu(20))])
    plan = plan_pod(pod, catalog)
    assert len(plan.templates) == 2
    assert [c["name"] for c in plan.pod["spec"]["resourceClaims"]] == ["gpu-0", "gpu-1"]
    check_limits(list(plan.templates), plan.pod)
    assert devices_seen(plan.pod, list(plan.templates)) == {("a", GPU_CLASS): 20, ("b", GPU_CLASS): 20}


@pytest.mark.parametrize("count", [2, "2", "2.0", 2.0], ids=["int", "quoted", "zero-fraction", "float"])
def test_counts_are_read_in_every_spelling(catalog: Catalog, count: Any) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu(count), requests=gpu(count))]), catalog)
    assert held(plan) == 2
    assert "nvidia.com/gpu" not in str(plan.pod["spec"]["containers"][0]["resources"])


@pytest.mark.parametrize(
    ("limits", "requests", "why"),
    [
        (None, gpu(1), "without limits"),
        (gpu(2), gpu(1), "differ"),
        (gpu("1.5"), None, "whole number"),
        (gpu("-1"), None, "quantity"),
    ],
    ids=["requests-only", "requests-differ", "fraction", "negative"],
)
def test_invalid_device_requests_leave_the_pod_unchanged(
    catalog: Catalog, limits: Any, requests: Any, why: str
) -> None:
    pod = make_pod([make_container("c", limits, requests)])
    plan = plan_pod(pod, catalog)
    assert not plan.changed and plan.pod == pod
    assert any(f.outcome == "unsupported" and why in f.reason for f in plan.findings)


def test_prefix_names_are_not_catalog_names(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", {"nvidia.com/gpu-10gb": 1})])
    plan = plan_pod(pod, catalog)
    assert not plan.changed and outcomes(plan) == ["kept-legacy"]  # an accelerator the catalog does not know
    assert plan.findings[0].code == "unknown-device-resource"


def test_unknown_resources_stay_beside_converted_ones(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", {"nvidia.com/gpu": 1, "example.com/nic": 1})])
    plan = plan_pod(pod, catalog)
    assert plan.pod["spec"]["containers"][0]["resources"]["limits"] == {"example.com/nic": 1}
    assert "ignored" in outcomes(plan) and "translated" in outcomes(plan)


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"nodeName": "n1"}, "nodeName"),
        ({"schedulerName": "hami-scheduler"}, "scheduler"),
    ],
    ids=["node-name-set", "other-scheduler"],
)
def test_pods_that_cannot_use_dra_stay_legacy(catalog: Catalog, spec: dict[str, Any], why: str) -> None:
    pod = make_pod([make_container("c", gpu(1))], **spec)
    plan = plan_pod(pod, catalog)
    assert not plan.changed and plan.pod == pod
    assert any(f.outcome == "kept-legacy" and why in f.reason for f in plan.findings)


def test_shared_gpu_counts_replicas_on_the_bridge_and_one_device_on_the_vendor_driver(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(3, "nvidia.com/gpu.shared"))])
    bridge = plan_pod(pod, catalog)
    assert held(bridge) == 3 and "partial" in outcomes(bridge)
    vendor = plan_pod(pod, catalog.with_target("vendor"))
    assert held(vendor) == 1 and "partial" in outcomes(vendor)
    assert internal_from_template(vendor.templates[0])["requests"][0]["deviceClassName"] == "gpu.nvidia.com"


def test_shared_requests_over_one_fail_where_the_plugin_failed_them() -> None:
    catalog = load_catalog("""
apiVersion: catalog.dra-bridge.io/v1
kind: Catalog
resources:
  - name: example.com/shared-gpu
    kind: shared
    deviceClass: example-shared.dra-bridge.io
    failRequestsGreaterThanOne: true
""")
    plan = plan_pod(make_pod([make_container("c", gpu(2, "example.com/shared-gpu"))]), catalog)
    assert not plan.changed and "unsupported" in outcomes(plan)
    assert plan_pod(make_pod([make_container("c", gpu(1, "example.com/shared-gpu"))]), catalog).changed


def test_hami_slicing_is_unsupported_unless_policy_converts_to_whole_devices(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096})])
    assert not plan_pod(pod, catalog).changed
    plan = plan_pod(pod, catalog, Options(hami_slicing="whole-devices"))
    assert plan.changed
    assert "limits" not in plan.pod["spec"]["containers"][0]["resources"]
    assert any(f.outcome == "partial" and "whole devices" in f.reason for f in plan.findings)


def test_existing_claims_are_kept_and_names_do_not_collide(catalog: Catalog) -> None:
    nic = {"name": "gpu", "resourceClaimTemplateName": "nic"}
    c = make_container("c", gpu(1))
    c["resources"]["claims"] = [{"name": "gpu"}]
    # a pod with claims of its own stays unless told (tests/translate/test_half_migrated.py)
    plan = plan_pod(make_pod([c], resourceClaims=[nic]), catalog, Options(convert_half_migrated=True))
    assert plan.changed
    names = [x["name"] for x in plan.pod["spec"]["resourceClaims"]]
    assert names[0] == "gpu" and len(set(names)) == 2
    assert plan.pod["spec"]["containers"][0]["resources"]["claims"][0] == {"name": "gpu"}


def test_tolerations_of_the_extended_resource_plugin_are_added_once(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    plan = plan_pod(pod, catalog)
    assert plan.pod["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert plan_pod(pod, catalog).pod["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_template_names_do_not_depend_on_the_api_version_or_the_run(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(2))])
    names = {
        plan_pod(pod, catalog, Options(api_version=v)).templates[0]["metadata"]["name"]
        for v in ("v1", "v1beta2", "v1beta1")
    }
    assert len(names) == 1
    webhook = plan_pod(pod, catalog, Options(managed_by="dra-bridge-webhook")).templates[0]
    assert webhook["metadata"]["name"] not in names
    assert webhook["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dra-bridge-webhook"


def test_generate_name_pods_convert(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    pod["metadata"] = {"generateName": "web-", "namespace": "team-a"}
    assert plan_pod(pod, catalog).changed


def test_input_is_never_mutated(catalog: Catalog) -> None:
    """plan_pod writes only to its own copies (copy-on-write): every part it changes in the
    migrated pod (resources, claims, tolerations, selectors, annotations, labels) is intact
    in the input, however often it is planned."""
    init = [make_container("setup", gpu(1), gpu(1))]
    pod = make_pod(
        [make_container("c", gpu(2), {"nvidia.com/gpu": 2, "cpu": "1"}), make_container("side")],
        init=init,
        nodeSelector={"nvidia.com/gpu.product": "Tesla-T4", "zone": "a"},
        tolerations=[{"key": "team", "operator": "Exists"}],
        resourceClaims=[{"name": "x", "resourceClaimName": "x"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["40000"]}]}
                    ]
                }
            }
        },
    )
    pod["metadata"].update(labels={"app": "a"}, annotations={"keep": "me"})
    snapshot = repr(pod)
    options = Options(convert_half_migrated=True)  # it has a claim of its own
    first = plan_pod(pod, catalog, options)
    assert first.changed and repr(pod) == snapshot
    assert plan_pod(pod, catalog, options).pod == first.pod and repr(pod) == snapshot
    beta = Options(api_version="resource.k8s.io/v1beta1", convert_half_migrated=True)
    assert plan_pod(pod, catalog, beta).changed and repr(pod) == snapshot


counts = st.integers(min_value=0, max_value=12)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    resources = ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu"]

    def limits() -> dict[str, Any]:
        chosen = draw(st.lists(st.sampled_from(resources), max_size=2, unique=True))
        return {r: draw(st.one_of(counts, counts.map(str))) for r in chosen}

    apps = [make_container(f"app-{i}", limits()) for i in range(draw(st.integers(1, 3)))]
    init = [
        make_container(f"init-{i}", limits(), restart_policy=draw(st.sampled_from([None, "Always"])))
        for i in range(draw(st.integers(0, 3)))
    ]
    return make_pod(apps, init=init)


@pytest.mark.property
@settings(max_examples=150, deadline=None)
@given(pods())
def test_property_conversion_is_idempotent_and_preserves_counts(catalog: Catalog, pod: dict[str, Any]) -> None:
    plan = plan_pod(pod, catalog)
    again = plan_pod(plan.pod, catalog)
    assert again.pod == plan.pod and not again.changed
    if not plan.changed:
        return
    if not plan.templates:  # only zero counts: dropped, nothing to record
        assert plan.findings and all("zero count" in f.reason for f in plan.findings)
        return
    assert CONVERSION_ANNOTATION in plan.pod["metadata"]["annotations"]
    check_limits(list(plan.templates), plan.pod)
    legacy: Counter[tuple[str, str]] = Counter()
    for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
        for r, n in (c.get("resources") or {}).get("limits", {}).items():
            if int(n):
                legacy[(c["name"], catalog.lookup(r).device_class)] += int(n)  # type: ignore[union-attr]
    assert devices_seen(plan.pod, list(plan.templates)) == dict(legacy)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("resourceClaims", "foo"),
        ("initContainers", "foo"),
        ("tolerations", "foo"),
        ("nodeSelector", "foo"),
        ("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "foo"}}),
        ("nodeSelector", {"nvidia.com/gpu.product": 5}),
        ("nodeSelector", {"nvidia.com/gpu.count": None}),
    ],
    ids=[
        "claims-string",
        "init-string",
        "tolerations-string",
        "selector-string",
        "required-affinity-string",
        "selector-value-int",
        "selector-value-null",
    ],
)
def test_fields_of_the_wrong_type_leave_the_pod_unchanged_naming_the_field(
    catalog: Catalog, field: str, value: Any
) -> None:
    pod = make_pod([make_container("c", gpu(1))], **{field: value})
    plan = plan_pod(pod, catalog)
    assert not plan.changed and plan.pod == pod
    assert any(f.outcome == "unsupported" and f"spec.{field}" in f.path for f in plan.findings)


@pytest.mark.parametrize("mangle", ["metadata", "resources", "containers"])
def test_odd_containers_and_metadata_never_raise(catalog: Catalog, mangle: str) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    if mangle == "metadata":
        pod["metadata"] = "foo"
    elif mangle == "resources":
        pod["spec"]["containers"][0]["resources"] = "foo"
    else:
        pod["spec"]["containers"] = ["just-a-string"]
    plan = plan_pod(pod, catalog)
    assert not plan.changed and "unsupported" in outcomes(plan)


def test_absurd_device_counts_are_refused_without_building_them(catalog: Catalog) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu("10M"))]), catalog)
    assert not plan.changed and any("more than 256" in f.reason for f in plan.findings)


def test_unknown_mig_profile_is_flagged_as_needing_its_class(catalog: Catalog) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu(1, "nvidia.com/mig-9g.999gb"))]), catalog)
    assert plan.changed and any(
        f.remedy is Remedy.ADD_MIG_PROFILE_CLASS
        and f.remedy_subject == "9g.999gb"
        and "nvidia-mig-9g.999gb.dra-bridge.io" in f.reason
        for f in plan.findings
    )


def test_garbage_conversion_annotation_is_reported(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    pod["metadata"]["annotations"] = {CONVERSION_ANNOTATION: "{garbage"}
    plan = plan_pod(pod, catalog)
    assert not plan.changed and "converted before" in plan.findings[0].reason


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p.update(metadata=None),
        lambda p: p["metadata"].update(labels=None, annotations=None),
        lambda p: p["spec"].update(resourceClaims=None, tolerations=None),
        lambda p: p["spec"]["containers"][0]["resources"].update(claims=None),
    ],
    ids=["metadata-null", "labels-annotations-null", "claims-tolerations-null", "container-claims-null"],
)
def test_null_fields_are_treated_as_absent(catalog: Catalog, edit: Any) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    edit(pod)
    plan = plan_pod(pod, catalog)
    assert plan.changed
    assert plan.pod["metadata"]["labels"]["dra-bridge.io/converted"] == "true"
    assert devices_seen(plan.pod, list(plan.templates)) == {("c", GPU_CLASS): 1}


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda p: p["spec"].update(initContainers=[None]), "spec.initContainers[0]"),
        (lambda p: p["spec"]["containers"][0].update(name=[]), "spec.containers[0].name"),
        (lambda p: p["spec"]["containers"][0].update(name=None), "spec.containers[0].name"),
        (
            lambda p: p["spec"].update(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [None]}]
                        }
                    }
                }
            ),
            "matchExpressions[0]",
        ),
        (
            lambda p: p["spec"].update(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": 5}]}]
                        }
                    }
                }
            ),
            "matchExpressions[0].values",
        ),
    ],
    ids=["null-init-container", "list-name", "null-name", "null-expression", "scalar-values"],
)
def test_malformed_fields_are_findings_not_crashes(catalog: Catalog, edit: Any, field: str) -> None:
    pod = make_pod([make_container("c", gpu(1))])
    edit(pod)
    plan = plan_pod(pod, catalog)
    assert not plan.changed
    assert any(f.outcome == "unsupported" and f.path.endswith(field) for f in plan.findings), plan.findings


@pytest.mark.parametrize("count", [float("nan"), float("inf"), "1e9999999999", " 1"])
def test_non_finite_or_out_of_range_counts_are_invalid(catalog: Catalog, count: Any) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu(count))]), catalog)
    assert not plan.changed and any("invalid quantity" in f.reason for f in plan.findings)


def test_a_converted_pod_with_legacy_requests_again_is_a_severe_finding(catalog: Catalog) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu(1))]), catalog)
    again = plan.pod
    again["spec"]["containers"].append(make_container("late", gpu(2)))
    second = plan_pod(again, catalog)
    assert not second.changed and second.severity == 3 and "re-convert the original" in second.findings[0].reason


def test_binary_suffixed_counts_are_counted_not_rejected_as_non_numbers(catalog: Catalog) -> None:
    plan = plan_pod(make_pod([make_container("c", gpu("1Ki"))]), catalog)
    assert any("1024 devices" in f.legacy and "more than 256" in f.reason for f in plan.findings)


def test_hami_slicing_finding_carries_the_remedy_that_converts_it(catalog: Catalog) -> None:
    plan = plan_pod(make_pod([make_container("c", {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 30})]), catalog)
    assert any(f.outcome == "unsupported" and f.remedy is Remedy.HAMI_WHOLE_DEVICES for f in plan.findings)


def test_findings_name_no_front_end_setting(catalog: Catalog) -> None:
    pods = [
        make_pod([make_container("c", {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 30})]),
        make_pod([make_container("c", gpu(1, "nvidia.com/mig-9g.999gb"))]),
        make_pod([make_container("c", gpu(1))], schedulerName="volcano"),
    ]
    reasons = [f.reason for pod in pods for f in plan_pod(pod, catalog).findings]
    assert reasons and not [r for r in reasons if "--" in r or "policy" in r]
