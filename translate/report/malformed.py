"""Fields the report cannot read (pure): a finding naming each, or an error for a cluster fact.

    malformed(obj) -> [Finding]          a workload's fields of the wrong type or value
    require_quotas(quotas) -> None       raises InputError for a ResourceQuota whose spec.hard is not an object

A workload whose ``metadata`` or ``metadata.name`` is missing or of the wrong type, whose pod
template sits under a field that is not an object (``spec: []``), whose workload fields have
the wrong type (a Ray ``workerGroupSpecs`` that is not a list, a KServe ``predictor`` that is
not an object, ...) or whose pod count fields are not non-negative integers
(:func:`translate.capacity.pod_counts.pod_counts` or, for a TrainJob,
:func:`translate.capacity.train_jobs.train_job_pods` raises) gets one ``unsupported`` finding per
field, naming the field and the rule, so its path is ``blocked``, never "converts cleanly".
The plan's own shape checks of the pod fields are :mod:`translate.plan.field_types`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from dra_bridge.translate.capacity.pod_counts import RAY_CLUSTER_SPEC, pod_counts
from dra_bridge.translate.capacity.train_jobs import is_train_job, train_job_pods
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.custom_resources import path_text
from dra_bridge.translate.plan.workloads import BUILTIN_TEMPLATE_PATHS, CORE_GROUPS

__all__ = ["malformed", "require_quotas"]

Path = tuple[str, ...]
_NOT_JUDGED: Final = "the workload cannot be read as its kind"
# (group, kind) -> (path, list or object) of the fields the pod counts read; Ray's are under its cluster spec.
_CUSTOM: Final[dict[tuple[str, str], tuple[tuple[Path, type], ...]]] = {
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): ((("spec",), dict), (("spec", "leaderWorkerTemplate"), dict)),
    ("jobset.x-k8s.io", "JobSet"): ((("spec",), dict), (("spec", "replicatedJobs"), list)),
    ("trainer.kubeflow.org", "TrainJob"): (
        (("spec",), dict),
        (("spec", "trainer"), dict),
        (("spec", "runtimeRef"), dict),
    ),
    ("serving.kserve.io", "InferenceService"): (
        (("spec",), dict),
        (("spec", "predictor"), dict),
        (("spec", "transformer"), dict),
        (("spec", "explainer"), dict),
    ),
}
_RAY: Final = ((("headGroupSpec",), dict), (("workerGroupSpecs",), list))


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj.get("apiVersion", ""))
    return api.split("/", 1)[0] if "/" in api else ""


def _finding(path: str, value: Any, rule: str) -> Finding:
    return Finding(path, repr(value)[:60], "unsupported", f"{path}: {rule}: {_NOT_JUDGED}")


def _expected(obj: Mapping[str, Any]) -> list[tuple[Path, type]]:
    kind, group = str(obj.get("kind", "")), _group(obj)
    if kind in BUILTIN_TEMPLATE_PATHS and obj.get("apiVersion") in CORE_GROUPS:
        path = (*BUILTIN_TEMPLATE_PATHS[kind], "spec")
        return [(path[:i], dict) for i in range(1, len(path) + 1)]
    if group == "ray.io" and kind in RAY_CLUSTER_SPEC:
        base = RAY_CLUSTER_SPEC[kind]
        return [(base[:i], dict) for i in range(1, len(base) + 1)] + [((*base, *p), t) for p, t in _RAY]
    if group == "kubeflow.org" and kind.endswith("Job"):
        spec = obj.get("spec")
        keys = [k for k in spec if str(k).endswith("ReplicaSpecs")] if isinstance(spec, Mapping) else []
        return [(("spec",), dict), *((("spec", str(k)), dict) for k in keys)]
    return list(_CUSTOM.get((group, kind), ()))


def _fields(obj: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    for path, want in _expected(obj):
        node: Any = obj
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is None:
            continue
        ok = isinstance(node, Mapping) if want is dict else isinstance(node, want)
        if not ok:
            out.append(
                _finding(path_text(path).rstrip("."), node, f"must be {'a list' if want is list else 'an object'}")
            )
            break  # the fields under it are not there to read
    return out


def _metadata(obj: Mapping[str, Any]) -> list[Finding]:
    m = obj.get("metadata")
    if not isinstance(m, Mapping):
        return [_finding("metadata", m, "must be an object with a name")]
    name = m.get("name")
    if name is None and isinstance(m.get("generateName"), str) and m["generateName"]:
        return []  # named at creation (any kind: a Pod, an Argo Workflow)
    if not isinstance(name, str) or not name:
        return [_finding("metadata.name", name, "must be a non-empty string")]
    return []


def malformed(obj: Mapping[str, Any]) -> list[Finding]:
    """The findings of the module docstring for one workload object, in field order."""
    out = _metadata(obj) + _fields(obj)
    if out:
        return out
    try:
        pod_counts(obj)
        if is_train_job(obj):
            train_job_pods(obj, ())  # its own numNodes; the runtime's is read where the runtime is
    except InputError as exc:
        text = str(exc)
        out.append(
            Finding(text.partition(": ")[0], "", "unsupported", f"{text}: the pods it creates cannot be counted")
        )
    return out


def require_quotas(quotas: Iterable[Mapping[str, Any]]) -> None:
    """Raise InputError naming the ResourceQuota whose ``spec`` or ``spec.hard`` is not an object."""
    for quota in quotas:
        m = quota.get("metadata")
        m = m if isinstance(m, Mapping) else {}
        label = f"ResourceQuota {m.get('namespace') or 'default'}/{m.get('name') or '?'}"
        spec = quota.get("spec")
        if spec is not None and not isinstance(spec, Mapping):
            raise InputError(f"{label}: spec: must be an object (core/v1 schema)")
        hard = spec.get("hard") if isinstance(spec, Mapping) else None
        if hard is not None and not isinstance(hard, Mapping):
            raise InputError(f"{label}: spec.hard: must be an object of resource names to quantities (core/v1 schema)")
