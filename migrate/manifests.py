"""Reading and writing manifests: multi-document YAML/JSON files, directories, stdin; and the
translation catalog a command uses (:func:`read_catalog`).

Errors raise :class:`migrate.errors.InputFileError` naming the file (and line, for YAML syntax errors).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from dra_bridge.migrate.errors import InputFileError
from dra_bridge.migrate.input_files import not_utf8, read_text
from dra_bridge.translate.catalog import Catalog, Target, load_catalog
from dra_bridge.translate.strict_yaml import StrictLoader


def read_catalog(path: str | None, target: Target | None = None) -> Catalog:
    """The built-in catalog (``path`` None) or the catalog file at ``path`` (``--catalog``),
    aimed at ``target`` (``--target`` bridge|vendor) when given. InputFileError when the file
    cannot be read, is not a regular file or not UTF-8; the catalog's own errors (CatalogError)
    name the field."""
    catalog = load_catalog() if path is None else load_catalog(read_text(path), path)
    return catalog.with_target(target) if target else catalog


@dataclass(frozen=True)
class Document:
    """One object read from ``source`` (a path or ``-``), ``index`` = its position there."""

    source: str
    index: int
    obj: Any


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _files(source: str) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    if not path.exists():
        raise InputFileError(f"{source}: no such file or directory")
    return [path]  # read_text refuses a FIFO or a device


def _json_stream(text: str) -> list[Any] | None:
    """Concatenated JSON objects (``kubectl get -o json`` in a loop), or None when the text is
    not such a stream."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
        out.append(value)


def _parse(text: str, name: str) -> list[Any]:
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        stream = _json_stream(text.lstrip("\ufeff"))
        if stream is not None:
            return [d for d in stream if d is not None]
    try:
        return [d for d in yaml.load_all(text, Loader=StrictLoader) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise InputFileError(f"{where}: YAML error: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise InputFileError(f"{name}: YAML error: {exc}") from exc


#: Values an input may expand to beyond one per byte of its text. YAML aliases let a small file
#: stand for an exponentially large object ("billion laughs"); a Kubernetes object has a few
#: thousand values at most, and each value of a manifest without aliases takes a byte or more.
MAX_VALUES = 1_000_000


class _Budget:
    """The values one :func:`read_sources` call may still read: MAX_VALUES plus a value per byte
    of text read, shared by every document of every file, so that many documents just under a
    per-document bound cannot add up (work stays linear in the input)."""

    def __init__(self) -> None:
        self.left = MAX_VALUES

    def check(self, obj: Any, name: str, index: int) -> None:
        """Count ``obj``'s values (aliases at every use); InputFileError once the budget is spent.
        The walk stops there, so all walks together cost at most the budget."""
        stack = [obj]
        while stack:
            value = stack.pop()
            self.left -= 1
            if self.left < 0:
                raise InputFileError(
                    f"{name}: expands to more than {MAX_VALUES:,} values beyond its size, at document "
                    f"{index + 1} (nested YAML aliases?)"
                )
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)


def _flatten(doc: Any, name: str, position: int) -> Iterator[Any]:
    """The objects of a document: ``List`` kinds (also nested) give their items."""
    is_list = isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc
    if not is_list:
        yield doc
        return
    items = doc.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise InputFileError(f"{name}: document {position + 1}: {doc.get('kind')}.items must be a list")
    for item in items:
        yield from _flatten(item, name, position)


def read_sources(sources: list[str], stdin: TextIO | None = None) -> Iterator[Document]:
    """Every object of every source, ``List`` objects flattened into their items; ``-`` reads
    ``stdin`` (default: the process's)."""
    budget = _Budget()
    for source in sources:
        if source == "-":
            try:
                named = [("-", (stdin or sys.stdin).read())]
            except UnicodeDecodeError as exc:
                raise InputFileError(f"-: {not_utf8(exc)}") from exc
        else:
            named = [(str(path), read_text(str(path))) for path in _files(source)]
        for name, text in named:
            index = 0
            budget.left += len(text)
            for position, doc in enumerate(_parse(text, name)):
                budget.check(doc, name, position)
                for obj in _flatten(doc, name, position):
                    yield Document(name, index, obj)
                    index += 1


def why_empty(source: str) -> str:
    """Why ``source`` (a ``-f`` value that gave no object) is empty, in a few words."""
    if source == "-":
        return "standard input is empty"
    path = Path(source)
    if path.is_dir():
        if not _files(source):
            return "a directory without .yaml, .yml or .json files"
        return "a directory whose manifest files hold no documents"
    return "an empty file, or only comments and ---"


def dump(objects: list[Any], output: str) -> str:
    """Objects as multi-document YAML, or as one ``v1 List`` in JSON."""
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100000)
