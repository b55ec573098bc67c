"""The pods each workload creates (pure): the report's PODS column, ``workloads[].podsCreated``
and ``totals.pods``.

    created_pods(unit, objects) -> int | None       None: not known

One rule with the capacity check (docs/capacity.md, "Pod counts"): a workload object's pods are
:func:`translate.capacity.pod_counts.pod_counts` summed over its pod templates (Deployments'
replicas, Jobs' parallelism, Ray's head and workers, LWS groups, training jobs, JobSets, KServe
components; a Trainer runtime 0: its pods are its TrainJobs'), a Trainer v2 TrainJob's
:func:`translate.capacity.train_jobs.train_job_pods`. Unlike ``capacity.podCount`` the pods
asking for no device are counted too (a Ray head). Pods whose owner is not in the input count
as read; a bare Pod is 1. Not known (None, ``?`` in the text): a TrainJob without
``spec.trainer.numNodes`` whose runtime is not in the input, a DaemonSet (one pod per node it
selects) with no pod read, and a count field that is not a non-negative integer (the capacity
check says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.capacity.pod_counts import pod_counts
from dra_bridge.translate.capacity.train_jobs import is_train_job, train_job_pods
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.report.grouping import Unit

__all__ = ["created_pods"]


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _train_job(job: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> int | None:
    found = train_job_pods(job, objects)
    given = _m(_m(job.get("spec")).get("trainer")).get("numNodes") is not None
    if not given and found.unknown.endswith("is not in the input"):
        return None  # the runtime's mlPolicy.numNodes decides
    return found.pods


def created_pods(unit: Unit, objects: Sequence[Mapping[str, Any]]) -> int | None:
    """The pods ``unit`` creates (module docstring); ``objects``: the input's workload objects,
    where a TrainJob's runtime may be."""
    obj = unit.obj
    if obj.get("kind") == "Pod":  # a bare pod, or pods read whose owner is not in the input
        return len(unit.pods) or 1
    try:
        if is_train_job(obj):
            return _train_job(obj, objects)
        if unit.kind == "DaemonSet":
            return len(unit.pods) or None
        return sum(t.pods for t in pod_counts(obj).templates)
    except InputError:
        return None
