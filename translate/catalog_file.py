"""A catalog file's schema: YAML text -> validated entries, MIG profile aliases and profiles (pure).

    read_catalog_files([(text, source), ...], user_source) -> CatalogParts
        the shipped file first, then an optional user file; CatalogError names the source, the
        key and the rule

Every value is type-checked before it is used (``migProfileAliases: 5`` is "must be a list",
never a TypeError); a duplicate key is refused as kubectl refuses one and a document nested
deeper than :data:`translate.strict_yaml.MAX_CONFIG_DEPTH` is refused before any key is read
(:mod:`translate.strict_yaml`). A user file may add entries, never redefine a shipped one.
:mod:`translate.catalog` builds the :class:`~translate.catalog.Catalog` from the parts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import yaml

from dra_bridge.translate.catalog_edits import EditSource, parse_edits
from dra_bridge.translate.dns_names import is_dns_subdomain
from dra_bridge.translate.errors import CatalogError
from dra_bridge.translate.names import BRIDGE_DRIVER, CATALOG_API_VERSION
from dra_bridge.translate.strict_yaml import MAX_CONFIG_DEPTH, load_bounded, too_deep

Kind = Literal["gpu", "mig", "shared", "slicing"]
Target = Literal["bridge", "vendor"]
KINDS: tuple[str, ...] = ("gpu", "mig", "shared", "slicing")
#: A MIG profile as the device plugin spells it in resource names (``+`` becomes ``.``).
PROFILE_RE = r"[1-9][0-9]*g\.[0-9]+gb(?:\.me|\.gfx)?"


@dataclass(frozen=True)
class VendorTarget:
    """The vendor DRA driver for a resource: its driver name, its own DeviceClass, and the
    attribute values (``{name: value}`` under the driver's domain) that identify the device."""

    driver: str
    device_class: str
    match: tuple[tuple[str, str], ...]


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
    reason = _text(raw.get("reason", ""), source, f"{key}.reason")
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
        reason,
        source,
        regex,
        parse_edits(raw.get("edits"), source, f"{key}.edits"),
    )


def _text(raw: object, source: str, key: str) -> str:
    if not isinstance(raw, str):
        raise _fail(source, key, "must be a string")
    return raw


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


def _list(raw: object, source: str, key: str) -> list[Any]:
    """``raw`` (absent or null: empty) when it is a list; CatalogError naming ``key`` otherwise."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail(source, key, "must be a list")
    return raw


def _load_yaml(text: str, source: str) -> dict[str, Any]:
    """The catalog document in ``text``; CatalogError for a YAML error, a duplicate key or a
    document nested deeper than MAX_CONFIG_DEPTH or expanding past its alias budget."""
    try:
        doc = load_bounded(text, source, CatalogError)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise CatalogError(f"{where}: not valid YAML: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise CatalogError(f"{source}: not valid YAML: {exc}") from exc
    deep = too_deep(doc)
    if deep is not None:
        raise _fail(source, deep, f"nests deeper than {MAX_CONFIG_DEPTH} levels")
    return _parse(doc, source)


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


@dataclass(frozen=True)
class CatalogParts:
    """What the catalog files say, validated and merged (alias groups that share a profile joined)."""

    bridge_driver: str
    target: Target
    entries: tuple[CatalogEntry, ...]
    profile_aliases: tuple[frozenset[str], ...]
    mig_profiles: tuple[str, ...]


def read_catalog_files(docs: Sequence[tuple[str, str]], user_source: str) -> CatalogParts:
    """Validate ``docs`` (``(text, source)``, the shipped file first) in order; CatalogError (source,
    key, rule) for a malformed file, a user entry that redefines an earlier one, a YAML error."""
    entries: list[CatalogEntry] = []
    aliases: list[frozenset[str]] = []
    profiles: list[str] = []
    bridge_driver, target = BRIDGE_DRIVER, "bridge"
    for text, source in docs:
        doc = _load_yaml(text, source)
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
        for i, group in enumerate(_list(doc.get("migProfileAliases"), source, "migProfileAliases")):
            aliases.append(frozenset(_profiles(group, source, f"migProfileAliases[{i}]")))
        profiles += _profiles(doc.get("migProfiles") or [], source, "migProfiles")
        for i, raw in enumerate(_list(doc.get("resources"), source, "resources")):
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
    return CatalogParts(
        bridge_driver, cast(Target, target), tuple(entries), tuple(merged), tuple(dict.fromkeys(profiles))
    )
