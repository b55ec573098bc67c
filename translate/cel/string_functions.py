"""The Kubernetes CEL string functions (cel-go ``ext.Strings`` v2) that cel-python lacks.

As enabled by k8s.io/apiserver ``pkg/cel/environment/base.go`` (registered in
:data:`STRING_FUNCTIONS`; all receiver style, e.g. ``name.lowerAscii().replace(" ", "-")``):
``charAt``, ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``,
``join`` (on a list of strings), plus :func:`index_of` / :func:`last_index_of` behind
``indexOf`` / ``lastIndexOf`` (which the library shares with lists). Indexes count Unicode
code points; an index out of range is an error; ``split``/``replace`` limits follow Go's
``strings.SplitN`` / ``strings.Replace``. cel-python itself already provides ``contains``,
``startsWith``, ``endsWith``, ``matches`` and ``size``.
"""

from __future__ import annotations

from typing import Any, Final

from celpy import celtypes

from dra_bridge.translate.cel.overloads import (
    CelFunction,
    LibraryFailure,
    cel_function,
    int_arg,
    overload_error,
    string_arg,
)

__all__ = ["STRING_FUNCTIONS", "index_of", "last_index_of"]


def _char_at(text: str, index: int) -> celtypes.StringType:
    if not 0 <= index <= len(text):
        raise LibraryFailure(f"index out of range: {index}")
    return celtypes.StringType(text[index : index + 1])


def index_of(text: str, needle: str, offset: int | None) -> int:
    start = 0 if offset is None else offset
    if not 0 <= start <= len(text):
        raise LibraryFailure(f"index out of range: {start}")
    return text.find(needle, start)


def last_index_of(text: str, needle: str, offset: int | None) -> int:
    end = len(text) if offset is None else offset
    if not 0 <= end <= len(text):
        raise LibraryFailure(f"index out of range: {end}")
    return text.rfind(needle, 0, end + len(needle))


def _ascii_case(text: str, upper: bool) -> celtypes.StringType:
    source, target = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    table = str.maketrans(source, target) if upper else str.maketrans(target, source)
    return celtypes.StringType(text.translate(table))


def _split(text: str, separator: str, limit: int) -> celtypes.ListType:
    """Go ``strings.SplitN``: 0 gives no pieces, a negative limit all of them."""
    if limit == 0:
        return celtypes.ListType([])
    if separator == "":
        pieces = list(text)
        if 0 < limit < len(pieces):
            pieces = [*pieces[: limit - 1], "".join(pieces[limit - 1 :])]
    else:
        pieces = text.split(separator, limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(piece) for piece in pieces])


def _replace(text: str, old: str, new: str, limit: int) -> celtypes.StringType:
    """Go ``strings.Replace``: a negative limit replaces every occurrence."""
    return celtypes.StringType(text.replace(old, new, limit if limit >= 0 else -1))


def _substring(text: str, start: int, end: int | None) -> celtypes.StringType:
    stop = len(text) if end is None else end
    if not 0 <= start <= len(text) or not 0 <= stop <= len(text):
        raise LibraryFailure(f"index out of range: {start if not 0 <= start <= len(text) else stop}")
    if start > stop:
        raise LibraryFailure(f"invalid substring range. start: {start}, end: {stop}")
    return celtypes.StringType(text[start:stop])


def _is_go_space(char: str) -> bool:
    """Go ``unicode.IsSpace`` (Python's isspace also counts U+001C..U+001F)."""
    return char.isspace() and char not in "\x1c\x1d\x1e\x1f"


def _trim(text: str) -> celtypes.StringType:
    start, end = 0, len(text)
    while start < end and _is_go_space(text[start]):
        start += 1
    while end > start and _is_go_space(text[end - 1]):
        end -= 1
    return celtypes.StringType(text[start:end])


@cel_function("charAt")
def _fn_char_at(*args: Any) -> Any:
    if len(args) != 2:
        raise overload_error("charAt", args)
    return _char_at(string_arg(args[0], "charAt", args), int_arg(args[1], "charAt", args))


@cel_function("lowerAscii")
def _fn_lower_ascii(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("lowerAscii", args)
    return _ascii_case(string_arg(args[0], "lowerAscii", args), upper=False)


@cel_function("upperAscii")
def _fn_upper_ascii(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("upperAscii", args)
    return _ascii_case(string_arg(args[0], "upperAscii", args), upper=True)


@cel_function("replace")
def _fn_replace(*args: Any) -> Any:
    if len(args) not in (3, 4):
        raise overload_error("replace", args)
    text, old, new = (string_arg(arg, "replace", args) for arg in args[:3])
    limit = int_arg(args[3], "replace", args) if len(args) == 4 else -1
    return _replace(text, old, new, limit)


@cel_function("split")
def _fn_split(*args: Any) -> Any:
    if len(args) not in (2, 3):
        raise overload_error("split", args)
    text, separator = (string_arg(arg, "split", args) for arg in args[:2])
    limit = int_arg(args[2], "split", args) if len(args) == 3 else -1
    return _split(text, separator, limit)


@cel_function("substring")
def _fn_substring(*args: Any) -> Any:
    if len(args) not in (2, 3):
        raise overload_error("substring", args)
    text = string_arg(args[0], "substring", args)
    end = int_arg(args[2], "substring", args) if len(args) == 3 else None
    return _substring(text, int_arg(args[1], "substring", args), end)


@cel_function("trim")
def _fn_trim(*args: Any) -> Any:
    if len(args) != 1:
        raise overload_error("trim", args)
    return _trim(string_arg(args[0], "trim", args))


@cel_function("join")
def _fn_join(*args: Any) -> Any:
    if len(args) not in (1, 2) or not isinstance(args[0], celtypes.ListType):
        raise overload_error("join", args)
    separator = string_arg(args[1], "join", args) if len(args) == 2 else ""
    if not all(isinstance(item, str) for item in args[0]):
        raise overload_error("join", args)
    return celtypes.StringType(separator.join(str(item) for item in args[0]))


STRING_FUNCTIONS: Final[dict[str, CelFunction]] = {
    "charAt": _fn_char_at,
    "lowerAscii": _fn_lower_ascii,
    "upperAscii": _fn_upper_ascii,
    "replace": _fn_replace,
    "split": _fn_split,
    "substring": _fn_substring,
    "trim": _fn_trim,
    "join": _fn_join,
}
"""String functions by name (``indexOf``/``lastIndexOf`` live in translate.cel.library)."""
