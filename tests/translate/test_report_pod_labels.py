"""translate/report: a workload's pod template labels are judged by the chart's objectSelector
(translate/enrolment.py), as the API server judges the pods it creates."""

from __future__ import annotations

from typing import Any

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.label_selector import LabelSelector, Requirement
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.namespaces import pod_labels

GPU = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}
NO_DRA = LabelSelector((), (Requirement("no-dra", "DoesNotExist"),))
ENFORCED = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "ml", "labels": {"dra-bridge.io/webhook": "enforce"}},
}


def pod(name: str, labels: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [GPU]}}


def test_the_pods_labels_decide_its_enrolment() -> None:
    settings = Settings(enrolment=EnrolmentSettings(object_selector=NO_DRA))
    objects = [
        ("f", ENFORCED),
        ("f", pod("kept", {"no-dra": ""})),
        ("f", pod("sent", {"app": "x"})),
        ("f", pod("bare", None)),
    ]
    got = {}
    for w in build_report(objects, load_catalog(), settings).workloads:
        assert w.enrolment is not None
        got[w.unit.name] = (w.path.path, w.enrolment.mode)
    assert got == {
        "kept": ("not-enrolled", "none"),
        "sent": ("needs-conversion", "enforce"),
        "bare": ("needs-conversion", "enforce"),
    }


def test_a_workload_some_of_whose_templates_are_selected_is_sent() -> None:
    worker, head = {"metadata": {"labels": {"no-dra": "1"}}}, {"metadata": {"labels": {"role": "head"}}}
    assert pod_labels([worker, head], NO_DRA) == {"role": "head"}
    assert pod_labels([worker], NO_DRA) == {"no-dra": "1"}
    assert pod_labels([{"spec": {}}], NO_DRA) == {} and pod_labels([], NO_DRA) is None
