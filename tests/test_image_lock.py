"""requirements/image.lock, the image's Python dependencies (docs/design.md D47), checked
without network and without re-resolving (an upstream release never turns CI red): every
requirement of pyproject.toml's [project].dependencies and of the nvml extra the image installs
is satisfied by its pin in the image's environment (CPython 3.11, linux x86_64), every pin is
needed (its ``# via`` annotations lead back to pyproject.toml), every pin is exact and carries
a sha256 hash, and the Dockerfile and hack/image.sh both install from it with --require-hashes."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "image.lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = ("nvml",)
"""The extras the image installs: resolved into the lock (hack/lock.sh --extra), installed from it."""
ROOT_VIA = "dra-bridge (pyproject.toml)"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*;.*?)?\s*\\?$")
HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}\s*\\?$")

# The image's interpreter and platform: the lock's header says them, hack/lock.sh resolves for them.
IMAGE_ENV: dict[str, str] = {
    **{k: str(v) for k, v in default_environment().items()},
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "python_version": "3.11",
    "python_full_version": "3.11.2",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}


@dataclass
class Pin:
    version: str
    hashes: int = 0
    via: list[str] = field(default_factory=list)


class LockError(AssertionError):
    """The lock file breaks a rule: what and which pin."""


def parse(text: str) -> dict[str, Pin]:
    """The pins of a uv / pip-compile lock (``--generate-hashes``, ``--annotation-style split``):
    name (canonical) -> version, hash count and the ``# via`` parents (canonical, or ROOT_VIA)."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line.startswith("#") and current is None):
            continue
        if m := PIN.match(line):
            current = pins.setdefault(canonicalize_name(m.group(1)), Pin(m.group(2)))
            in_via = False
        elif current is None:
            raise LockError(f"not a pin (name==version): {line!r}")
        elif line.startswith("--hash="):
            if not HASH.match(line):
                raise LockError(f"not a sha256 hash: {line!r}")
            current.hashes += 1
        elif line == "# via":
            in_via = True
        elif line.startswith("# via "):
            current.via.append(_parent(line.removeprefix("# via ")))
            in_via = False
        elif in_via and line.startswith("#   "):
            current.via.append(_parent(line.removeprefix("#   ")))
        elif not line.startswith("#"):
            raise LockError(f"not a pin, a hash or an annotation: {line!r}")
    return pins


def _parent(name: str) -> str:
    name = name.strip()
    return name if name == ROOT_VIA else canonicalize_name(name.split()[0])


def requirements() -> list[Requirement]:
    """What the image installs: [project].dependencies and the extras of :data:`EXTRAS`."""
    project = PYPROJECT["project"]
    names = list(project["dependencies"]) + [r for e in EXTRAS for r in project["optional-dependencies"][e]]
    return [Requirement(r) for r in names]


def build_requirements() -> list[Requirement]:
    """What the Dockerfile builds the wheel with: [build-system].requires."""
    return [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]


LOCKS = {"image.lock": requirements, "build.lock": build_requirements}


def check(pins: dict[str, Pin], reqs: list[Requirement]) -> None:
    """Raises LockError unless every requirement is satisfied, every pin needed and hashed."""
    for req in reqs:
        if req.marker is not None and not req.marker.evaluate(IMAGE_ENV):
            continue
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            raise LockError(f"{req}: not pinned")
        if not req.specifier.contains(Version(pin.version), prereleases=True):
            raise LockError(f"{req}: the pin {req.name}=={pin.version} does not satisfy it")
    for name, pin in pins.items():
        if not pin.hashes:
            raise LockError(f"{name}=={pin.version}: no --hash")
        unknown = [p for p in pin.via if p != ROOT_VIA and p not in pins]
        if unknown:
            raise LockError(f"{name}=={pin.version}: via {unknown}, which the lock does not pin")
    direct: set[str] = {canonicalize_name(r.name) for r in reqs}
    if stale := sorted(n for n, p in pins.items() if ROOT_VIA in p.via and n not in direct):
        raise LockError(f"pins annotated via pyproject.toml that it does not require: {stale}")
    # needed: what pyproject names (uv annotates no via for requirements read from stdin), then
    # whatever a needed pin leads to, by the lock's own annotations (never by re-resolving)
    needed: set[str] = direct & set(pins)
    while grown := {n for n, p in pins.items() if n not in needed and set(p.via) & needed}:
        needed |= grown
    if unneeded := sorted(set(pins) - needed):
        raise LockError(f"pins nothing in pyproject.toml leads to: {unneeded}")


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_the_lock_satisfies_pyproject_and_every_pin_is_needed_and_hashed(name: str) -> None:
    reqs = LOCKS[name]()
    pins = parse((LOCK.parent / name).read_text())
    check(pins, reqs)
    assert {canonicalize_name(r.name) for r in reqs} <= set(pins)


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_the_header_names_the_image_s_python_and_platform(name: str) -> None:
    header = (LOCK.parent / name).read_text().split("\n# This file", 1)[0]
    assert "CPython 3.11 on x86_64-manylinux_2_36" in header and "hack/lock.sh" in header
    script = (ROOT / "hack" / "lock.sh").read_text()
    assert "PYTHON_VERSION=3.11 " in script and "PYTHON_PLATFORM=x86_64-manylinux_2_36 " in script
    assert "--generate-hashes" in script and re.findall(r"--extra (\S+)", script) == list(EXTRAS)
    assert Version("3.11") in SpecifierSet(PYPROJECT["project"]["requires-python"])
    # the Dockerfile's base is the interpreter the lock was resolved for
    assert "BASE_IMAGE=python:3.11-slim-bookworm@sha256:" in (ROOT / "Dockerfile").read_text()


CONT = r"(?:[^\n]|\\\n)*?"
"""Anything up to the end of a command, line continuations included."""


def test_the_dockerfile_and_the_test_image_install_from_the_lock_with_hashes() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    image_sh = (ROOT / "hack" / "image.sh").read_text()
    for name, text in (("Dockerfile", dockerfile), ("hack/image.sh", image_sh)):
        assert re.search(rf"install {CONT}--require-hashes --no-deps {CONT}-r \S*image\.lock", text), name
    assert re.search(r"^COPY requirements/build\.lock requirements/image\.lock requirements/$", dockerfile, re.M)
    assert re.search(r"install [^\n]*--require-hashes --no-deps -r requirements/build\.lock", dockerfile)
    # the wheel itself goes in with --no-deps: nothing beyond the lock is resolved
    for name, text in (("Dockerfile", dockerfile), ("hack/image.sh", image_sh)):
        assert re.search(rf"install {CONT}--no-deps --no-index {CONT}(\.whl|\$wheel)", text), name
    # the test image's cache key covers the lock: a new lock makes a new image
    assert re.search(r'lock=\$\(sha256sum <"\$LOCK"', image_sh) and 'LOCK="$REPO/requirements/image.lock"' in image_sh


def _lock(*entries: str) -> str:
    return "\n".join(entries) + "\n"


H = "    --hash=sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("text", "reqs", "error"),
    [
        (_lock("a==1.0 \\", H, f"    # via {ROOT_VIA}"), ["a>=2"], "does not satisfy"),
        (_lock("a==1.0 \\", H, f"    # via {ROOT_VIA}"), ["a>=1", "b"], "b: not pinned"),
        (_lock("a==1.0", f"    # via {ROOT_VIA}"), ["a"], "no --hash"),
        (_lock("a==1.0 \\", H, f"    # via {ROOT_VIA}", "c==1 \\", H, "    # via d"), ["a"], "does not pin"),
        (_lock("a==1.0 \\", H, f"    # via {ROOT_VIA}", "c==1 \\", H), ["a"], "leads to: ['c']"),
        (_lock("a==1.0 \\", H, f"    # via {ROOT_VIA}", "c==1 \\", H, f"    # via {ROOT_VIA}"), ["a"], "not require"),
        (
            _lock("a==1.0 \\", H, f"    # via {ROOT_VIA}", "c==1 \\", H, "    # via d", "d==1 \\", H, "    # via c"),
            ["a"],
            "leads to: ['c', 'd']",
        ),
        (_lock("a>=1.0 \\", H), ["a"], "not a pin"),
        (_lock("a==1.0 \\", "    --hash=md5:00"), ["a"], "not a sha256"),
    ],
    ids=["unsatisfied", "missing", "no hash", "via unknown", "unneeded", "stale", "a cycle", "not exact", "md5"],
)
def test_the_checks_refuse_a_broken_lock(text: str, reqs: list[str], error: str) -> None:
    with pytest.raises(LockError, match=re.escape(error)):
        check(parse(text), [Requirement(r) for r in reqs])


def test_a_requirement_for_another_platform_needs_no_pin_and_a_split_via_is_read() -> None:
    text = _lock("a==1.0 \\", H, "    # via", f"    #   {ROOT_VIA}", "    #   b", "b==2 \\", H, f"    # via {ROOT_VIA}")
    pins = parse(text)
    assert pins["a"].via == [ROOT_VIA, "b"]
    check(pins, [Requirement("a"), Requirement("b"), Requirement("pywin32; sys_platform == 'win32'")])


def missing_dependencies(pins: dict[str, Pin]) -> list[str]:
    """The requirements of the pinned packages (as this environment's installed copies of them
    declare, markers evaluated for the image) that the lock does not pin: a lock must hold the
    whole closure, since the image installs it with --no-deps. Packages not installed here are
    not read (their own dependencies are checked by ``pip check`` in the image build)."""
    missing: list[str] = []
    for name in sorted(pins):
        try:
            declared = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in declared:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**IMAGE_ENV, "extra": ""}):
                continue
            if canonicalize_name(req.name) not in pins:
                missing.append(f"{name} requires {req}")
    return missing


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_the_lock_holds_every_dependency_of_its_pins(name: str) -> None:
    pins = parse((LOCK.parent / name).read_text())
    assert missing_dependencies(pins) == []


def test_a_lock_without_a_dependency_of_a_pin_is_refused() -> None:
    pins = parse(LOCK.read_text())
    assert "multidict" in pins and metadata.requires("aiohttp")
    del pins["multidict"]
    assert any(m.startswith("aiohttp requires multidict") for m in missing_dependencies(pins))
