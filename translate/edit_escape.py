"""Container edits that would let a container escape, and names that may reach the file system (pure).

The bridge writes CDI specs from what device plugins answered (:mod:`translate.allocate_edits`) and
from the catalog's recipes; the runtime applies them as root (docs/design.md D38). An edit is refused
(:func:`escape_refusals`, each reason naming the edit) when it

- mounts the host's root, or a path that is, holds or lies under a container runtime's or the
  kubelet's socket directory (:data:`RUNTIME_SOCKET_DIRS`; a socket file named like one anywhere);
- gives the container a block device (a device node or mount of a disk, partition, loop, device
  mapper, ... :data:`BLOCK_DEVICE_RE`; ``type: b``; or one the caller's ``is_block`` finds on the host);
- sets a variable that makes the dynamic loader run code (``LD_*``: ``LD_PRELOAD``, ``LD_AUDIT``,
  ``LD_LIBRARY_PATH``; and :data:`LOADER_VARIABLES`);
- uses a path with a ``..`` component, or a relative path;
- carries ``hooks`` (a hook runs a host program as root: we never write one).

This applies to edits we write, not to vendor CDI devices we reference by name (the toolkit's
``nvidia.com/gpu=<UUID>``: the vendor wrote that spec). :func:`plain_name` is the only shape a claim
UID or a device ID may have before it becomes part of a file name or a path (CDI's device-name
rule: alphanumeric ends, inner ``[A-Za-z0-9_.:-]``, so never ``/`` and never ``..`` alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

RUNTIME_SOCKET_DIRS = (
    "/run/containerd",
    "/var/run/containerd",
    "/run/k3s",
    "/run/crio",
    "/var/run/crio",
    "/run/docker",
    "/var/run/docker",
    "/run/podman",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/docker",
)
"""Directories that hold a container runtime's or the kubelet's sockets (or their state)."""
RUNTIME_SOCKET_NAMES = frozenset(
    {
        "containerd.sock",
        "docker.sock",
        "crio.sock",
        "dockershim.sock",
        "cri-dockerd.sock",
        "podman.sock",
        "kubelet.sock",
    }
)
LOADER_VARIABLES = frozenset({"GCONV_PATH", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "MALLOC_CHECK_"})
BLOCK_DEVICE_RE = re.compile(
    r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d+n\d+|mmcblk\d+|dm-\d+|md\d+|loop\d+|sr\d+|nbd\d+|zd\d+|rbd\d+"
    r"|mapper/|disk/|block/)"
)
_PLAIN_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")
IsBlock = Callable[[str], bool]


def plain_name(name: str) -> bool:
    """Whether ``name`` may become part of a file name or path (see the module docstring)."""
    return bool(_PLAIN_RE.fullmatch(name))


def _path_problem(path: str) -> str:
    if not path.startswith("/"):
        return f"{path!r} is not an absolute path"
    if ".." in path.split("/"):
        return f"{path!r} has a '..' component"
    return ""


def _norm(path: str) -> str:
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + "/")


def _runtime_problem(host: str) -> str:
    if host == "/":
        return "mounts the host's root /"
    for d in RUNTIME_SOCKET_DIRS:
        if _under(host, d) or _under(d, host):
            return f"mounts {host}, which is or holds the container runtime's or kubelet's sockets ({d})"
    if host.rsplit("/", 1)[-1] in RUNTIME_SOCKET_NAMES:
        return f"mounts {host}, a container runtime's socket"
    return ""


def _block(host: str, node_type: str, is_block: IsBlock | None) -> bool:
    return node_type == "b" or bool(BLOCK_DEVICE_RE.match(host + "/")) or (is_block is not None and is_block(host))


def escape_refusals(edits: Mapping[str, Any], is_block: IsBlock | None = None) -> list[str]:
    """Why one set of CDI ``containerEdits`` we would write lets a container escape (empty: it
    does not); ``is_block(host path)`` says whether a host path is a block device (the bridge
    stats it; None: patterns only)."""
    out: list[str] = []
    for entry in edits.get("env") or []:
        key = str(entry).partition("=")[0]
        if key.startswith("LD_") or key in LOADER_VARIABLES:
            out.append(f"variable {key} makes the dynamic loader load code")
    for node in edits.get("deviceNodes") or []:
        paths = [str(node.get("path", "")), *([str(node["hostPath"])] if node.get("hostPath") else [])]
        problems = [p for p in map(_path_problem, paths) if p]
        if problems:
            out.extend(f"device node {p}" for p in problems)
        elif _block(_norm(paths[-1]), str(node.get("type", "")), is_block):
            out.append(f"device node {paths[-1]} is a block device")
    for mount in edits.get("mounts") or []:
        host, target = str(mount.get("hostPath", "")), str(mount.get("containerPath", ""))
        problems = [p for p in (_path_problem(host), _path_problem(target)) if p]
        if problems:
            out.extend(f"mount {p}" for p in problems)
            continue
        why = _runtime_problem(_norm(host))
        if why:
            out.append(why)
        elif _block(_norm(host), "", is_block):
            out.append(f"mounts {host}, a block device")
    if edits.get("hooks"):
        out.append("hooks run host programs as root")
    return out
