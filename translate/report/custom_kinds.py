"""The custom resources a live report lists: the kinds translate knows to hold GPU pod specs.

    KNOWN_CUSTOM_KINDS: tuple[CustomKind, ...]      (group, plural, kind, namespaced)

Pure data. Where each keeps its pods: KServe InferenceService and Argo's workflow kinds by
their own shapes (:mod:`translate.plan.custom_resources`); the others by pod templates at any
depth (:func:`translate.plan.workloads.find_pod_templates`): Ray's RayCluster, RayJob and
RayService (``headGroupSpec``/``workerGroupSpecs[].template``), Kubeflow's training jobs
(``*ReplicaSpecs.*.template``), LeaderWorkerSet (``leaderWorkerTemplate``), JobSet
(``replicatedJobs[].template``). Live mode (``migrate.live``) lists a kind only when discovery
says the cluster serves its group, in the group's preferred version; ``migrate.access``
declares a ``list`` grant for each, and README's RBAC table shows them. Files may hold any
custom resource: grouping finds their pod templates whatever their kind.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KNOWN_CUSTOM_KINDS", "CustomKind"]


@dataclass(frozen=True)
class CustomKind:
    """A custom resource: API ``group``, ``plural`` (the REST and RBAC name), ``kind``, and
    whether it is ``namespaced``."""

    group: str
    plural: str
    kind: str
    namespaced: bool = True


KNOWN_CUSTOM_KINDS: tuple[CustomKind, ...] = (
    CustomKind("serving.kserve.io", "inferenceservices", "InferenceService"),
    CustomKind("argoproj.io", "workflows", "Workflow"),
    CustomKind("argoproj.io", "workflowtemplates", "WorkflowTemplate"),
    CustomKind("argoproj.io", "clusterworkflowtemplates", "ClusterWorkflowTemplate", namespaced=False),
    CustomKind("argoproj.io", "cronworkflows", "CronWorkflow"),
    CustomKind("ray.io", "rayclusters", "RayCluster"),
    CustomKind("ray.io", "rayjobs", "RayJob"),
    CustomKind("ray.io", "rayservices", "RayService"),
    CustomKind("kubeflow.org", "pytorchjobs", "PyTorchJob"),
    CustomKind("kubeflow.org", "tfjobs", "TFJob"),
    CustomKind("kubeflow.org", "mpijobs", "MPIJob"),
    CustomKind("leaderworkerset.x-k8s.io", "leaderworkersets", "LeaderWorkerSet"),
    CustomKind("jobset.x-k8s.io", "jobsets", "JobSet"),
)
