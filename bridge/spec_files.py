"""CDI spec files read safely: what both the kubelet plugin's CDI index
(:mod:`bridge.kubeletplugin.cdi_specs`) and a never-legacy node's inventory
(:mod:`bridge.fresh_source`) read from the node's CDI directories, which any process with write
access there can fill: a regular file of at most :data:`MAX_SPEC_BYTES` only (a FIFO is never
opened, a device never read), opened without blocking (:func:`bridge.atomic.read_state`), YAML by
:func:`translate.strict_yaml.load_bounded` (duplicate keys and an alias bomb refused before
anything walks the document). A file that fails is skipped with a reason naming it, never raised.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from dra_bridge.bridge.atomic import read_state
from dra_bridge.bridge.errors import CdiError
from dra_bridge.translate.strict_yaml import load_bounded

MAX_SPEC_BYTES = 4 << 20
"""The largest CDI spec file read (the toolkit writes a few KiB per GPU)."""


def load_spec_file(path: str, st: os.stat_result) -> tuple[Any, str]:
    """(the parsed spec file at ``path``, whose ``os.stat`` is ``st``, "") or (None, why it is
    skipped, naming it): a regular file of at most MAX_SPEC_BYTES only (a FIFO is never opened, a
    device never read), read without blocking, YAML by the strict loader and its value budget (an
    alias bomb refused before anything walks it)."""
    if not stat.S_ISREG(st.st_mode):
        return None, f"{path} is not a regular file (a FIFO, a device, a socket or a directory)"
    if st.st_size > MAX_SPEC_BYTES:
        return None, f"{path} is larger than {MAX_SPEC_BYTES >> 20} MiB"
    try:
        text = read_state(Path(path))  # bounded and non-blocking again: the file may change after the stat
        if text is None:
            return None, f"{path} is gone"
        return (json.loads(text) if path.endswith(".json") else load_bounded(text, path, CdiError)), ""
    except CdiError as exc:  # a YAML alias bomb: refused before anything walks its expansion
        return None, str(exc)
    except OSError as exc:
        return None, f"{path} is unreadable: {exc}"
    except (ValueError, yaml.YAMLError) as exc:
        return None, f"{path} does not parse: {' '.join(str(exc).split())[:200]}"
