"""Reading and writing manifests: multi-document YAML/JSON files, directories, stdin; and the
translation catalog a command uses (:func:`read_catalog`).

Errors raise :class:`migrate.errors.InputFileError` naming the file (and line, for YAML syntax errors).
"""

from __future__ import annotations

import codecs
import io
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

import yaml

from dra_bridge.migrate.errors import InputFileError
from dra_bridge.migrate.input_files import manifest_files, not_utf8, open_regular, read_text
from dra_bridge.translate.catalog import Catalog, Target, load_catalog
from dra_bridge.translate.fast_yaml import FastDumper
from dra_bridge.translate.strict_yaml import MAX_VALUES as MAX_VALUES  # re-exported: the documented bound
from dra_bridge.translate.strict_yaml import StrictLoader, expansion_refused, value_budget, value_count


def read_catalog(path: str | None, target: Target | None = None) -> Catalog:
    """The built-in catalog (``path`` None) or the catalog file at ``path`` (``--catalog``),
    aimed at ``target`` (``--target`` bridge|vendor) when given. InputFileError when the file
    cannot be read, is not a regular file or not UTF-8; the catalog's own errors (CatalogError)
    name the field."""
    catalog = load_catalog() if path is None else load_catalog(read_text(path), path)
    return catalog.with_target(target) if target else catalog


@dataclass(frozen=True)
class Document:
    """One object read from ``source`` (a path or ``-``), ``index`` = its position there;
    ``aliased``: its document reaches a list or mapping more than once (YAML aliases)."""

    source: str
    index: int
    obj: Any
    aliased: bool = False


_Dumper = FastDumper  # yaml.CSafeDumper's text, plain values represented faster


def _files(source: str) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        return manifest_files(path)
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
        except ValueError:  # also an integer too long to convert: the YAML reader says where
            return None
        out.append(value)


_CHUNK = 1 << 16
#: The most standard input a command copies (to a temporary file, to read it more than once):
#: beyond it the copy would fill the disk (``-f - < /dev/zero``); a larger input is a file.
MAX_STDIN_BYTES = 1 << 30


class _Utf8:
    """A binary stream read as UTF-8 text in chunks (what the YAML parser pulls from), with the
    error naming the byte offset in the whole stream; ``head`` is the text read ahead first."""

    def __init__(self, raw: BinaryIO, name: str) -> None:
        self.raw, self.name, self.offset = raw, name, 0
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.head = ""

    def read(self, size: int = -1) -> str:
        if self.head:
            text, self.head = self.head, ""
            return text
        return self._decoded(size)

    def _decoded(self, size: int | None) -> str:
        """The next text from the stream ("" at its end), past ``head``."""
        while True:
            data = self.raw.read(_CHUNK if size is None or size < 0 else max(size, _CHUNK))
            try:
                text = self.decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                raise InputFileError(f"{self.name}: {not_utf8(exc, self.offset)}") from exc
            self.offset += len(data)
            if text or not data:
                return text

    def peek(self) -> str:
        """The first character that is not white space or a byte-order mark ("" at the end)."""
        while True:
            chunk = self._decoded(_CHUNK)  # not read(): it would hand back the head again
            self.head += chunk
            stripped = self.head.lstrip("\ufeff \t\r\n")
            if stripped or not chunk:
                return stripped[:1]


def _parse(raw: BinaryIO, name: str) -> Iterator[Any]:
    """The documents of a stream, one at a time (YAML); concatenated JSON objects are read whole."""
    return (doc for doc, _ in _parse_counted(raw, name))


def _parse_counted(raw: BinaryIO, name: str) -> Iterator[tuple[Any, int | None]]:
    """:func:`_parse`, each document with its values where the loader counted them while it built
    the document (no list or mapping reached twice: ``FastConstructor.plain_values``), else None."""
    reader = _Utf8(raw, name)
    if reader.peek() == "{":
        text = "".join(iter(lambda: reader.read(_CHUNK), ""))  # the text peeked at comes first
        stream = _json_stream(text.lstrip("\ufeff"))
        if stream is not None:
            yield from ((d, None) for d in stream if d is not None)
            return
        reader = _Utf8(io.BytesIO(text.encode()), name)
    loader = StrictLoader(reader)  # yaml.load_all's loop, with the loader at hand
    try:
        while loader.check_data():
            doc = loader.get_data()
            if doc is not None:
                yield doc, loader.plain_values
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise InputFileError(f"{where}: YAML error: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise InputFileError(f"{name}: YAML error: {exc}") from exc
    finally:
        loader.dispose()


#: Values an input may expand to beyond one per byte of its text. YAML aliases let a small file
#: stand for an exponentially large object ("billion laughs"); a Kubernetes object has a few
#: thousand values at most, and each value of a manifest without aliases takes a byte or more.
class _Budget:
    """The values one :func:`read_sources` call may still read: MAX_VALUES plus a value per byte
    of text read, shared by every document of every file, so that many documents just under a
    per-document bound cannot add up (work stays linear in the input)."""

    def __init__(self) -> None:
        self.left = value_budget(0)

    def check(self, obj: Any, name: str, index: int, counted: int | None = None) -> bool:
        """Count ``obj``'s values (aliases at every use, each walked once; ``counted``: the loader's
        count of a document that reaches nothing twice, no walk needed); InputFileError once the
        budget is spent. Whether a list or mapping in ``obj`` is reached more than once."""
        if counted is None:
            count, shared = value_count(obj, self.left)
        else:
            count, shared = (counted if counted <= self.left else None), False
        if count is None:
            raise InputFileError(expansion_refused(name, f", at document {index + 1}"))
        self.left -= count
        return shared


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


def _stdin_bytes(stdin: TextIO) -> BinaryIO:
    """Standard input as bytes: its binary buffer, or the text re-encoded (a StringIO in tests)."""
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        return cast(BinaryIO, buffer)
    try:
        return io.BytesIO(stdin.read().encode("utf-8", "surrogateescape"))
    except UnicodeDecodeError as exc:
        raise InputFileError(f"-: {not_utf8(exc)}") from exc


def _documents(name: str, raw: BinaryIO, budget: _Budget) -> Iterator[Document]:
    index = 0
    counted = _Counted(raw)
    for position, (doc, values) in enumerate(_parse_counted(cast(BinaryIO, counted), name)):
        budget.left += counted.take()  # a value per byte read so far
        aliased = budget.check(doc, name, position, values)
        for obj in _flatten(doc, name, position):
            yield Document(name, index, obj, aliased)
            index += 1


class _Counted:
    """A binary stream that counts the bytes read from it (the alias budget grows with them)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self._count = raw, 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self._count += len(data)
        return data

    def take(self) -> int:
        """The bytes read since the last call."""
        count, self._count = self._count, 0
        return count


def _open(path: Path) -> BinaryIO:
    return open_regular(str(path), dash=True)  # a FIFO or a device is refused before any read


def read_sources(sources: list[str], stdin: TextIO | None = None) -> Iterator[Document]:
    """Every object of every source, ``List`` objects flattened into their items; ``-`` reads
    ``stdin`` (default: the process's). Lazily: a document is parsed when the one before it
    was taken (a ``List`` is one document: its items come one by one once it is parsed)."""
    budget = _Budget()
    for source in sources:
        if source == "-":
            yield from _documents("-", _stdin_bytes(stdin or sys.stdin), budget)
            continue
        for path in _files(source):
            with _open(path) as raw:
                try:
                    yield from _documents(str(path), raw, budget)
                except OSError as exc:
                    raise InputFileError(f"{path}: cannot read: {exc}") from exc


def _copy_bounded(src: BinaryIO, dst: BinaryIO) -> None:
    """``src`` into ``dst``; InputFileError once more than MAX_STDIN_BYTES came (nothing is
    parsed or written by then: the command fails before its first document)."""
    copied = 0
    while chunk := src.read(_CHUNK):
        copied += len(chunk)
        if copied > MAX_STDIN_BYTES:
            raise InputFileError(
                f"-: standard input is over {MAX_STDIN_BYTES} bytes, the most that is copied to read it: "
                "give the manifests as a file or a directory (-f PATH)"
            )
        dst.write(chunk)


class Sources:
    """The ``-f`` sources of a command, to be read more than once: standard input is copied to
    a temporary file as it is first read (a context manager: the copy is removed on exit)."""

    def __init__(self, sources: list[str], stdin: TextIO | None = None) -> None:
        self.sources, self.stdin = sources, stdin
        self._copy: BinaryIO | None = None

    def __enter__(self) -> Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._copy is not None:
            self._copy.close()

    def _stdin(self) -> BinaryIO:
        if self._copy is None:
            self._copy = cast(BinaryIO, tempfile.TemporaryFile())  # noqa: SIM115 (closed in __exit__)
            _copy_bounded(_stdin_bytes(self.stdin or sys.stdin), self._copy)
        self._copy.seek(0)
        return self._copy

    def documents(self, source: str) -> Iterator[Document]:
        """:func:`read_sources` of one source."""
        if source != "-":
            yield from read_sources([source])
            return
        yield from _documents("-", self._stdin(), _Budget())

    def why_empty(self, source: str) -> str:
        """:func:`why_empty`, standard input included (its copy is read again)."""
        if source != "-" or self._copy is None:
            return why_empty(source)
        return _no_objects(self._stdin(), "-", "standard input is empty")

    def mention(self, word: str) -> bool:
        """Whether ``word`` (ASCII) appears anywhere in the sources' bytes: a scan, no parse."""
        needle = word.encode()
        for source in self.sources:
            if source == "-":
                if _holds(self._stdin(), needle):
                    return True
                continue
            for path in _files(source):
                with _open(path) as raw:
                    if _holds(raw, needle):
                        return True
        return False


def _holds(raw: BinaryIO, needle: bytes) -> bool:
    """Whether ``needle`` appears in what is left of ``raw``, read a chunk at a time."""
    tail = b""
    while chunk := raw.read(_CHUNK):
        if needle in tail + chunk:
            return True
        tail = chunk[-len(needle) :]
    return False


def why_empty(source: str) -> str:
    """Why ``source`` (a ``-f`` value that gave no object) is empty, in a few words (standard
    input, already read: as if it held no document; :meth:`Sources.why_empty` looks)."""
    if source == "-":
        return "standard input is empty"
    path = Path(source)
    if path.is_dir():
        if not _files(source):
            return "a directory without .yaml, .yml or .json files"
        return "a directory whose manifest files hold no objects"
    with _open(path) as raw:
        return _no_objects(raw, source, "an empty file, or only comments and ---")


def _no_objects(raw: BinaryIO, name: str, nothing: str) -> str:
    """Why a stream that gave no object holds none: ``nothing`` without a document, else the
    ``List`` it holds (its items null or empty; a List of such Lists: the first inner one)."""
    doc = next(_parse(raw, name), None)
    while isinstance(doc, dict) and isinstance(doc.get("items"), list) and doc["items"]:
        doc = doc["items"][0]
    if not isinstance(doc, dict):
        return nothing
    return f"a {doc.get('kind')} whose items are {'null' if doc.get('items') is None else 'empty'}"


def dump(objects: list[Any], output: str) -> str:
    """Objects as multi-document YAML, or as one ``v1 List`` in JSON."""
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100000)


class Writer:
    """:func:`dump`, one object at a time to ``out`` (the same text: one YAML emitter for the
    stream, or the JSON ``List`` written item by item); :meth:`close` ends the stream."""

    def __init__(self, out: TextIO, output: str) -> None:
        self.out, self.json, self.count = out, output == "json", 0
        self._yaml: Any = None
        if not self.json:
            self._yaml = _Dumper(out, sort_keys=False, default_flow_style=False, width=100000)
            self._yaml.open()

    def write(self, obj: Any) -> None:
        if self.json:
            item = json.dumps(obj, indent=2).replace("\n", "\n    ")
            self.out.write('{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [\n' if not self.count else ",\n")
            self.out.write("    " + item)
        else:
            self._yaml.represent(obj)
        self.count += 1

    def close(self) -> None:
        if self.json:
            self.out.write(
                "\n  ]\n}\n" if self.count else '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": []\n}\n'
            )
        else:
            self._yaml.close()
            self._yaml.dispose()
