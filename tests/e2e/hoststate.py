"""What a real node (``realnode.py``) changes on the host, recorded before it starts, undone
after it stops, and compared: :func:`leftovers` lists whatever is still different.

Recorded: the sysctls the kubelet and the CNI bridge plugin set, the mount table, the cgroups
at the top of every hierarchy, network links, iptables rules and chains, and the entries of
the host directories a kubelet or containerd writes to whatever its flags say.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Set by the kubelet (vm.*, kernel.*; kernel.keys.* when protectKernelDefaults is off) and the
#: CNI bridge plugin with isGateway (forwarding); the bridge-nf ones by whoever loads br_netfilter.
SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
    "net.ipv4.conf.all.forwarding",
    "net.ipv6.conf.all.forwarding",
    "net.ipv4.conf.all.route_localnet",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
)
#: Host directories whose entries a kubelet or containerd may add to, whatever their flags say.
WATCHED_DIRS = (
    "/run",
    "/run/netns",
    "/var/lib",
    "/var/lib/kubelet",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/cni",
    "/var/log",
    "/var/log/containers",
    "/var/log/pods",
    "/opt",
    "/etc",
    "/usr/libexec",
)
#: What :func:`restore` may delete when new: only what a kubelet or containerd writes there
#: (new entries elsewhere, /run or /etc, are reported by :func:`leftovers`, never deleted).
REMOVABLE = (
    "/run/containerd",
    "/run/netns/",
    "/var/lib/kubelet",
    "/var/lib/cni",
    "/var/log/containers",
    "/var/log/pods",
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
IPTABLES_TABLES = ("filter", "nat", "mangle")


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctls() -> dict[str, str]:
    found = {}
    for name in SYSCTLS:
        with contextlib.suppress(OSError):
            found[name] = _sysctl_path(name).read_text().strip()
    return found


def mountpoints() -> list[str]:
    """Mount points of this mount namespace, in mount order (``/proc/self/mountinfo``)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        points.append(point.encode().decode("unicode_escape"))
    return points


def cgroup_tops() -> set[str]:
    """``<hierarchy>/<dir>`` for every directory at the top of every cgroup hierarchy."""
    tops: set[str] = set()
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            if hierarchy.is_dir() and not hierarchy.is_symlink():
                tops.update(f"{hierarchy.name}/{d.name}" for d in hierarchy.iterdir() if d.is_dir())
    return tops


def links() -> set[str]:
    return {p.name for p in Path("/sys/class/net").iterdir()}


def iptables_rules() -> set[str]:
    """``<family> <table> <line>`` for every chain and rule of both families (no counters)."""
    rules: set[str] = set()
    for family in ("iptables", "ip6tables"):
        for table in IPTABLES_TABLES:
            proc = subprocess.run([f"{family}-save", "-t", table], capture_output=True, text=True, check=False)
            for line in proc.stdout.splitlines():
                if line.startswith(":"):
                    rules.add(f"{family} {table} {line.split()[0]}")  # the chain, not its counters
                elif line.startswith("-A"):
                    rules.add(f"{family} {table} {line}")
    return rules


def dir_entries() -> set[str]:
    entries: set[str] = set()
    for directory in WATCHED_DIRS:
        with contextlib.suppress(OSError):
            entries.update(os.path.join(directory, name) for name in os.listdir(directory))
    return entries


@dataclass(frozen=True)
class HostState:
    sysctls: dict[str, str]
    mounts: frozenset[str]
    cgroups: frozenset[str]
    links: frozenset[str]
    iptables: frozenset[str]
    entries: frozenset[str]

    @classmethod
    def take(cls) -> HostState:
        return cls(
            read_sysctls(),
            frozenset(mountpoints()),
            frozenset(cgroup_tops()),
            frozenset(links()),
            frozenset(iptables_rules()),
            frozenset(dir_entries()),
        )


def leftovers(before: HostState, workdir: Path, pids: Iterable[int] = ()) -> list[str]:
    """Everything that differs from ``before``, and processes still alive or still using ``workdir``."""
    now = HostState.take()
    found = [f"sysctl {k}={now.sysctls.get(k)} (was {v})" for k, v in before.sysctls.items() if now.sysctls.get(k) != v]
    found += [f"mount {m}" for m in sorted(now.mounts - before.mounts)]
    found += [f"cgroup {c}" for c in sorted(now.cgroups - before.cgroups)]
    found += [f"link {link}" for link in sorted(now.links - before.links)]
    found += [f"iptables {r}" for r in sorted(now.iptables - before.iptables)]
    found += [f"path {e}" for e in sorted(now.entries - before.entries)]
    found += [f"process {p} ({cmdline(p)})" for p in sorted(set(pids) | processes_using(workdir)) if alive(p)]
    if workdir.exists():
        found.append(f"path {workdir}")
    return found


# -- processes ------------------------------------------------------------------------------


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_using(marker: Path) -> set[int]:
    """Processes whose command line names ``marker`` (containerd shims name its socket)."""
    text = str(marker)
    return {int(p) for p in os.listdir("/proc") if p.isdigit() and text in cmdline(int(p))}


def cgroup_pids(names: Iterable[str]) -> set[int]:
    """Every process in the cgroup trees ``<hierarchy>/<name>`` (the pods, their sandboxes)."""
    pids: set[int] = set()
    for top in names:
        for procs in (CGROUP_ROOT / top).rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def kill_and_wait(pids: set[int], timeout: float = 10.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


# -- undoing --------------------------------------------------------------------------------


# One sequence in the order undoing needs (mounts, cgroups, the bridge link, iptables rules then
# their chains, sysctls, files), each step guarded by the snapshot taken before: read as a whole,
# it is the checklist of what a node leaves; split, the order would hide between functions.
def restore(before: HostState, workdir: Path, *, bridge: str) -> list[str]:  # noqa: C901, PLR0912
    """Undoes what a stopped node left: returns the errors (the caller reports them)."""
    errors: list[str] = []

    def attempt(what: str, args: list[str]) -> None:
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            errors.append(f"{what}: {proc.stderr.strip()}")

    ours = (f"{workdir}/", *REMOVABLE)
    # Mounts, newest first (a mount over a mount; the kubelet's rshared bind of its root dir).
    for point in reversed(mountpoints()):
        # still mounted? unmounting a shared parent can take its submounts with it
        if point not in before.mounts and f"{point}/".startswith(ours) and point in mountpoints():
            attempt(f"umount {point}", ["umount", point])
    for point in reversed(mountpoints()):  # the lazy way for whatever a busy mount kept
        if point not in before.mounts and f"{point}/".startswith(ours):
            attempt(f"umount -l {point}", ["umount", "-l", point])
    for top in sorted(cgroup_tops() - before.cgroups):
        if not top.split("/", 1)[1].startswith("kubepods"):
            continue  # not the kubelet's: reported by leftovers(), never removed
        for directory in sorted((CGROUP_ROOT / top).rglob("*/"), key=lambda p: -len(p.parts)):
            if directory.is_dir():
                with contextlib.suppress(OSError):
                    directory.rmdir()
        try:
            (CGROUP_ROOT / top).rmdir()
        except OSError as err:
            errors.append(f"rmdir cgroup {top}: {err}")
    if bridge in links():
        attempt(f"ip link delete {bridge}", ["ip", "link", "delete", bridge])
    now_rules = iptables_rules()
    for rule in sorted(now_rules - before.iptables):  # rules first, then their chains
        family, table, line = rule.split(" ", 2)
        if line.startswith("-A"):
            attempt(f"{family} -D {rule}", [family, "-t", table, "-D", *shlex.split(line)[1:]])
    for rule in sorted(now_rules - before.iptables):
        family, table, line = rule.split(" ", 2)
        if line.startswith(":"):
            attempt(f"{family} -X {rule}", [family, "-t", table, "-F", line[1:]])
            attempt(f"{family} -X {rule}", [family, "-t", table, "-X", line[1:]])
    for name, value in before.sysctls.items():
        try:
            if _sysctl_path(name).read_text().strip() != value:
                _sysctl_path(name).write_text(value)
        except OSError as err:
            errors.append(f"sysctl {name}={value}: {err}")
    # Deepest first, so that a watched dir created by the node goes after its entries.
    for entry in sorted(dir_entries() - before.entries, key=lambda e: -e.count("/")):
        if not entry.startswith(REMOVABLE):
            continue
        path = Path(entry)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    shutil.rmtree(workdir, ignore_errors=True)
    return errors
