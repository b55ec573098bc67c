"""The conversion record: written by the plan, read back (old records too), reverted."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import RecordError
from dra_bridge.translate.names import CONVERSION_ANNOTATION, CONVERTED_LABEL, MANAGED_BY_WEBHOOK
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.record import RECORD_API_VERSION, ConversionRecord, RecordedOptions
from tests.factories import gpu, make_container, make_pod

WEBHOOK = Options(managed_by=MANAGED_BY_WEBHOOK)


def gfd_pod() -> dict[str, Any]:
    """Requests and limits, a GFD node selector beside another, a HAMi annotation."""
    pod = make_pod(
        [make_container("main", gpu(2), {"nvidia.com/gpu": "2"})],
        name="old",
        nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "zone": "a"},
    )
    pod["metadata"]["annotations"] = {"nvidia.com/use-gputype": "A100"}
    return pod


#: What the code before versioned records wrote for gfd_pod() (webhook, resource.k8s.io/v1):
#: converted pods in clusters carry exactly this.
UNVERSIONED = (
    '{"original":{"annotations":{"nvidia.com/use-gputype":"A100"},"containers":{"main":{"limits":'
    '{"nvidia.com/gpu":2},"requests":{"nvidia.com/gpu":"2"}}},"nodeSelector":{"nvidia.com/gpu.product":'
    '"NVIDIA-A100-SXM4-80GB"}},"plan":"t7beiiggmlr5","templates":["dra-bridge-cfv6gkpyzgi5"]}'
)


def with_record(pod: dict[str, Any], text: Any) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"].setdefault("annotations", {})[CONVERSION_ANNOTATION] = text
    return pod


def test_the_plan_writes_a_versioned_record_that_reads_back_equal(catalog: Catalog) -> None:
    plan = plan_pod(gfd_pod(), catalog, WEBHOOK, "team-a")
    assert plan.record is not None and ConversionRecord.read(plan.pod) == plan.record
    doc = json.loads(plan.pod["metadata"]["annotations"][CONVERSION_ANNOTATION])
    assert doc["apiVersion"] == RECORD_API_VERSION
    assert doc["options"] == {
        "managedBy": MANAGED_BY_WEBHOOK,
        "kubernetesMinor": 34,
        "target": "bridge",
        "hamiSlicing": "unsupported",
        "draSchedulers": [],
        "failRequestsGreaterThanOne": False,
    }
    assert plan.pod["metadata"]["labels"][CONVERTED_LABEL] == "true"


def test_the_plan_says_what_it_converted_without_reading_the_annotation(catalog: Catalog) -> None:
    pod = make_pod(
        [
            make_container("a", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),
            make_container("b", gpu(1, "amd.com/gpu")),
        ]
    )
    plan = plan_pod(pod, catalog, Options(hami_slicing="whole-devices"))
    assert plan.converted == {"nvidia.com/gpu", "nvidia.com/gpumem", "amd.com/gpu"}
    assert plan_pod(make_pod([make_container("c")]), catalog).converted == frozenset()


def test_a_record_written_before_versions_reads_as_v1_without_options(catalog: Catalog) -> None:
    plan = plan_pod(gfd_pod(), catalog, WEBHOOK, "team-a")
    old = with_record(plan.pod, UNVERSIONED)
    record = ConversionRecord.read(old)
    assert record is not None and plan.record is not None
    assert record == ConversionRecord(plan.record.plan, plan.record.templates, plan.record.original)
    assert record.options == RecordedOptions()
    again = plan_pod(record.revert(old), catalog, record.options.apply(WEBHOOK), "team-a")
    assert [t["metadata"]["name"] for t in again.templates] == ["dra-bridge-cfv6gkpyzgi5"]


def test_a_pod_without_the_annotation_has_no_record() -> None:
    assert ConversionRecord.read(make_pod([make_container("c", gpu(1))])) is None
    assert ConversionRecord.read({"metadata": None}) is None


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("{garbage", "not JSON"),
        (7, "must be a string"),
        ("[]", "must be a JSON object"),
        ('{"plan":"x"}', "templates must be a non-empty list"),
        ('{"templates":["t"]}', "plan must be a non-empty string"),
        (
            '{"apiVersion":"conversion.dra-bridge.io/v2","plan":"x","templates":["t"]}',
            "is not conversion.dra-bridge.io/v1",
        ),
        ('{"plan":"x","templates":["t"],"extra":1}', "unknown key 'extra'"),
        ('{"plan":"x","templates":["t"],"original":{"containers":{"c":{"limits":3}}}}', "original.containers must map"),
        ('{"plan":"x","templates":["t"],"original":{"nodeSelector":{"a":1}}}', "original.nodeSelector must map"),
        ('{"plan":"x","templates":["t"],"options":{"hamiSlicing":"halves"}}', "options.hamiSlicing must be"),
        ('{"plan":"x","templates":["t"],"options":{"kubernetesMinor":"34"}}', "options.kubernetesMinor must be"),
        ('{"plan":"x","templates":["t"],"options":{"target":"other"}}', "options.target must be"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_a_malformed_record_is_an_error_naming_the_pod_the_annotation_and_the_rule(text: Any, rule: str) -> None:
    pod = with_record(make_pod([make_container("c")], name="web-1"), text)
    with pytest.raises(RecordError) as info:
        ConversionRecord.read(pod)
    message = str(info.value)
    assert "Pod team-a/web-1" in message and CONVERSION_ANNOTATION in message and rule in message, message


@pytest.mark.parametrize(
    "pod",
    [
        make_pod([make_container("main", gpu(1))], tolerations=[{"key": "x", "operator": "Exists"}]),
        gfd_pod(),
        make_pod(
            [make_container("app", gpu(1, "nvidia.com/mig-1g.10gb")), make_container("side", gpu(2))],
            init=[make_container("init", gpu(1))],
        ),
    ],
    ids=["plain", "gfd-selector-and-hami-annotation", "init-and-mig"],
)
def test_revert_restores_the_legacy_pod(catalog: Catalog, pod: dict[str, Any]) -> None:
    plan = plan_pod(pod, catalog, WEBHOOK, "team-a")
    assert plan.record is not None
    live = copy.deepcopy(plan.pod)
    live["metadata"].update(uid="u", resourceVersion="9", creationTimestamp="2026-01-01T00:00:00Z")
    live["spec"]["nodeName"] = "node-a"
    live["status"] = {"phase": "Running"}
    back = plan.record.revert(live)
    added = [t for t in back["spec"].pop("tolerations", []) if t not in pod["spec"].get("tolerations", [])]
    assert all(t["operator"] == "Exists" and t["effect"] == "NoSchedule" for t in added)  # as the legacy pod gets
    expected = copy.deepcopy(pod)
    expected["spec"].pop("tolerations", None)
    assert back == expected
    assert plan_pod(plan.record.revert(live), catalog, WEBHOOK, "team-a").pod == plan.pod


def test_recorded_options_replay_the_conversion(catalog: Catalog) -> None:
    pod = make_pod([make_container("main", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000})], schedulerName="volcano")
    used = Options(managed_by=MANAGED_BY_WEBHOOK, hami_slicing="whole-devices", dra_schedulers=("volcano",))
    vendor = catalog.with_target("vendor")
    plan = plan_pod(pod, vendor, used, "team-a")
    assert plan.record is not None
    assert not plan_pod(plan.record.revert(plan.pod), catalog, WEBHOOK, "team-a").changed  # the defaults: nothing
    options = plan.record.options
    again = plan_pod(plan.record.revert(plan.pod), options.aim(catalog), options.apply(WEBHOOK), "team-a")
    assert again.templates == plan.templates and again.pod == plan.pod


def test_the_record_keeps_fail_requests_greater_than_one_so_a_re_plan_converts_again(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(2, "nvidia.com/gpu.shared"))])
    plan = plan_pod(pod, catalog, WEBHOOK)
    assert plan.record is not None
    doc = json.loads(plan.pod["metadata"]["annotations"][CONVERSION_ANNOTATION])
    assert doc["options"]["failRequestsGreaterThanOne"] is False
    record = ConversionRecord.read(plan.pod)
    assert record is not None and record.options.fail_requests_greater_than_one is False
    strict = Options(managed_by=MANAGED_BY_WEBHOOK, fail_requests_greater_than_one=True)
    assert not plan_pod(pod, catalog, strict).changed
    again = plan_pod(record.revert(plan.pod), catalog, record.options.apply(strict))
    assert again.templates == plan.templates
    with pytest.raises(RecordError, match=r"options\.failRequestsGreaterThanOne must be"):
        ConversionRecord.parse('{"plan":"x","templates":["t"],"options":{"failRequestsGreaterThanOne":"yes"}}')


def test_an_option_a_newer_release_records_is_ignored_so_an_older_reader_still_reads_the_record() -> None:
    """A rolling upgrade: a newer webhook replica records an option this release does not know;
    this release's reconciler must still read the record (its repair re-creates a template only
    when its own re-plan names exactly the recorded templates, so an ignored option cannot
    create a wrong one)."""
    text = (
        '{"plan":"x","templates":["t"],"options":{"hamiSlicing":"whole-devices","draSchedulers":["volcano"],'
        '"optionFromTheFuture":{"any":"shape"}}}'
    )
    record = ConversionRecord.read(with_record(make_pod([make_container("c")], name="web-1"), text))
    assert record is not None
    assert record.options.hami_slicing == "whole-devices" and record.options.dra_schedulers == ("volcano",)
