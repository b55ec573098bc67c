"""The translation catalog: legacy extended resource names -> DRA device classes, as data.

The catalog ships as ``translate/data/catalog.yaml``; a user file may *add* resources and
MIG profile aliases, never redefine a shipped resource (pluto-style: extensible, not
overridable). Loading validates every key and raises :class:`CatalogError` naming the
source, the key and the rule: a value of the wrong type, a duplicate key (as kubectl refuses
one: :mod:`translate.strict_yaml`) or nesting deeper than the configuration limit included.

Shapes:
    Catalog.lookup("nvidia.com/mig-1g.10gb.me") -> ResourceMapping(kind="mig",
        profile="1g.10gb.me", device_class="nvidia-mig-1g.10gb.me.dra-bridge.io", ...)
    Catalog.device_classes() -> list of DeviceClass dicts (internal form, API-version free)

Names are matched exactly, or by a full-match pattern with one ``{profile}`` placeholder:
never by prefix (``nvidia.com/gpu-10gb`` is not ``nvidia.com/gpu``). The file schema (what a
catalog file may say, and every check) is :mod:`translate.catalog_file`; its names ``Kind``,
``Target``, ``KINDS``, ``PROFILE_RE``, ``CatalogEntry`` and ``VendorTarget`` are used from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from dra_bridge.translate.catalog_edits import EditSource
from dra_bridge.translate.catalog_file import (
    KINDS,
    PROFILE_RE,
    CatalogEntry,
    Kind,
    Target,
    VendorTarget,
    read_catalog_files,
)
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.names import LEGACY_RESOURCE_ANNOTATION, MANAGED_BY, MANAGED_BY_BRIDGE

#: Lookups remembered per catalog: names come from pods, so the memo is bounded.
LOOKUP_MEMO_SIZE = 1024
BRIDGE_RESOURCE_ATTRIBUTE = "resourceName"


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


__all__ = [
    "KINDS",
    "LOOKUP_MEMO_SIZE",
    "PROFILE_RE",
    "Catalog",
    "CatalogEntry",
    "Kind",
    "ResourceMapping",
    "Target",
    "VendorTarget",
    "load_catalog",
]


def load_catalog(user_text: str | None = None, user_source: str = "user catalog") -> Catalog:
    """Load the shipped catalog, extended by an optional user catalog (YAML text).

    Raises CatalogError (source, key, rule) for malformed files (:mod:`translate.catalog_file`),
    a user entry that redefines a shipped resource or pattern, or a YAML syntax error.
    """
    shipped = resources.files("dra_bridge.translate").joinpath("data/catalog.yaml").read_text("utf-8")
    docs = [(shipped, "translate/data/catalog.yaml")]
    if user_text is not None:
        docs.append((user_text, user_source))
    parts = read_catalog_files(docs, user_source)
    return Catalog(parts.bridge_driver, parts.target, parts.entries, parts.profile_aliases, parts.mig_profiles)
