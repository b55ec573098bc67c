"""The real node itself (``realnode.py``): pods run on a real kubelet + containerd + runc, the
kubelet survives a restart, and stopping the node leaves nothing behind on the host."""

from __future__ import annotations

import time

import pytest

from tests.e2e import hoststate
from tests.e2e.kubeapi import KubeClient, Obj, api_path, wait_for, wait_for_object
from tests.e2e.realnode import BRIDGE, RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]


def run_pod(kube: KubeClient, node: RealNode, namespace: str, name: str, script: str) -> tuple[Obj, str]:
    """Runs a busybox pod to completion on the node; returns the pod and its log (read back
    through the API server, which fetches it from the kubelet)."""
    pod = {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": node.env["BUSYBOX_IMAGE"],
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                }
            ],
        },
    }
    kube.create(api_path("v1", "pods", namespace), pod)
    path = api_path("v1", "pods", namespace, name)
    done = wait_for_object(
        kube,
        path,
        lambda p: p.get("status", {}).get("phase") in ("Succeeded", "Failed"),
        60,
        f"pod {namespace}/{name} to finish",
    )
    log: str = kube.request("GET", f"{path}/log")
    return done, log


def test_busybox_pod_runs_and_its_log_comes_back(real_node: RealNode, kube: KubeClient, namespace: str) -> None:
    began = time.monotonic()
    pod, log = run_pod(kube, real_node, namespace, "hello", "echo hello-from-$(hostname); cat /proc/self/cgroup")
    elapsed = time.monotonic() - began
    print(f"\npod ran in {elapsed:.1f}s")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert pod["spec"]["nodeName"] == real_node.name
    assert log.startswith("hello-from-hello\n"), log
    assert "kubepods" in log, log  # in the kubelet's cgroups, i.e. really run by this node's runtime
    assert pod["status"]["podIP"].startswith("10.244.99."), pod["status"]  # our bridge's subnet


def test_kubelet_restart_keeps_the_node(real_node: RealNode, kube: KubeClient, namespace: str) -> None:
    real_node.restart_kubelet()
    print(f"\nkubelet restarted in {real_node.timings['restart_kubelet']:.1f}s")
    node = kube.get(api_path("v1", "nodes", name=real_node.name))
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
    pod, log = run_pod(kube, real_node, namespace, "after-restart", "echo still-here")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert log == "still-here\n"


def test_stop_leaves_nothing_behind(real_node: RealNode, kube: KubeClient, namespace: str) -> None:
    # A pod still running at the stop: its processes, mounts, netns and cgroups must go too.
    kube.create(
        api_path("v1", "pods", namespace),
        {
            "metadata": {"name": "sleeper"},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": real_node.env["BUSYBOX_IMAGE"],
                        "imagePullPolicy": "Never",
                        "command": ["sleep", "3600"],
                    }
                ],
            },
        },
    )
    wait_for_object(
        kube,
        api_path("v1", "pods", namespace, "sleeper"),
        lambda p: p.get("status", {}).get("phase") == "Running",
        60,
        "pod sleeper Running",
    )
    pids = [c.proc.pid for c in real_node.components.values()]
    errors = real_node.stop()
    print(f"\nnode stopped in {real_node.timings['stop']:.1f}s")
    assert errors == []
    assert real_node.leftovers() == []
    assert all(not hoststate.alive(pid) for pid in pids)
    assert BRIDGE not in hoststate.links()
    wait_for(lambda: not kube.exists(api_path("v1", "nodes", name=real_node.name)), 10, "Node object deleted")
