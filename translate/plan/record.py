"""The conversion record: what a conversion changed, kept on the pod so it can be undone.

    record.write(pod) -> pod             the annotation and the converted label set (new dict)
    ConversionRecord.read(pod) -> record | None     raises RecordError when malformed
    record.revert(pod) -> pod            the pod as it was before the conversion (new dict)
    record.options.apply(options), record.options.aim(catalog)   re-plan as the conversion did

Wire format: the ``dra-bridge.io/conversion`` annotation holds canonical JSON (sorted keys,
no spaces)::

    {"apiVersion": "conversion.dra-bridge.io/v1",
     "options": {"draSchedulers": [], "failRequestsGreaterThanOne": false, "hamiSlicing": "unsupported",
                 "kubernetesMinor": 34, "managedBy": "dra-bridge-webhook", "target": "bridge",
                 "alignment": "numa", "alignmentScope": "container"},
     "original": {"containers": {"<name>": {"limits": {...}, "requests": {...}}},
                  "nodeSelector": {...}, "affinity": {...}, "annotations": {...}},
     "plan": "<plan hash>", "templates": ["dra-bridge-<hash>", ...]}

``original`` holds the values the conversion removed (requests and limits of legacy
resources, node selector entries, the affinity it replaced, HAMi annotations); only the
keys with something in them are written. ``options`` are the plan options that shaped the
result: the managed-by value and the target minor release (both in the template names), the
catalog's target (bridge or vendor classes), HAMi slicing, the schedulers declared to
support DRA and whether shared requests greater than one fail (all three decide whether a pod
converts at all), and the topology alignment (in the templates; written only when not ``none``,
and an absent one reads as ``none``: releases before it wrote no constraints). Options that cannot change a
conversion that happened are not recorded (KEP-5004 deference, keeping partial translations:
a converted pod was neither deferred nor partial-and-kept).

Versioning: records written before ``apiVersion`` existed have neither it nor ``options``;
an absent ``apiVersion`` reads as v1, and an absent option reads as None ("not recorded":
the reader's own value applies). An option this release does not know (written by a newer
one during a rolling upgrade) is ignored: a re-plan re-creates a template only when it names
exactly the recorded templates, so an ignored option cannot create a wrong one. Another
``apiVersion``, an unknown key outside ``options`` or a value of the
wrong type is a :class:`~translate.errors.RecordError` naming the pod, the annotation and the
rule, never a crash.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from dra_bridge.translate.catalog import Catalog, Target
from dra_bridge.translate.errors import RecordError
from dra_bridge.translate.names import CONVERSION_ANNOTATION, CONVERTED_LABEL
from dra_bridge.translate.plan.alignment import POLICIES, SCOPES, Alignment

if TYPE_CHECKING:
    from dra_bridge.translate.plan.pod_plan import Options

RECORD_API_VERSION = "conversion.dra-bridge.io/v1"
HamiSlicing = Literal["unsupported", "whole-devices"]
#: Set on the pod by the API server after admission: a reverted pod is a new pod.
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


class OriginalValues(TypedDict, total=False):
    """What the conversion removed, by where it was."""

    containers: dict[str, dict[str, dict[str, Any]]]
    nodeSelector: dict[str, str]
    affinity: dict[str, Any]
    annotations: dict[str, str]


@dataclass(frozen=True)
class RecordedOptions:
    """The plan options a conversion used (None: not recorded, in a record written before
    options were; the reader's own value applies)."""

    managed_by: str | None = None
    kubernetes_minor: int | None = None
    target: Target | None = None
    hami_slicing: HamiSlicing | None = None
    dra_schedulers: tuple[str, ...] | None = None
    fail_requests_greater_than_one: bool | None = None
    alignment: Alignment = field(default_factory=Alignment)

    @classmethod
    def of(cls, options: Options, catalog: Catalog) -> RecordedOptions:
        """What to record for a plan made with ``options`` and ``catalog``."""
        return cls(
            options.managed_by,
            options.minor,
            catalog.target,
            options.hami_slicing,
            tuple(options.dra_schedulers),
            options.fail_requests_greater_than_one,
            options.alignment,
        )

    def apply(self, options: Options) -> Options:
        """``options`` with the recorded values in place of their own."""
        return replace(
            options,
            managed_by=options.managed_by if self.managed_by is None else self.managed_by,
            kubernetes_minor=options.kubernetes_minor if self.kubernetes_minor is None else self.kubernetes_minor,
            hami_slicing=options.hami_slicing if self.hami_slicing is None else self.hami_slicing,
            dra_schedulers=options.dra_schedulers if self.dra_schedulers is None else self.dra_schedulers,
            fail_requests_greater_than_one=options.fail_requests_greater_than_one
            if self.fail_requests_greater_than_one is None
            else self.fail_requests_greater_than_one,
            alignment=self.alignment,
        )

    def aim(self, catalog: Catalog) -> Catalog:
        """``catalog`` aimed at the recorded target (bridge or vendor classes)."""
        return catalog if self.target is None or self.target == catalog.target else catalog.with_target(self.target)

    def to_wire(self) -> dict[str, Any]:
        """The ``options`` object of the annotation (recorded values only)."""
        wire = {
            "managedBy": self.managed_by,
            "kubernetesMinor": self.kubernetes_minor,
            "target": self.target,
            "hamiSlicing": self.hami_slicing,
            "draSchedulers": list(self.dra_schedulers) if self.dra_schedulers is not None else None,
            "failRequestsGreaterThanOne": self.fail_requests_greater_than_one,
        }
        if self.alignment.policy != "none":
            wire |= {"alignment": self.alignment.policy, "alignmentScope": self.alignment.scope}
        return {k: v for k, v in wire.items() if v is not None}


@dataclass(frozen=True)
class ConversionRecord:
    """One conversion: its ``plan`` hash, the ``templates`` its claims come from, the
    ``original`` values it removed and the ``options`` it was planned with."""

    plan: str
    templates: tuple[str, ...]
    original: OriginalValues = field(default_factory=lambda: OriginalValues())
    options: RecordedOptions = RecordedOptions()

    @property
    def resources(self) -> frozenset[str]:
        """The legacy resource names the conversion removed from the containers."""
        return frozenset(
            name
            for sections in (self.original.get("containers") or {}).values()
            for block in sections.values()
            for name in block
        )

    def to_json(self) -> str:
        """The annotation's value (canonical JSON)."""
        doc = {
            "apiVersion": RECORD_API_VERSION,
            "options": self.options.to_wire(),
            "original": self.original,
            "plan": self.plan,
            "templates": list(self.templates),
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))

    def write(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``pod`` (new metadata, labels and annotations; the rest shared) carrying
        this record and the ``dra-bridge.io/converted`` label."""
        new = dict(pod)
        meta = new["metadata"] = dict(pod.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), CONVERTED_LABEL: "true"}
        meta["annotations"] = {**(meta.get("annotations") or {}), CONVERSION_ANNOTATION: self.to_json()}
        return new

    @classmethod
    def read(cls, pod: Mapping[str, Any]) -> ConversionRecord | None:
        """The record ``pod`` carries; None without the annotation; RecordError when malformed."""
        meta = pod.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        if not isinstance(annotations, Mapping) or CONVERSION_ANNOTATION not in annotations:
            return None
        return cls.parse(annotations[CONVERSION_ANNOTATION], _pod_name(pod))

    @classmethod
    def parse(cls, text: object, where: str = "") -> ConversionRecord:
        """A record from the annotation's value; RecordError naming ``where`` otherwise."""

        def fail(rule: str) -> RecordError:
            return RecordError(f"{where or 'object'}: annotation {CONVERSION_ANNOTATION}: {rule}")

        if not isinstance(text, str):
            raise fail("must be a string holding JSON")
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise fail(f"not JSON ({str(exc)[:120]})") from exc
        if not isinstance(doc, dict):
            raise fail("must be a JSON object")
        unknown = sorted(set(doc) - {"apiVersion", "options", "original", "plan", "templates"})
        if unknown:
            raise fail(f"unknown key {unknown[0]!r} (known: apiVersion, options, original, plan, templates)")
        version = doc.get("apiVersion", RECORD_API_VERSION)
        if version != RECORD_API_VERSION:
            raise fail(f"apiVersion {str(version)[:80]!r} is not {RECORD_API_VERSION} (written by a newer dra-bridge?)")
        plan, templates = doc.get("plan"), doc.get("templates")
        if not isinstance(plan, str) or not plan:
            raise fail("plan must be a non-empty string (the plan hash)")
        if not isinstance(templates, list) or not templates or not all(isinstance(t, str) and t for t in templates):
            raise fail("templates must be a non-empty list of template names")
        return cls(
            plan, tuple(templates), _original(doc.get("original", {}), fail), _options(doc.get("options", {}), fail)
        )

    def revert(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """``pod`` as it was before this conversion (a deep copy): the record, the label, the
        claims from its templates and their references removed; requests, limits, node selector
        entries, affinity and annotations restored. Fields the API server sets after admission
        (uid, resourceVersion, ..., status, and spec.nodeName: a pod that had it was never
        converted) are dropped. The tolerations the conversion added stay: a legacy pod gets
        the same ones from the ExtendedResourceToleration admission plugin."""
        out = copy.deepcopy(dict(pod))
        meta = out["metadata"] = dict(out.get("metadata") or {})
        spec = out["spec"] = dict(out.get("spec") or {})
        for key in _SERVER_FIELDS:
            meta.pop(key, None)
        out.pop("status", None)
        spec.pop("nodeName", None)
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != CONVERSION_ANNOTATION}
        _set_or_drop(meta, "annotations", {**annotations, **(self.original.get("annotations") or {})})
        if "labels" in meta:
            _set_or_drop(meta, "labels", {k: v for k, v in (meta["labels"] or {}).items() if k != CONVERTED_LABEL})
        ours = {
            c.get("name")
            for c in spec.get("resourceClaims") or []
            if isinstance(c, Mapping) and c.get("resourceClaimTemplateName") in self.templates
        }
        _set_or_drop(
            spec,
            "resourceClaims",
            [c for c in spec.get("resourceClaims") or [] if not (isinstance(c, Mapping) and c.get("name") in ours)],
        )
        moved = self.original.get("containers") or {}
        for fld in ("initContainers", "containers"):
            for c in spec.get(fld) or []:
                if not isinstance(c, dict):
                    continue
                if isinstance(c.get("resources"), dict):
                    res = c["resources"]
                    _set_or_drop(
                        res,
                        "claims",
                        [r for r in res.get("claims") or [] if not (isinstance(r, Mapping) and r.get("name") in ours)],
                    )
                for section, block in (moved.get(c.get("name", "")) or {}).items():
                    c.setdefault("resources", {}).setdefault(section, {}).update(block)
        if self.original.get("nodeSelector"):
            spec["nodeSelector"] = {**self.original["nodeSelector"], **(spec.get("nodeSelector") or {})}
        if "affinity" in self.original:
            spec["affinity"] = self.original["affinity"]
        return out


def _pod_name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = str(meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else "?"))
    return (
        f"{pod.get('kind') or 'Pod'} {meta['namespace']}/{name}"
        if meta.get("namespace")
        else f"{pod.get('kind') or 'Pod'} {name}"
    )


def _set_or_drop(obj: dict[str, Any], key: str, value: Mapping[str, Any] | list[Any]) -> None:
    if value:
        obj[key] = value
    else:
        obj.pop(key, None)


def _string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _original(raw: object, fail: Any) -> OriginalValues:
    if not isinstance(raw, dict):
        raise fail("original must be an object")
    unknown = sorted(set(raw) - {"containers", "nodeSelector", "affinity", "annotations"})
    if unknown:
        raise fail(f"original: unknown key {unknown[0]!r} (known: containers, nodeSelector, affinity, annotations)")
    containers = raw.get("containers", {})
    if not isinstance(containers, dict) or not all(
        isinstance(sections, dict)
        and all(s in ("limits", "requests") and isinstance(b, dict) for s, b in sections.items())
        for sections in containers.values()
    ):
        raise fail("original.containers must map container names to {limits: {...}, requests: {...}}")
    for key in ("nodeSelector", "annotations"):
        if key in raw and not _string_map(raw[key]):
            raise fail(f"original.{key} must map strings to strings")
    if "affinity" in raw and not isinstance(raw["affinity"], dict):
        raise fail("original.affinity must be an object")
    return cast(OriginalValues, raw)


def _options(raw: object, fail: Any) -> RecordedOptions:
    if not isinstance(raw, dict):
        raise fail("options must be an object")
    # Keys this release does not know are ignored (forward compatibility, see the module docstring).
    managed_by, minor, target = raw.get("managedBy"), raw.get("kubernetesMinor"), raw.get("target")
    hami, schedulers = raw.get("hamiSlicing"), raw.get("draSchedulers")
    fail_gt_one = raw.get("failRequestsGreaterThanOne")
    policy, scope = raw.get("alignment", "none"), raw.get("alignmentScope", "container")
    if policy not in POLICIES:
        raise fail(f"options.alignment must be one of {', '.join(POLICIES)}")
    if scope not in SCOPES:
        raise fail(f"options.alignmentScope must be one of {', '.join(SCOPES)}")
    if managed_by is not None and (not isinstance(managed_by, str) or not managed_by):
        raise fail("options.managedBy must be a non-empty string")
    if minor is not None and (not isinstance(minor, int) or isinstance(minor, bool) or minor < 0):
        raise fail("options.kubernetesMinor must be a minor version number")
    if target not in (None, "bridge", "vendor"):
        raise fail("options.target must be bridge or vendor")
    if hami not in (None, "unsupported", "whole-devices"):
        raise fail("options.hamiSlicing must be unsupported or whole-devices")
    if schedulers is not None and (not isinstance(schedulers, list) or not all(isinstance(s, str) for s in schedulers)):
        raise fail("options.draSchedulers must be a list of scheduler names")
    if fail_gt_one is not None and not isinstance(fail_gt_one, bool):
        raise fail("options.failRequestsGreaterThanOne must be true or false")
    return RecordedOptions(
        managed_by,
        minor,
        target,
        hami,
        None if schedulers is None else tuple(schedulers),
        fail_gt_one,
        Alignment(policy, scope),
    )
