"""``dra-bridge inventory --json`` dumps as files: reading them, and which node each one is.

    load_document(path) -> Any                 JSON, else YAML; InputFileError naming the file
    allocatable_response(doc, path) -> doc      InputFileError unless it can be an AllocatableResourcesResponse
    is_inventory_dump(doc) -> bool              a mapping of only that message's fields, with devices
    inventory_node(path) -> str                 the node a dump file is named after
    inventory_flag("NODE=FILE") -> (node, path) ``--inventory``'s value (UsageError otherwise)
    read_dump(path) -> dict                     load_document + allocatable_response
    grouped({node: (path, dump)}) -> {node: [InventoryDevice]}

A dump is the protobuf JSON mapping of the kubelet's PodResources ``AllocatableResourcesResponse``
(``dra-bridge inventory --json``, or ``grpcurl ... GetAllocatableResources``). It does not name
its node: ``dra-migrate report -f`` takes the node from the file's name (``NODE.json``,
``NODE.yaml``, ``NODE.podresources.json``); ``--inventory NODE=FILE`` names it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dra_bridge.migrate.errors import InputFileError, UsageError
from dra_bridge.migrate.input_files import read_text
from dra_bridge.translate.errors import TranslateError
from dra_bridge.translate.inventory.allocatable import InventoryDevice, group_allocatable


def load_document(path: str) -> Any:
    """The file as JSON, else YAML (one document); InputFileError naming the file, line and column."""
    text = read_text(path)
    try:
        try:
            return json.loads(text)
        except ValueError:  # not JSON, or an integer too long to convert: the YAML reader says where
            pass
        try:
            return yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            what = "; ".join(p for p in (exc.context, exc.problem) if p)
            raise InputFileError(f"{path}: neither JSON nor YAML: {where}{one_line(what)}") from exc
        except yaml.YAMLError as exc:
            raise InputFileError(f"{path}: neither JSON nor YAML: {one_line(str(exc))}") from exc
    except RecursionError as exc:
        raise InputFileError(f"{path}: nested too deeply") from exc
    except ValueError as exc:  # an integer too long to convert (Python's own limit on digits)
        raise InputFileError(f"{path}: an integer too long to read") from exc


def one_line(text: str) -> str:
    """``text`` with its whitespace runs as single spaces."""
    return " ".join(text.split())


#: The fields of a PodResources ``AllocatableResourcesResponse`` (JSON and proto names).
RESPONSE_FIELDS = ("devices", "cpuIds", "cpu_ids", "memory")


def allocatable_response(doc: Any, path: str) -> Any:
    """``doc`` when it can be an ``AllocatableResourcesResponse``; InputFileError when it is a
    Kubernetes object or has a field that message lacks (a wrong file must not print an empty
    slice). The bridge's own reading stays lenient: a newer kubelet may add fields."""
    if isinstance(doc, dict):
        if "kind" in doc:
            raise InputFileError(
                f"{path}: a {doc['kind']}, not a PodResources AllocatableResourcesResponse "
                "(dra-bridge inventory or grpcurl ... GetAllocatableResources prints one)"
            )
        unknown = sorted(str(k) for k in doc if k not in RESPONSE_FIELDS)
        if unknown:
            raise InputFileError(
                f"{path}: unknown field {unknown[0]} (an AllocatableResourcesResponse has {', '.join(RESPONSE_FIELDS)})"
            )
    return doc


def is_inventory_dump(doc: Any) -> bool:
    """A mapping without ``kind`` whose fields are all an AllocatableResourcesResponse's, with
    ``devices``."""
    return (
        isinstance(doc, dict) and "kind" not in doc and "devices" in doc and all(str(k) in RESPONSE_FIELDS for k in doc)
    )


def inventory_node(path: str) -> str:
    """The node a dump file is named after: its name without ``.json``/``.yaml``/``.yml`` and
    a ``.podresources`` before that."""
    name = Path(path).name
    for suffix in (".json", ".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".podresources")


def inventory_flag(value: str) -> tuple[str, str]:
    """``NODE=FILE`` as (node, file); UsageError otherwise."""
    node, sep, path = value.partition("=")
    if not sep or not node or not path:
        raise UsageError(f"--inventory {value!r}: expected NODE=FILE (a dra-bridge inventory --json dump)")
    return node, path


def read_dump(path: str) -> Any:
    """The dump in ``path`` (see :func:`allocatable_response`)."""
    doc = allocatable_response(load_document(path), path)
    if not isinstance(doc, dict):
        raise InputFileError(f"{path}: not an AllocatableResourcesResponse (a mapping with devices)")
    return doc


def grouped(dumps: Mapping[str, tuple[str, Any]]) -> dict[str, list[InventoryDevice]]:
    """Each node's dump grouped per device (:func:`translate.inventory.allocatable.group_allocatable`);
    InputFileError naming the file."""
    out = {}
    for node, (path, dump) in dumps.items():
        try:
            out[node] = group_allocatable(dump)
        except TranslateError as exc:
            raise InputFileError(f"{path}: {exc}") from exc
    return out
