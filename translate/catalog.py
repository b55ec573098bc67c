"""The translation catalog: legacy extended resource names -> DRA device classes, as data.

The catalog ships as ``translate/data/catalog.yaml``; a user file may *add* resources and
MIG profile aliases, never redefine a shipped resource (pluto-style: extensible, not
overridable). Loading validates every key and raises :class:`CatalogError` naming the
source, the key and the rule.

Shapes:
    Catalog.lookup("nvidia.com/mig-1g.10gb.me") -> ResourceMapping(kind="mig",
        profile="1g.10gb.me", device_class="nvidia-mig-1g.10gb.me.dra-bridge.io", ...)
    Catalog.device_classes() -> list of DeviceClass dicts (internal form, API-version free)

Names are matched exactly, or by a full-match pattern with one ``{profile}`` placeholder:
never by prefix (``nvidia.com/gpu-10gb`` is not ``nvidia.com/gpu``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, Literal, cast

import yaml

from dra_bridge.translate.catalog_edits import EditSource, parse_edits
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.dns_names import is_dns_subdomain
from dra_bridge.translate.errors import CatalogError
from dra_bridge.translate.names import (
    BRIDGE_DRIVER,
    CATALOG_API_VERSION,
    LEGACY_RESOURCE_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_BRIDGE,
)

Kind = Literal["gpu", "mig", "shared", "slicing"]
Target = Literal["bridge", "vendor"]
KINDS: tuple[str, ...] = ("gpu", "mig", "shared", "slicing")
#: Lookups remembered per catalog: names come from pods, so the memo is bounded.
LOOKUP_MEMO_SIZE = 1024
#: A MIG profile as the device plugin spells it in resource names (``+`` becomes ``.``).
PROFILE_RE = r"[1-9][0-9]*g\.[0-9]+gb(?:\.me|\.gfx)?"
BRIDGE_RESOURCE_ATTRIBUTE = "resourceName"


@dataclass(frozen=True)
class VendorTarget:
    """The vendor DRA driver for a resource: its driver name, its own DeviceClass, and the
    attribute values (``{name: value}`` under the driver's domain) that identify the device."""

    driver: str
    device_class: str
    match: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ResourceMapping:
    """How one concrete legacy resource name becomes DRA requests.

    ``device_class`` is the class a request names; ``selectors`` are CEL expressions the
    request adds (empty for our own classes, which select by resource name; the MIG profile
    test when targeting the vendor class). ``profile_aliases`` lists every spelling of the
    MIG profile as the vendor driver publishes it (``+me``, alias table applied).
    """

    resource_name: str
    kind: Kind
    device_class: str
    selectors: tuple[str, ...]
    vendor: VendorTarget | None
    gfd: str | None
    profile: str | None = None
    profile_aliases: tuple[str, ...] = ()
    fail_requests_greater_than_one: bool = False
    reason: str = ""
    class_selector: str = ""
    edits: EditSource | None = None


@dataclass(frozen=True)
class CatalogEntry:
    """One ``resources[]`` entry of a catalog file (``name`` or ``pattern``)."""

    name: str | None
    pattern: str | None
    kind: Kind
    device_class: str
    vendor: VendorTarget | None
    gfd: str | None
    fail_requests_greater_than_one: bool
    reason: str
    source: str
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    edits: EditSource | None = None


@dataclass(frozen=True)
class Catalog:
    """A validated catalog. Build it with :func:`load_catalog`."""

    bridge_driver: str
    target: Target
    entries: tuple[CatalogEntry, ...]
    profile_aliases: tuple[frozenset[str], ...]
    mig_profiles: tuple[str, ...]
    _memo: dict[str, ResourceMapping | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def with_target(self, target: Target) -> Catalog:
        """The same catalog aimed at ``bridge`` classes or the vendor's own classes."""
        return replace(self, target=target)

    def lookup(self, resource_name: str) -> ResourceMapping | None:
        """The mapping for an exact legacy resource name, or None when the catalog lacks it.

        Answers are remembered (the catalog is immutable; at most LOOKUP_MEMO_SIZE names, as
        the webhook reads names from arbitrary pods): the webhook looks up the same few names
        on every admission.
        """
        try:
            return self._memo[resource_name]
        except KeyError:
            pass
        found = self._lookup(resource_name)
        if len(self._memo) < LOOKUP_MEMO_SIZE:
            self._memo[resource_name] = found
        return found

    def _lookup(self, resource_name: str) -> ResourceMapping | None:
        for entry in self.entries:
            if entry.name is not None and entry.name == resource_name:
                return self._mapping(entry, resource_name, None)
        for entry in self.entries:
            if entry.regex is not None:
                m = entry.regex.fullmatch(resource_name)
                if m:
                    return self._mapping(entry, resource_name, m.group("profile"))
        return None

    def aliases(self, profile: str) -> tuple[str, ...]:
        """Every spelling of a MIG profile as the vendor driver publishes it, sorted.

        ``1g.10gb.me`` -> ``("1g.10gb+me", "1g.9gb+me")`` with the shipped table: the suffix is kept and the alias
        table is applied to the base profile.
        """
        base, suffix = profile, ""
        for s in (".me", ".gfx"):
            if profile.endswith(s):
                base, suffix = profile[: -len(s)], "+" + s[1:]
        names = {base}
        for group in self.profile_aliases:
            if base in group:
                names |= group
        return tuple(sorted(n + suffix for n in names))

    def canonical_profile(self, profile: str) -> str:
        """The spelling of ``profile`` whose DeviceClass the catalog ships: the first of its aliases
        (suffix kept) in ``migProfiles``, else ``profile`` itself (``3g.39gb`` -> ``3g.40gb``,
        ``1g.9gb.me`` -> ``1g.10gb.me`` with the shipped table)."""
        if profile in self.mig_profiles:
            return profile
        spelled = [a.replace("+", ".") for a in self.aliases(profile)]
        return next((a for a in spelled if a in self.mig_profiles), profile)

    def _mapping(self, entry: CatalogEntry, name: str, profile: str | None) -> ResourceMapping:
        aliases = self.aliases(profile) if profile else ()
        if entry.kind == "slicing":
            return ResourceMapping(name, entry.kind, "", (), None, entry.gfd, reason=entry.reason)
        # An alias spelling gets the class shipped for its profile (its selector takes every spelling).
        our_class = entry.device_class.replace("{profile}", self.canonical_profile(profile) if profile else "")
        class_selector = self._class_selector(entry, name, aliases)
        selectors: tuple[str, ...] = ()
        device_class = our_class
        if self.target == "vendor" and entry.vendor is not None:
            device_class = entry.vendor.device_class
            tests = [ex.string_attribute_in(entry.vendor.driver, k, [v]) for k, v in entry.vendor.match]
            if aliases:
                tests.append(ex.string_attribute_in(entry.vendor.driver, "profile", aliases))
            # A vendor class may serve several legacy resources (gpu.intel.com: i915 and xe;
            # mig.nvidia.com: every profile): the request repeats the device test.
            selectors = (ex.all_of(tests),)
        return ResourceMapping(
            resource_name=name,
            kind=entry.kind,
            device_class=device_class,
            selectors=selectors,
            vendor=entry.vendor,
            gfd=entry.gfd,
            profile=profile,
            profile_aliases=aliases,
            fail_requests_greater_than_one=entry.fail_requests_greater_than_one,
            reason=entry.reason,
            class_selector=class_selector,
            edits=entry.edits,
        )

    def _class_selector(self, entry: CatalogEntry, name: str, aliases: tuple[str, ...]) -> str:
        """Our class: the bridge's devices of ``name`` (and its profile's aliases), or the vendor
        driver's devices of the same type. A MIG class also selects the bridge's devices of the
        vendor's whole-device resources that are MIG devices of its profile: on a single-strategy
        node the device plugin counts them as ``nvidia.com/gpu`` (see :mod:`translate.plan.mig_single`)."""
        names = [name]
        if entry.pattern is not None and aliases:
            pattern = entry.pattern
            names = sorted({pattern.replace("{profile}", a.replace("+", ".")) for a in aliases})
        on_bridge = f"device.driver == {ex.literal(self.bridge_driver)}"
        bridge = ex.all_of([on_bridge, ex.string_attribute_in(self.bridge_driver, BRIDGE_RESOURCE_ATTRIBUTE, names)])
        if entry.vendor is None:
            return bridge
        same_type = [ex.string_attribute_in(entry.vendor.driver, k, [v]) for k, v in entry.vendor.match]
        if aliases:
            same_type.append(ex.string_attribute_in(entry.vendor.driver, "profile", aliases))
        branches = [bridge]
        whole = sorted(
            e.name
            for e in self.entries
            if e.kind == "gpu"
            and e.name is not None
            and e.vendor is not None
            and e.vendor.driver == entry.vendor.driver
        )
        if entry.kind == "mig" and whole:
            branches.append(
                ex.all_of(
                    [
                        on_bridge,
                        ex.string_attribute_in(self.bridge_driver, BRIDGE_RESOURCE_ATTRIBUTE, whole),
                        *same_type,
                    ]
                )
            )
        branches.append(ex.all_of([f"device.driver == {ex.literal(entry.vendor.driver)}", *same_type]))
        return ex.any_of(branches)

    def device_classes(self, profiles: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Our DeviceClass objects (``resource.k8s.io`` spec, the same in every version):
        one per exact resource, one per MIG profile (``profiles`` or the catalog's list)."""
        out: dict[str, dict[str, Any]] = {}
        wanted = tuple(profiles) if profiles is not None else self.mig_profiles
        for entry in self.entries:
            if entry.kind == "slicing":
                continue
            if entry.name is not None:
                names = [entry.name]
            elif entry.pattern is not None:
                names = [entry.pattern.replace("{profile}", p) for p in wanted]
            for n in names:
                m = self.with_target("bridge").lookup(n)
                if m is None or m.kind == "slicing":
                    continue
                out[m.device_class] = {
                    "kind": "DeviceClass",
                    "metadata": {
                        "name": m.device_class,
                        "labels": {MANAGED_BY: MANAGED_BY_BRIDGE},
                        "annotations": {LEGACY_RESOURCE_ANNOTATION: n},
                    },
                    "spec": {"selectors": [{"cel": {"expression": m.class_selector}}]},
                }
        return [out[k] for k in sorted(out)]


def _fail(source: str, key: str, rule: str) -> CatalogError:
    return CatalogError(f"{source}: {key}: {rule}")


def _entry(raw: object, source: str, key: str) -> CatalogEntry:
    if not isinstance(raw, Mapping):
        raise _fail(source, key, "must be a mapping")
    allowed = {
        "name",
        "pattern",
        "kind",
        "deviceClass",
        "vendor",
        "gfd",
        "failRequestsGreaterThanOne",
        "reason",
        "edits",
    }
    unknown = sorted(str(k) for k in set(raw) - allowed)
    if unknown:
        raise _fail(source, f"{key}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    name, pattern = raw.get("name"), raw.get("pattern")
    if (name is None) == (pattern is None):
        raise _fail(source, key, "exactly one of name and pattern must be set")
    regex = None
    if pattern is not None:
        if not isinstance(pattern, str) or pattern.count("{profile}") != 1:
            raise _fail(source, f"{key}.pattern", "must be a string with exactly one {profile}")
        head, tail = pattern.split("{profile}")
        regex = re.compile(re.escape(head) + f"(?P<profile>{PROFILE_RE})" + re.escape(tail))
    elif not isinstance(name, str) or "/" not in name:
        raise _fail(source, f"{key}.name", "must be an extended resource name like vendor.com/gpu")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise _fail(source, f"{key}.kind", f"must be one of {', '.join(KINDS)}")
    device_class = raw.get("deviceClass", "")
    vendor = None
    if kind != "slicing":
        probe = str(device_class).replace("{profile}", "1g.5gb")
        if not isinstance(device_class, str) or not is_dns_subdomain(probe):
            raise _fail(source, f"{key}.deviceClass", "must be a DNS subdomain (a DeviceClass name)")
        if pattern is None and "{profile}" in device_class:
            raise _fail(source, f"{key}.deviceClass", "{profile} is only allowed with pattern")
        vendor = _vendor(raw.get("vendor"), source, f"{key}.vendor")
    elif not raw.get("reason"):
        raise _fail(source, f"{key}.reason", "required for kind slicing (say why it cannot move)")
    fail_gt_one = raw.get("failRequestsGreaterThanOne", False)
    if not isinstance(fail_gt_one, bool):
        raise _fail(source, f"{key}.failRequestsGreaterThanOne", "must be a boolean")
    gfd = raw.get("gfd")
    if gfd not in (None, "nvidia"):
        raise _fail(source, f"{key}.gfd", "must be nvidia or absent")
    return CatalogEntry(
        name,
        pattern,
        cast(Kind, kind),
        device_class,
        vendor,
        gfd,
        fail_gt_one,
        str(raw.get("reason", "")),
        source,
        regex,
        parse_edits(raw.get("edits"), source, f"{key}.edits"),
    )


def _vendor(raw: object, source: str, key: str) -> VendorTarget | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"driver", "deviceClass", "match"}:
        raise _fail(source, key, "must be a mapping with driver, deviceClass and match")
    driver, dclass, match = raw.get("driver"), raw.get("deviceClass"), raw.get("match", {})
    if not isinstance(driver, str) or not is_dns_subdomain(driver) or len(driver) > 63:
        raise _fail(source, f"{key}.driver", "must be a DNS subdomain of at most 63 characters")
    if not isinstance(dclass, str) or not is_dns_subdomain(dclass):
        raise _fail(source, f"{key}.deviceClass", "must be a DNS subdomain")
    if not isinstance(match, Mapping) or not all(
        isinstance(k, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,31}", k) and isinstance(v, str)
        for k, v in match.items()
    ):
        raise _fail(source, f"{key}.match", "must map attribute identifiers to string values")
    return VendorTarget(driver, dclass, tuple(sorted(match.items())))


def _parse(doc: object, source: str) -> dict[str, Any]:
    if not isinstance(doc, Mapping):
        raise _fail(source, "(top level)", "must be a mapping")
    allowed = {"apiVersion", "kind", "bridgeDriver", "target", "migProfileAliases", "migProfiles", "resources"}
    unknown = sorted(str(k) for k in set(doc) - allowed)
    if unknown:
        raise _fail(source, unknown[0], f"unknown key (allowed: {', '.join(sorted(allowed))})")
    if doc.get("apiVersion") != CATALOG_API_VERSION or doc.get("kind") != "Catalog":
        raise _fail(source, "apiVersion/kind", f"must be {CATALOG_API_VERSION} / Catalog")
    return dict(doc)


def _profiles(raw: object, source: str, key: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(p, str) and re.fullmatch(PROFILE_RE, p) for p in raw):
        raise _fail(source, key, f"must be a list of MIG profiles matching {PROFILE_RE}")
    return list(raw)


def _clash(entry: CatalogEntry, entries: list[CatalogEntry], profiles: list[str]) -> str | None:
    """The existing entry ``entry`` would redefine: the same name or pattern, a name an existing
    pattern matches, or a pattern matching an existing name or known profile's name."""
    for e in entries:
        if (e.name or e.pattern) == (entry.name or entry.pattern):
            return e.name or e.pattern
        if entry.name and e.regex is not None and e.regex.fullmatch(entry.name):
            return e.pattern
        if entry.regex is not None:
            names = [e.name] if e.name else [e.pattern.replace("{profile}", p) for p in profiles] if e.pattern else []
            if any(entry.regex.fullmatch(n) for n in names):
                return e.name or e.pattern
    return None


def load_catalog(user_text: str | None = None, user_source: str = "user catalog") -> Catalog:
    """Load the shipped catalog, extended by an optional user catalog (YAML text).

    Raises CatalogError (source, key, rule) for malformed files, a user entry that
    redefines a shipped resource or pattern, or a YAML syntax error.
    """
    shipped = resources.files("dra_bridge.translate").joinpath("data/catalog.yaml").read_text("utf-8")
    docs = [(shipped, "translate/data/catalog.yaml")]
    if user_text is not None:
        docs.append((user_text, user_source))
    entries: list[CatalogEntry] = []
    aliases: list[frozenset[str]] = []
    profiles: list[str] = []
    bridge_driver, target = BRIDGE_DRIVER, "bridge"
    for text, source in docs:
        try:
            doc = _parse(yaml.safe_load(text), source)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
            raise CatalogError(f"{where}: not valid YAML: {exc.problem}") from exc
        except yaml.YAMLError as exc:
            raise CatalogError(f"{source}: not valid YAML: {exc}") from exc
        if source == user_source and "bridgeDriver" in doc:
            raise _fail(
                source,
                "bridgeDriver",
                "only the shipped catalog sets it (the driver name the bridge "
                "publishes under and the DeviceClasses select)",
            )
        bridge_driver = str(doc.get("bridgeDriver", bridge_driver))
        if "target" in doc:
            if doc["target"] not in ("bridge", "vendor"):
                raise _fail(source, "target", "must be bridge or vendor")
            target = doc["target"]
        for i, group in enumerate(doc.get("migProfileAliases", []) or []):
            aliases.append(frozenset(_profiles(group, source, f"migProfileAliases[{i}]")))
        profiles += _profiles(doc.get("migProfiles", []) or [], source, "migProfiles")
        raw_entries = doc.get("resources", []) or []
        if not isinstance(raw_entries, list):
            raise _fail(source, "resources", "must be a list")
        for i, raw in enumerate(raw_entries):
            entry = _entry(raw, source, f"resources[{i}]")
            ident = entry.name or entry.pattern
            clash = _clash(entry, entries, profiles)
            if clash:
                raise _fail(
                    source,
                    f"resources[{i}]",
                    f"{ident} is already covered by {clash} (entries may be added, not redefined)",
                )
            entries.append(entry)
    merged: list[frozenset[str]] = []
    for group in aliases:
        overlapping = [g for g in merged if g & group]
        for g in overlapping:
            merged.remove(g)
            group = group | g
        merged.append(group)
    return Catalog(bridge_driver, cast(Target, target), tuple(entries), tuple(merged), tuple(dict.fromkeys(profiles)))
