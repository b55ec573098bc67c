"""The plan options the webhook's policy gives one workload (``dra-migrate report|convert --policy``).

    workload_options(pod, obj, namespace, policy, base, kep5004) -> (plan options, the scope's options)
    switched_off(obj, settings) -> Converted             what the webhook does where convert: false

Pure. The policy (:mod:`translate.policy`) is matched, as the webhook matches a pod's
AdmissionReview, against what the workload's pods will carry (docs/design.md D8): the
namespace (``default`` when the manifest has none), the pod template's labels, the owner kind
of the pods (a Deployment's pods are owned by a ReplicaSet, a CronJob's by a Job, a bare Pod by
none, a pod read from a cluster by its controller, any other workload by itself), and the
scheduler name. The options are the rule's (:meth:`Options.plan_options`) with the
caller's API version, target release and managed-by value (templates ``convert`` writes stay
``convert``'s); the caller's extra DRA schedulers are added to the policy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import Converted
from dra_bridge.translate.policy import Policy, Subject

__all__ = ["pod_owner_kind", "switched_off", "workload_options"]

#: The kind of the controller that owns a workload's pods, where it is not the workload itself.
POD_OWNER = {"Deployment": "ReplicaSet", "CronJob": "Job", "Pod": ""}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def pod_owner_kind(obj: Mapping[str, Any]) -> str:
    """The kind of the controller of ``obj``'s pods (see the module docstring)."""
    kind = str(obj.get("kind", ""))
    if kind == "Pod":
        for ref in _map(obj.get("metadata")).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("controller"):
                return str(ref.get("kind") or "")
        return ""
    return POD_OWNER.get(kind, kind)


def workload_options(
    pod: Mapping[str, Any],
    obj: Mapping[str, Any],
    namespace: str,
    policy: Policy,
    base: Options,
    kep5004: Mapping[str, str],
) -> tuple[Options, Options]:
    """The options for workload ``obj`` whose first pod template (or pod) is ``pod``."""
    labels = {str(k): str(v) for k, v in _map(_map(pod.get("metadata")).get("labels")).items()}
    scheduler = str(_map(pod.get("spec")).get("schedulerName") or "")
    settings = policy.settings_for(Subject(namespace or "default", labels, pod_owner_kind(obj), scheduler))
    options = settings.plan_options(base.api_version, kep5004)
    schedulers = tuple(dict.fromkeys((*options.dra_schedulers, *base.dra_schedulers)))
    return replace(
        options,
        kubernetes_minor=base.kubernetes_minor,
        managed_by=base.managed_by,
        dra_schedulers=schedulers,
        device_domains=base.device_domains,
    ), settings


def switched_off(obj: Any, settings: Options) -> Converted:
    """The workload as the webhook leaves it where the policy says ``convert: false``: unchanged,
    with one ``kept-legacy`` finding naming the rule."""
    rule = f"rule {settings.rule}" if settings.rule else "defaults"
    return Converted(
        obj,
        (),
        (
            Finding(
                ".",
                "",
                "kept-legacy",
                f"policy {rule}: convert: false: the webhook leaves its pods on the device plugin",
            ),
        ),
    )
