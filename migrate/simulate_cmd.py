"""``dra-migrate simulate``: which devices the scheduler would allocate to the claims of some manifests.

Reads files, directories or ``-`` (YAML/JSON, multi-document, List objects) as ``convert``
does, runs :func:`translate.alloc.simulate` and prints:

- ``-o json``: ``{"claims": [{"name", "namespace", "node", "outcome", "reason",
  "allocation"}], "pods": [{"name", "namespace", "node", "outcome", "reason", "claims"}],
  "refused": [{"object", "reason"}], "warnings": [...]}`` (outcome ``allocated``,
  ``unsatisfiable`` or ``error``; allocation in the ``status.allocation`` shape, None unless
  allocated);
- ``-o yaml`` (default): the claims (resource.k8s.io/v1) with ``status.allocation`` filled in.

What it does to the input before the simulation:

- a custom resource is simulated through its pod templates, each as many pods as the capacity
  check counts (:func:`translate.capacity.pod_counts.pod_counts`: Ray, LeaderWorkerSet,
  Kubeflow, JobSet, KServe; 1 per template otherwise, with a note), named
  ``<name>-<role>-<i>``; the counts and their notes are said on stderr;
- an object that still asks for a catalog resource through the device plugin (a custom
  resource left for the webhook, an Argo template, a pod convert kept legacy) is refused:
  ``<Kind> <ns>/<name>: not simulated`` and why, on stderr and in ``refused``;
- a workload whose fields cannot be read as its kind (:func:`translate.report.malformed.malformed`:
  ``spec: []``, ``replicas: five``, no ``metadata.name``) is an input error naming the object and the field;
- a workload of more pods than the capacity check places
  (:func:`translate.capacity.pod_counts.above_bound`: 10,000 a workload, 150,000 in all) is
  refused, with its count and the bound;
- a pod template whose fields have the wrong type (those convert checks,
  :func:`translate.plan.field_types.shape_problems`) is an input error naming the object and the field;
- a pod no node fits gets the capacity check's diagnosis
  (:func:`translate.capacity.diagnose.diagnose`): which request, selector or constraint failed.

Exit codes: 0 every claim allocated, 2 some claim is not or some object is refused, 1 an
input error (the message names the document, the field and the rule; no traceback), nothing to
simulate included. Every message on stderr is escaped (:func:`kube.logs.escape`: names and
values are the caller's); JSON and YAML on stdout are exact.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from dra_bridge.kube.logs import escape
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK, InputFileError
from dra_bridge.migrate.manifests import Document, dump, read_catalog, read_sources, why_empty
from dra_bridge.translate.alloc import parse_gates, simulate
from dra_bridge.translate.alloc.placement import FirstFit
from dra_bridge.translate.alloc.shapes import object_label
from dra_bridge.translate.alloc.simulate import Explain
from dra_bridge.translate.capacity.diagnose import MatchCache, diagnose
from dra_bridge.translate.capacity.model import ClaimDemand
from dra_bridge.translate.capacity.pod_counts import above_bound, pod_counts
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import InputError, TranslateError
from dra_bridge.translate.names import pod_name
from dra_bridge.translate.plan.custom_resources import stray_gpu_requests
from dra_bridge.translate.plan.field_types import require_shape
from dra_bridge.translate.report.grouping import BUILTIN_GROUPS, pod_templates
from dra_bridge.translate.report.malformed import malformed

__all__ = ["EXIT_UNALLOCATED", "run_simulate"]

_MADE_PODS = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")
EXIT_UNALLOCATED = 2
"""Some claim is unsatisfiable or fails with an allocator error, or some object is refused."""


def _documents(sources: list[str], stdin: TextIO) -> list[Document]:
    documents: list[Document] = []
    for source in sources:
        found = list(read_sources([source], stdin))
        if not found:
            raise InputFileError(f"{source}: no Kubernetes objects ({why_empty(source)})")
        for doc in found:
            if not isinstance(doc.obj, dict) or not isinstance(doc.obj.get("kind"), str):
                raise InputFileError(
                    f"{doc.source}: document {doc.index + 1} is not a Kubernetes object (a mapping with a kind)"
                )
            documents.append(doc)
    return documents


def _custom(obj: Mapping[str, Any]) -> bool:
    api = str(obj.get("apiVersion", ""))
    return (api.split("/", 1)[0] if "/" in api else "") not in BUILTIN_GROUPS


class _Prepared:
    """The objects simulate reads, with where each came from; refusals and notes."""

    def __init__(self, documents: Sequence[Document], catalog: Catalog) -> None:
        self.objects: list[Mapping[str, Any]] = []
        self.where: list[str] = []
        self.refused: list[dict[str, str]] = []
        self.notes: list[str] = []
        self.pods = 0  # pods made so far, within the capacity check's bounds
        for doc in documents:
            obj = doc.obj
            legacy = stray_gpu_requests(obj, catalog, ())
            if legacy:
                first = legacy[0]
                self.refused.append(
                    {
                        "object": object_label(obj),
                        "reason": f"{first.path}: {first.legacy} is a device-plugin request, not a claim "
                        "(simulate allocates DRA claims only: convert it first, custom resources with "
                        "--include-custom-resources; the webhook converts the pods it admits)",
                    }
                )
                continue
            where = f"{doc.source}#{doc.index + 1}"  # as the report names sources
            if _custom(obj) or obj.get("kind") in _MADE_PODS:
                if problems := malformed(obj):  # as the report's findings: here an input error
                    raise InputError(f"{object_label(obj)} ({where}): {problems[0].reason}")
                total = pod_counts(obj).total
                if bound := above_bound(total, self.pods):
                    self.refused.append({"object": object_label(obj), "reason": bound})
                    continue
                self.pods += total
            for prefix, template_pod in pod_templates(obj):  # the fields convert checks: a wrong type is an input error
                require_shape(template_pod, f"{object_label(obj)} ({where})", prefix)
            if not _custom(obj):
                self.objects.append(obj)
                self.where.append(where)
                continue
            counts = pod_counts(obj)
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
            assert isinstance(meta, Mapping)
            made = []
            for template in counts.templates:
                pod = template.pod(obj)
                if pod is None or not template.pods:
                    continue
                made.append(f"{template.pods} {template.role} ({template.source})")
                for i in range(template.pods):
                    self.objects.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {
                                "name": f"{pod_name(meta)}-{template.role}-{i}",
                                "namespace": meta.get("namespace"),
                            },
                            "spec": pod.get("spec") or {},
                        }
                    )
                    self.where.append(where)
            if made:
                self.notes.append(f"{object_label(obj)}: simulated as {', '.join(made)}")
            self.notes += counts.notes


def _explainer() -> Explain:
    """The capacity check's diagnosis as simulate's ``explain`` (its matching devices kept across pods)."""
    known: MatchCache = {}

    def explain(
        namespace: str, claims: Sequence[tuple[str, Mapping[str, Any]]], cluster: FirstFit, tried: Sequence[int]
    ) -> str:
        demand = [ClaimDemand(name, spec) for name, spec in claims]
        allocators = [cluster.allocator(i) for i in tried]
        _, reason = diagnose(namespace, demand, allocators, cluster.classes, cluster.state, cluster.cache, known)
        return reason

    return explain


def run_simulate(
    sources: list[str], node: str | None, gates: str | None, output: str, stdin: TextIO, out: TextIO, err: TextIO
) -> int:
    """Run ``simulate``; returns the exit code (0, 2; 1 after writing the error to ``err``)."""
    try:
        features = parse_gates(gates)
        prepared = _Prepared(_documents(sources or ["-"], stdin), read_catalog(None))
        gc.freeze()  # the input lives to the end: full collections need not walk it (speed, issue 12)
        result = simulate(prepared.objects, features, node, explain=_explainer(), where=prepared.where)
        if not result.claims and not prepared.refused:
            raise InputFileError(
                "nothing to simulate: no ResourceClaim and no pod with resourceClaims in the input "
                "(convert's output, or the claims and pods to allocate, with the Nodes, DeviceClasses "
                "and ResourceSlices)"
            )
    except (InputFileError, TranslateError) as exc:
        err.write(f"dra-migrate: error: {escape(str(exc))}\n")
        return EXIT_ERROR
    for warning in result.warnings:
        err.write(f"dra-migrate: warning: {escape(warning)}\n")
    for note in prepared.notes:
        err.write(f"dra-migrate: note: {escape(note)}\n")
    if output == "json":
        body = {
            "claims": [c.as_json() for c in result.claims],
            "pods": [p.as_json() for p in result.pods],
            "refused": prepared.refused,
            "warnings": result.warnings,
        }
        out.write(json.dumps(body, indent=2) + "\n")
    else:
        out.write(dump([c.claim for c in result.claims], "yaml"))
    for refused in prepared.refused:
        err.write(f"dra-migrate: {escape(refused['object'])}: not simulated: {escape(refused['reason'])}\n")
    for claim in result.claims:
        if claim.outcome != "allocated":
            where = escape(f"{claim.namespace}/{claim.name}: {claim.outcome}: {claim.reason}")
            err.write(f"dra-migrate: ResourceClaim {where}\n")
    return EXIT_OK if result.all_allocated and not prepared.refused else EXIT_UNALLOCATED
