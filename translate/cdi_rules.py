"""The CDI specification's rules for a spec file, as the runtimes' CDI library applies them (pure).

A container runtime loads a spec only when all of it is valid, and refuses a container whose CDI
device's spec it refused; so every spec the bridge writes is checked here first, and the spec
index (:mod:`bridge.kubeletplugin.cdi_specs`) counts an invalid spec as defining nothing
(docs/design.md D39). The rules, re-typed from the CDI library
(https://github.com/cncf-tags/container-device-interface: ``pkg/cdi/spec.go`` ``validate``,
``pkg/cdi/container-edits.go``, ``api/producer/validator``, ``specs-go/version.go``):

- ``cdiVersion`` is a released version (:data:`CDI_VERSIONS`);
- ``kind`` is ``<vendor>/<class>``, each starting with a letter, ending with a letter or digit,
  inner characters letters, digits, ``_``, ``-``, ``.``;
- at least one device; each device name starts and ends with a letter or digit, inner
  characters letters, digits, ``_``, ``-``, ``.``, ``:``; no name twice;
- a device's ``containerEdits`` are not empty (env, device nodes, hooks, mounts, additional GIDs,
  Intel RDT or net devices); spec-level edits may be;
- in any edits: every ``env`` entry is ``KEY=value`` with a non-empty key; a device node has a
  path, a type among ``b c u p`` (or none), non-negative major and minor, permissions made of
  ``r w m`` (or ``none``); a mount has a host and a container path; a hook has a known hook
  name and a path.

A device node without a type and major number is completed by the runtime from the host path
with ``lstat`` (``fillMissingInfo``): a symlink (``/dev/dri/by-path/...``) is "not a device
node" and fails the container, which is why the bridge writes DRM nodes with their type and
numbers (:mod:`translate.inventory.drm`). :func:`spec_problems` asks the caller's
``is_device_node`` about such paths where it can see the host's ``/dev`` (tests; None: not checked).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

CDI_VERSIONS = frozenset({"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"})
HOOK_NAMES = frozenset({"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"})
EDIT_KEYS = ("env", "deviceNodes", "hooks", "mounts", "additionalGids", "intelRdt", "netDevices")
NODE_TYPES = frozenset({"", "b", "c", "u", "p"})
_QUALIFIER_RE = re.compile(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?")
_DEVICE_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")
IsDeviceNode = Callable[[str], bool]


def edits_empty(edits: object) -> bool:
    """Whether ``containerEdits`` edit nothing (invalid for a device)."""
    return not isinstance(edits, Mapping) or not any(edits.get(k) for k in EDIT_KEYS)


def _node_problems(node: object, where: str, is_device_node: IsDeviceNode | None) -> list[str]:
    if not isinstance(node, Mapping) or not isinstance(node.get("path"), str) or not node["path"]:
        return [f"{where}: a device node without a path"]
    path, out = str(node["path"]), []
    kind = node.get("type", "")
    if kind not in NODE_TYPES:
        out.append(f"{where}: device node {path} has type {kind!r} (b, c, u or p)")
    for key in ("major", "minor"):
        value = node.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            out.append(f"{where}: device node {path} has {key} {value!r} (a non-negative integer)")
    perms = node.get("permissions", "")
    if not isinstance(perms, str) or (perms != "none" and perms.strip("rwm")):
        out.append(f"{where}: device node {path} has permissions {perms!r} (r, w, m or none)")
    host = str(node.get("hostPath") or path)
    complete = kind != "" and (node.get("major", 0) != 0 or kind == "p")
    if not complete and is_device_node is not None and not is_device_node(host):
        out.append(f"{where}: {host} is not a device node on the host (a runtime refuses it)")
    return out


def edits_problems(edits: object, where: str, is_device_node: IsDeviceNode | None = None) -> list[str]:
    """Why one ``containerEdits`` breaks the CDI rules (empty: it does not)."""
    if edits is None:
        return []
    if not isinstance(edits, Mapping):
        return [f"{where}: containerEdits is not a mapping"]
    out: list[str] = []
    for entry in edits.get("env") or []:
        if not isinstance(entry, str) or entry.find("=") <= 0:
            out.append(f"{where}: env entry {entry!r} is not KEY=value")
    for node in edits.get("deviceNodes") or []:
        out.extend(_node_problems(node, where, is_device_node))
    for mount in edits.get("mounts") or []:
        if not isinstance(mount, Mapping) or not mount.get("hostPath") or not mount.get("containerPath"):
            out.append(f"{where}: a mount without a host path or a container path")
    for hook in edits.get("hooks") or []:
        if not isinstance(hook, Mapping) or hook.get("hookName") not in HOOK_NAMES or not hook.get("path"):
            out.append(f"{where}: a hook without a known hook name or a path")
    return out


def spec_problems(doc: object, is_device_node: IsDeviceNode | None = None) -> list[str]:
    """Why a parsed spec breaks the CDI rules (empty: a runtime loads it); see the module docstring."""
    if not isinstance(doc, Mapping):
        return ["not a mapping"]
    out: list[str] = []
    if doc.get("cdiVersion") not in CDI_VERSIONS:
        out.append(f"cdiVersion {doc.get('cdiVersion')!r} is not a released CDI version")
    kind = doc.get("kind")
    vendor, _, cls = kind.partition("/") if isinstance(kind, str) else ("", "", "")
    if not _QUALIFIER_RE.fullmatch(vendor) or not _QUALIFIER_RE.fullmatch(cls):
        out.append(f"kind {kind!r} is not <vendor>/<class>")
    out.extend(edits_problems(doc.get("containerEdits"), "spec", is_device_node))
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        return [*out, "no devices"]
    seen: set[str] = set()
    for i, device in enumerate(devices):
        name = device.get("name") if isinstance(device, Mapping) else None
        where = f"device {name!r}" if isinstance(name, str) else f"devices[{i}]"
        if not isinstance(name, str) or not _DEVICE_RE.fullmatch(name):
            out.append(f"{where}: not a CDI device name")
        elif name in seen:
            out.append(f"{where}: defined twice")
        seen.add(str(name))
        edits = device.get("containerEdits") if isinstance(device, Mapping) else None
        if edits_empty(edits):
            out.append(f"{where}: its containerEdits are empty")
        else:
            out.extend(edits_problems(edits, where, is_device_node))
    return out


def device_names(doc: Any) -> set[str]:
    """The fully-qualified names (``kind=name``) a valid spec defines; empty for an invalid one."""
    if spec_problems(doc):
        return set()
    return {f"{doc['kind']}={d['name']}" for d in doc["devices"]}
