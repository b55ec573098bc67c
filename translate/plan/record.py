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
and an absent one reads as ``none``: releases before it wrote no constraints), and whether a
pod with DRA claims of its own beside a legacy request was converted (``convertHalfMigrated``,
written only when true; absent reads as false: releases before it gave such a pod a second
claim without recording why). Options that cannot change a
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
from typing import Any, TypedDict, cast

from dra_bridge.translate.catalog import Catalog, Target
from dra_bridge.translate.errors import RecordError
from dra_bridge.translate.names import CONVERSION_ANNOTATION, CONVERTED_LABEL
from dra_bridge.translate.plan.alignment import Alignment, AlignmentPolicy, AlignmentScope
from dra_bridge.translate.plan.options import HamiSlicing, Options, recorded_specs

RECORD_API_VERSION = "conversion.dra-bridge.io/v1"
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
    """The plan options a conversion used: the fields of
    :class:`~translate.plan.options.Options` whose spec has a record key (tests check the two
    agree), read, written and applied through those specs. None: not recorded (in a record
    written before options were; the reader's own value applies); an option written only with
    another (``recorded_with``) reads as its default when absent."""

    managed_by: str | None = None
    kubernetes_minor: int | None = None
    target: Target | None = None
    hami_slicing: HamiSlicing | None = None
    dra_schedulers: tuple[str, ...] | None = None
    fail_requests_greater_than_one: bool | None = None
    alignment: AlignmentPolicy = "none"
    alignment_scope: AlignmentScope = "container"
    convert_half_migrated: bool = False

    @property
    def topology(self) -> Alignment:
        """The recorded alignment (none when the record has none)."""
        return Alignment(self.alignment, self.alignment_scope)

    @classmethod
    def of(cls, options: Options, catalog: Catalog) -> RecordedOptions:
        """What to record for a plan made with ``options`` and ``catalog`` (its target, the
        release's minor version)."""
        # Remembered on ``options`` itself, by the catalog's target: the answer is a function of
        # the fields of a frozen instance (immutable values: a tuple of schedulers) and the target.
        memo: dict[str, RecordedOptions] | None = vars(options).setdefault("_recorded", {})
        if type(options.dra_schedulers) is not tuple:
            memo = None  # a list could change under the memo
        found = memo.get(catalog.target) if memo is not None else None
        if found is None:
            values = {s.attribute: getattr(options, s.attribute) for s in recorded_specs()}
            values |= {"target": catalog.target, "kubernetes_minor": options.minor}
            found = cls(**values)
            if memo is not None:
                memo[catalog.target] = found
        return found

    def apply(self, options: Options) -> Options:
        """``options`` with the recorded values in place of their own."""
        recorded = {s.attribute: getattr(self, s.attribute) for s in recorded_specs()}
        return replace(options, **{k: v for k, v in recorded.items() if v is not None})

    def aim(self, catalog: Catalog) -> Catalog:
        """``catalog`` aimed at the recorded target (bridge or vendor classes)."""
        return catalog if self.target is None or self.target == catalog.target else catalog.with_target(self.target)

    def wire_json(self) -> str:
        """:meth:`to_wire` as canonical JSON, remembered on this (frozen) instance."""
        text: str | None = vars(self).get("_wire_json")
        if text is None:
            text = _RECORD_JSON(self.to_wire())
            if type(self.dra_schedulers) in (tuple, type(None)):  # a list could change under the memo
                vars(self)["_wire_json"] = text
        return text

    def to_wire(self) -> dict[str, Any]:
        """The ``options`` object of the annotation (recorded values only)."""
        wire: dict[str, Any] = {}
        for s in recorded_specs():
            value = getattr(self, s.attribute)
            anchor = _SPEC_OF[s.recorded_with] if s.recorded_with else None
            if value is None or (anchor is not None and getattr(self, anchor.attribute) == anchor.default):
                continue
            wire[s.record_key] = list(value) if isinstance(value, tuple) else value
        return wire


_SPEC_OF = {s.attribute: s for s in recorded_specs()}
#: ``json.dumps(doc, sort_keys=True, separators=(",", ":"))`` without building an encoder per record.
_RECORD_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


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

    def to_json(self, original_text: str | None = None) -> str:
        """The annotation's value: canonical JSON of ``{"apiVersion", "options", "original",
        "plan", "templates"}`` (keys sorted), written member by member with the options' text
        remembered (:meth:`RecordedOptions.wire_json`: the same for every pod of a run).
        ``original_text``: ``original``'s canonical JSON (translate.dns_names.canonical_json) when
        the caller has it, used where it is the same text (printable ASCII: nothing to escape)."""
        if original_text is None or not original_text.isascii() or "\x7f" in original_text:
            original_text = _RECORD_JSON(self.original)
        return (
            f'{{"apiVersion":{_RECORD_JSON(RECORD_API_VERSION)},"options":{self.options.wire_json()},'
            f'"original":{original_text},"plan":{_RECORD_JSON(self.plan)},'
            f'"templates":{_RECORD_JSON(list(self.templates))}}}'
        )

    def write(self, pod: Mapping[str, Any], original_text: str | None = None) -> dict[str, Any]:
        """A copy of ``pod`` (new metadata, labels and annotations; the rest shared) carrying
        this record and the ``dra-bridge.io/converted`` label (``original_text``: :meth:`to_json`)."""
        new = dict(pod)
        meta = new["metadata"] = dict(pod.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), CONVERTED_LABEL: "true"}
        annotation = self.to_json(original_text)
        meta["annotations"] = {**(meta.get("annotations") or {}), CONVERSION_ANNOTATION: annotation}
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
    values: dict[str, Any] = {}
    for s in recorded_specs():
        value = raw.get(s.record_key, s.default if s.recorded_with else None)
        if (value is not None or s.recorded_with) and not s.accepts(value):
            raise fail(f"options.{s.record_key} must be {s.must()}")
        values[s.attribute] = tuple(value) if isinstance(value, list) else value
    return RecordedOptions(**values)
