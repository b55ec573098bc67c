"""Where custom resources keep GPU requests that are not in a pod template (pure).

    pod_spec_sites(obj) -> [PodSpecSite]          pod specs without the template's metadata/spec
    path_name(path) / at_template(prefix)         finding paths: complete, never ending in ``.``
    stray_gpu_requests(obj, catalog, covered)     a finding for every GPU request left elsewhere

:mod:`translate.plan.workloads` finds pod templates (``<x>.spec.containers``) at any depth. Two
shapes escape that search (field names from the public APIs):

KServe ``serving.kserve.io`` InferenceService
    ``spec.predictor``, ``spec.transformer`` and ``spec.explainer`` are each a pod spec (KServe's
    copy of ``PodSpec``, containers optional, ``resourceClaims`` included) with ``labels`` and
    ``annotations`` for their pods, plus the model server: one container under a framework key
    (``model``, ``pytorch``, ``triton``, ...) that KServe merges into that pod.
    ``spec.predictor.workerSpec`` is the pod spec of a multi-node predictor's workers (no
    labels or annotations of its own). These convert like pod templates (the claims go to the
    site's ``resourceClaims``; the conversion record to the component's ``annotations``, so a
    worker spec keeps none).
Argo ``argoproj.io`` Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow
    a template runs ``container``, ``script`` (a container with a ``source``),
    ``containerSet.containers``, ``initContainers`` and ``sidecars`` in a pod Argo builds; a
    template carries ``nodeSelector``, ``tolerations`` and a ``podSpecPatch`` string but no
    pod-level ``resourceClaims``, so there is nowhere to put the claims: a finding, never a
    conversion (the webhook converts the pods Argo creates).

Kubeflow Trainer v2 ``trainer.kubeflow.org`` TrainJob
    ``spec.trainer.resourcesPerNode`` (a ResourceRequirements) replaces the resources of the
    trainer container in the pods its runtime's JobSet builds; a TrainJob has no pod spec to
    carry claims, so its device requests are the same finding.

Any other custom resource asking for a catalog resource outside a pod spec gets the same
finding, so ``--fail-on left-for-webhook`` never passes a GPU request nobody looked at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Finding

Path = tuple[str | int, ...]
#: A pod's path (``spec.containers[0]``, ``metadata.labels[x]``; ``""`` for the pod itself) ->
#: the path of that value in the object the pod was read from.
PodPath = Callable[[str], str]

KSERVE_GROUP = "serving.kserve.io/"
#: InferenceService component -> the keys that hold its single model-server container.
KSERVE_COMPONENTS: dict[str, tuple[str, ...]] = {
    "predictor": (
        "model",
        "sklearn",
        "xgboost",
        "tensorflow",
        "pytorch",
        "triton",
        "onnx",
        "huggingface",
        "pmml",
        "lightgbm",
        "paddle",
    ),
    "transformer": (),
    "explainer": ("art", "alibi"),
}
KSERVE_WORKER = "workerSpec"
ARGO_GROUP = "argoproj.io/"
TRAINER_GROUP = "trainer.kubeflow.org/"
#: The keys of a ResourceRequirements: a container's ``resources``, a TrainJob trainer's
#: ``resourcesPerNode``.
RESOURCE_KEYS = ("resources", "resourcesPerNode")
POD_METADATA = ("labels", "annotations")


def path_text(path: Path) -> str:
    """``("spec", "templates", 2)`` -> ``"spec.templates[2]."`` (empty for the root): the
    prefix of finding paths."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out + "." if out else ""


def path_name(path: Path) -> str:
    """``("spec", "template")`` -> ``"spec.template"``: the path of the value itself (``.`` for
    the root), as a finding names it."""
    return path_text(path).removesuffix(".") or "."


def at_template(prefix: str) -> PodPath:
    """The :data:`PodPath` of a pod template at ``prefix`` (a :func:`path_text`; ``""`` for a Pod)."""
    return lambda rel: prefix + rel if rel else prefix.removesuffix(".") or "."


#: The :data:`PodPath` of a Pod: its values are where the pod's are.
AT_POD: PodPath = at_template("")


def get_path(obj: Any, path: Path) -> Any:
    """The value at ``path`` (KeyError, IndexError or TypeError when it is not there)."""
    for part in path:
        obj = obj[part]
    return obj


@dataclass(frozen=True)
class PodSpecSite:
    """A pod spec at ``path`` (a mapping of PodSpec fields), the keys there holding one
    container each (merged into the pod before ``containers``), and whether its ``labels`` and
    ``annotations`` are its pods' own."""

    path: tuple[str, ...]
    single: tuple[str, ...] = ()
    pod_metadata: bool = False

    def as_pod(self, site: Mapping[str, Any]) -> dict[str, Any]:
        """The site as a pod a plan reads: single containers first (their keys as names when
        unnamed), the site's labels and annotations as the pod's metadata."""
        skip = {*self.single, KSERVE_WORKER, *(POD_METADATA if self.pod_metadata else ())}
        spec = {k: v for k, v in site.items() if k not in skip}
        singles = [dict(site[k]) if "name" in site[k] else {"name": k, **site[k]} for k in self.present(site)]
        rest = site.get("containers")  # a wrong type goes to the plan as it is, which reports it
        spec["containers"] = [*singles, *rest] if isinstance(rest, list) else singles if rest is None else rest
        meta = {k: site[k] for k in POD_METADATA if self.pod_metadata and k in site}
        return {"metadata": meta, "spec": spec}

    def present(self, site: Mapping[str, Any]) -> list[str]:
        """The single-container keys the site uses."""
        return [k for k in self.single if isinstance(site.get(k), Mapping)]

    def write_back(self, site: dict[str, Any], pod: Mapping[str, Any]) -> None:
        """Put a planned pod (from :meth:`as_pod`) back into ``site``, in place."""
        singles, before = self.present(site), self.as_pod(site)
        containers = list(pod["spec"]["containers"])
        for key, container in zip(singles, containers, strict=False):
            site[key] = {k: v for k, v in container.items() if k != "name" or "name" in site[key]}
        if "containers" in site or len(containers) > len(singles):
            site["containers"] = containers[len(singles) :]
        planned = {**pod["spec"], **(pod.get("metadata") or {})}
        # the site's keys stay where they are and new ones follow in the plan's order (not a set's:
        # the output is the same text in every process)
        for key in dict.fromkeys(k for k in (*before["spec"], *before["metadata"], *planned) if k != "containers"):
            if key in planned and (key not in POD_METADATA or self.pod_metadata):
                site[key] = planned[key]
            elif key in site and key not in planned:
                del site[key]

    def finding(self, finding: Finding, site: Mapping[str, Any]) -> Finding:
        """A plan's finding on :meth:`as_pod`'s pod, its path moved to where the value is."""
        return replace(finding, path=self.locate(site)(finding.path))

    def locate(self, site: Mapping[str, Any]) -> PodPath:
        """The :data:`PodPath` of :meth:`as_pod`'s pod of ``site``: where each of its values is."""
        base, singles = path_text(self.path), self.present(site)

        def where(rel: str) -> str:
            match = re.fullmatch(r"spec\.containers\[(\d+)\](.*)", rel, re.DOTALL)
            if match:
                i = int(match[1])
                at = singles[i] if i < len(singles) else f"containers[{i - len(singles)}]"
                return f"{base}{at}{match[2]}"
            for prefix in ("spec.", "metadata."):
                if rel.startswith(prefix):
                    return base + rel[len(prefix) :]
            return path_name(self.path)

        return where


def pod_spec_sites(obj: Mapping[str, Any]) -> list[PodSpecSite]:
    """The pod specs of a KServe InferenceService (module docstring), outermost first; none
    for other objects."""
    if not str(obj.get("apiVersion", "")).startswith(KSERVE_GROUP) or obj.get("kind") != "InferenceService":
        return []
    spec = obj.get("spec")
    out: list[PodSpecSite] = []
    for component, single in KSERVE_COMPONENTS.items():
        site = spec.get(component) if isinstance(spec, Mapping) else None
        if not isinstance(site, Mapping):
            continue
        out.append(PodSpecSite(("spec", component), single, pod_metadata=True))
        if isinstance(site.get(KSERVE_WORKER), Mapping):
            out.append(PodSpecSite(("spec", component, KSERVE_WORKER)))
    return out


def _requests(node: Any, path: Path, covered: Sequence[Path]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """(path, ResourceRequirements) of every :data:`RESOURCE_KEYS` mapping outside ``covered``."""
    if any(path[: len(c)] == c for c in covered):
        return
    if isinstance(node, Mapping):
        for key in RESOURCE_KEYS:
            if isinstance(node.get(key), Mapping):
                yield (*path, key), node[key]
        for key, value in node.items():
            yield from _requests(value, (*path, str(key)), covered)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _requests(value, (*path, i), covered)


def stray_gpu_requests(obj: Mapping[str, Any], catalog: Catalog, covered: Sequence[Path]) -> list[Finding]:
    """``left-for-webhook`` for each catalog resource requested outside the ``covered`` paths
    (pod templates and sites), once per container and resource (limits, else requests)."""
    kind = str(obj.get("kind", ""))
    if str(obj.get("apiVersion", "")).startswith(TRAINER_GROUP) and kind == "TrainJob":
        reason = (
            "a TrainJob's resourcesPerNode go into the trainer pods its runtime's JobSet builds, and a TrainJob "
            "has no pod-level resourceClaims to carry the claims: left for the webhook, which converts those pods"
        )
    elif str(obj.get("apiVersion", "")).startswith(ARGO_GROUP):
        reason = (
            f"an Argo {kind} template runs this container in a pod Argo builds, and a template has no "
            "pod-level resourceClaims to carry the claims: left for the webhook, which converts those pods"
        )
    else:
        reason = (
            f"{kind} asks for a device outside any pod spec dra-migrate knows, so there are no pod-level "
            "resourceClaims to carry the claims: left for the webhook, which converts the pods it creates"
        )
    out: list[Finding] = []
    for path, resources in _requests(obj, (), covered):
        seen: set[str] = set()
        for block in ("limits", "requests"):
            values = resources.get(block)
            if not isinstance(values, Mapping):
                continue
            for name, value in values.items():
                if str(name) in seen or catalog.lookup(str(name)) is None:
                    continue
                seen.add(str(name))
                out.append(Finding(f"{path_text(path)}{block}[{name}]", f"{name}: {value}", "left-for-webhook", reason))
    return out
