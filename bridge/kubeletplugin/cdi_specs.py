"""The node's CDI spec directories: which CDI devices resolve, and our own per-claim specs.

:class:`SpecIndex` answers "does ``vendor/class=name`` resolve?" over every ``.json`` and
``.yaml`` spec (the CDI library reads no other extension, not ``.yml``) in the CDI directories
(the agent's ``--cdi-dir``, default ``/etc/cdi``
then ``/var/run/cdi``: https://github.com/cncf-tags/container-device-interface/blob/main/pkg/cdi/spec-dirs.go).
A file is parsed again only when its (mtime_ns, size) changed, not per call; an unparsable file,
or one that breaks the CDI rules (:func:`translate.cdi_rules.spec_problems`: the runtime refuses
all of it), defines nothing (logged once per version of it). A name defined by two files of one directory is a
conflict the runtime drops (``resolveConflict`` in
https://github.com/cncf-tags/container-device-interface/blob/main/pkg/cdi/cache.go), so it does not
resolve; a later directory overrides an earlier one.

Our own specs (:func:`write_spec`, :func:`remove_spec`, :func:`own_spec_uids`) live in the
dynamic directory (the last one, by default ``/var/run/cdi``), one file per claim named by
:func:`translate.cdi.spec_file_name`, written atomically (:mod:`bridge.atomic`) only after it
passed the CDI rules (docs/design.md D39). Raises CdiError.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dra_bridge.bridge.atomic import remove_durably, write_atomic
from dra_bridge.bridge.errors import CdiError
from dra_bridge.bridge.spec_files import load_spec_file
from dra_bridge.translate.cdi import spec_file_name, spec_file_uid
from dra_bridge.translate.cdi_rules import device_names, spec_problems
from dra_bridge.translate.errors import ClaimError

logger = logging.getLogger(__name__)

CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
"""CDI spec directories in increasing priority (the container runtimes' default)."""
SPEC_EXTENSIONS = (".json", ".yaml")


def spec_names(doc: Any) -> set[str]:
    """The fully-qualified device names a parsed spec defines (``kind=name``); empty when it is
    not a valid spec (:func:`translate.cdi_rules.device_names`)."""
    return device_names(doc)


class SpecIndex:
    """The CDI names defined in ``dirs`` (increasing priority), re-parsing only changed files."""

    def __init__(self, dirs: Sequence[str | Path] = CDI_DIRS) -> None:
        self.dirs = tuple(Path(d) for d in dirs)
        self._files: dict[Path, tuple[tuple[int, int], set[str]]] = {}
        self.parses = 0
        """How many files were parsed so far (tests: a cached index parses nothing new)."""

    def _names(self, path: Path, stamp: tuple[int, int]) -> set[str]:
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        self.parses += 1
        try:
            doc, problem = load_spec_file(str(path), os.stat(path))
        except OSError as exc:
            doc, problem = None, f"{path} is unreadable: {exc.strerror or exc}"
        names = spec_names(doc) if not problem else set()
        if problem:
            logger.warning("CDI spec skipped, it defines nothing: %s", problem)
        elif not names:
            logger.warning("CDI spec %s breaks the CDI rules, it defines nothing: %s", path, spec_problems(doc))
        self._files[path] = (stamp, names)
        return names

    def names(self) -> set[str]:
        """Every name that resolves now (same-directory duplicates dropped)."""
        resolved: set[str] = set()
        seen: set[Path] = set()
        for directory in self.dirs:
            count: dict[str, int] = {}
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if not entry.name.endswith(SPEC_EXTENSIONS) or not entry.is_file():
                    continue
                st = entry.stat()
                path = Path(entry.path)
                seen.add(path)
                for name in self._names(path, (st.st_mtime_ns, st.st_size)):
                    count[name] = count.get(name, 0) + 1
            here = {n for n, c in count.items() if c == 1}
            resolved |= here
            resolved -= {n for n, c in count.items() if c > 1}
        for gone in set(self._files) - seen:
            del self._files[gone]
        return resolved

    def resolves(self, cdi_ids: Sequence[str]) -> dict[str, bool]:
        """Whether each fully-qualified CDI name resolves (one directory scan for all)."""
        names = self.names()
        return {i: i in names for i in cdi_ids}


def _spec_path(directory: Path, uid: str) -> Path:
    """Our spec's path for claim ``uid``, always a file directly in ``directory``. Raises CdiError
    for a UID that is not a plain name (it never reaches the file system)."""
    try:
        return directory / spec_file_name(uid)
    except ClaimError as exc:
        raise CdiError(str(exc)) from None


def write_spec(directory: Path, uid: str, spec: dict[str, Any]) -> Path:
    """Write our spec for claim ``uid`` atomically, once it passed the CDI rules; the path
    written. Raises CdiError (naming every problem)."""
    path = _spec_path(directory, uid)
    problems = spec_problems(spec)
    if problems:
        raise CdiError(f"not writing CDI spec {path}: it breaks the CDI rules: " + "; ".join(problems))
    try:
        write_atomic(path, json.dumps(spec, indent=1, sort_keys=True).encode("utf-8"))
    except OSError as exc:
        raise CdiError(f"cannot write CDI spec {path}: {exc}") from exc
    return path


def remove_spec(directory: Path, uid: str) -> bool:
    """Remove our spec for claim ``uid``; False when there was none. Raises CdiError."""
    path = _spec_path(directory, uid)
    try:
        return remove_durably(path)
    except OSError as exc:
        raise CdiError(f"cannot remove CDI spec {path}: {exc}") from exc


def own_spec_uids(directory: Path) -> set[str]:
    """The claim UIDs of our spec files in ``directory`` (never another writer's files)."""
    try:
        return {uid for n in os.listdir(directory) if (uid := spec_file_uid(n))}
    except OSError:
        return set()
