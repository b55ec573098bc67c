"""``dra-migrate slices``: the ResourceSlices the bridge would publish for a node, offline.

Inputs:
    --podresources FILE   the protobuf JSON mapping of the kubelet's ``AllocatableResourcesResponse``
                          (exactly what ``dra-bridge inventory --json`` prints), JSON or YAML
    --node-labels FILE    optional: the node's labels, a plain ``{key: value}`` map or a whole
                          Node object (``metadata.labels`` is used), JSON or YAML
    --api-version V       ``resource.k8s.io/v1`` (default), ``v1beta2`` or ``v1beta1`` (short forms accepted)
    --catalog FILE        optional user catalog extending the shipped one

Output: the slices as a YAML stream on ``out``; warnings (resources left out, values that break an
API rule) on ``err``. Exit 0 on success, 1 on an unreadable or invalid file (``InputFileError``) or
an unknown API version (``UsageError``), with a message naming the file and the field.
"""

from __future__ import annotations

from typing import Any, TextIO

import yaml

from dra_bridge.kube.logs import escape
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK, InputFileError, MigrateError, UsageError
from dra_bridge.migrate.input_files import read_text
from dra_bridge.migrate.inventory_dumps import allocatable_response, load_document, one_line
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.errors import TranslateError
from dra_bridge.translate.inventory.allocatable import group_allocatable
from dra_bridge.translate.inventory.pool import render_slice
from dra_bridge.translate.inventory.slices import build_slices
from dra_bridge.translate.names import API_VERSIONS, BRIDGE_DRIVER


def _labels(doc: Any, path: str) -> dict[str, str]:
    where = ""
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        nodes = doc["items"]
        if len(nodes) != 1:
            raise InputFileError(f"{path}: items: expected exactly one Node, got {len(nodes)}")
        doc = nodes[0]
    if isinstance(doc, dict) and doc.get("kind") == "Node":
        metadata = doc.get("metadata", {})
        if not isinstance(metadata, dict):
            raise InputFileError(f"{path}: metadata: expected a map, got {_kind(metadata)}")
        doc, where = metadata.get("labels", {}), "metadata.labels"
        doc = {} if doc is None else doc
        if not isinstance(doc, dict):
            raise InputFileError(f"{path}: {where}: expected a map of label strings, got {_kind(doc)}")
        where += "."
    elif not isinstance(doc, dict):
        raise InputFileError(f"{path}: (top level): expected a map of node labels or a Node object, got {_kind(doc)}")
    for key, value in doc.items():
        if not isinstance(key, str):
            raise InputFileError(f"{path}: {where}{key}: a label key must be a string, got {_kind(key)}")
        if not isinstance(value, str):
            raise InputFileError(
                f"{path}: {where}{key}: a label value must be a string, got {_kind(value)} "
                "(quote it: YAML reads 12.10 as the number 12.1)"
            )
    return dict(doc)


def _kind(value: Any) -> str:
    """What a misplaced value is, for messages (no repr: it may be large or multi-line)."""
    return {dict: "a map", list: "a list", str: "a string", type(None): "null"}.get(type(value), type(value).__name__)


def _api_version(value: str) -> str:
    full = value if value.startswith("resource.k8s.io/") else f"resource.k8s.io/{value}"
    if full not in API_VERSIONS:
        raise UsageError(f"--api-version: {value!r} is not one of {', '.join(API_VERSIONS)}")
    return full


def run_slices(
    node: str,
    podresources_path: str,
    node_labels_path: str | None,
    api_version: str,
    catalog_path: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Print the slices for ``node``; see the module docstring. Returns the exit code."""
    try:
        version = _api_version(api_version)
        catalog_text = None
        if catalog_path:
            catalog_text = read_text(catalog_path)
        try:
            catalog = load_catalog(catalog_text, catalog_path or "user catalog")
        except RecursionError as exc:
            raise InputFileError(f"{catalog_path}: nested too deeply") from exc
        dump = allocatable_response(load_document(podresources_path), podresources_path)
        try:
            inventory = group_allocatable(dump)
        except TranslateError as exc:
            raise InputFileError(f"{podresources_path}: {exc}") from exc
        if not inventory:
            err.write(f"warning: {escape(podresources_path)}: no devices: the pool's slice will list none\n")
        labels = _labels(load_document(node_labels_path), node_labels_path) if node_labels_path else {}
        build = build_slices(node, inventory, catalog, labels, driver=catalog.bridge_driver or BRIDGE_DRIVER)
    except (MigrateError, TranslateError) as exc:
        err.write(f"dra-migrate slices: {escape(one_line(str(exc)))}\n")
        return EXIT_ERROR
    for warning in build.warnings:
        err.write(f"warning: {escape(warning)}\n")
    docs = [render_slice(s, version) for s in build.slices]
    out.write(yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True))
    return EXIT_OK
