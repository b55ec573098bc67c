"""Where the agent runs (issue 26 item 5): its default node affinity matches every common way a
GPU node is labelled (GPU Feature Discovery, stock Node Feature Discovery's PCI class labels, the
managed clouds' accelerator labels), and the chart's NOTES say how to see where it runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.render import CHART, NAMESPACE, RELEASE, REQUIRED, by_kind, helm, helm_binaries, render

#: label -> a value such nodes carry.
GPU_NODE_LABELS = {
    "nvidia.com/gpu.present": "true",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/pci-0302_10de.present": "true",
    "feature.node.kubernetes.io/pci-0300_10de.present": "true",
    "feature.node.kubernetes.io/pci-1002.present": "true",
    "intel.feature.node.kubernetes.io/gpu": "true",
    "cloud.google.com/gke-accelerator": "nvidia-l4",
    "kubernetes.azure.com/accelerator": "nvidia",
    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
}


def _term_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    for e in term.get("matchExpressions", []):
        key, op = e["key"], e["operator"]
        if op == "In" and labels.get(key) not in e["values"]:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op not in ("In", "Exists"):
            raise AssertionError(f"operator {op} not modelled")
    return True


def _terms() -> list[dict[str, Any]]:
    (ds,) = by_kind(render(), "DaemonSet")
    required = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    return required["nodeSelectorTerms"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("label", "value"), GPU_NODE_LABELS.items())
def test_the_agent_runs_on_a_node_with_any_gpu_label(label: str, value: str) -> None:
    assert any(_term_matches(t, {label: value}) for t in _terms()), label


def test_the_agent_does_not_run_on_a_plain_node() -> None:
    plain = {"kubernetes.io/hostname": "n", "feature.node.kubernetes.io/pci-0300_1234.present": "true"}
    assert not any(_term_matches(t, plain) for t in _terms())


def test_the_notes_say_how_to_see_where_the_agent_runs() -> None:
    helm4 = helm_binaries(("4",))["4"]
    out = helm(helm4, "install", RELEASE, str(CHART), *REQUIRED, "--namespace", NAMESPACE, "--dry-run=client")
    notes = out.split("NOTES:", 1)[1]
    assert f"kubectl -n {NAMESPACE} get daemonset {RELEASE}-agent" in notes
    assert "dra-bridge.io/mode=dra" in notes
    assert "kubectl get resourceslices" in notes
