"""Object, request and device names: validity checks and deterministic derivation.

Rules (Kubernetes apimachinery validation, as used by resource.k8s.io/v1 and core/v1):
    DNS label      ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 63 characters
                   (request names, pod claim names, device names)
    DNS subdomain  dot-separated DNS labels, at most 253 characters
                   (DeviceClass, ResourceClaimTemplate, ResourceSlice names, driver names)

Derived names are stable across runs and Python versions: hashes are SHA-256 of canonical
JSON (sorted keys, no whitespace), encoded in lower-case base32.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Iterable

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_LABEL = 63
MAX_SUBDOMAIN = 253
#: :func:`is_dns_subdomain`'s rule as a JSON Schema pattern (with ``maxLength`` MAX_SUBDOMAIN).
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def is_dns_label(value: str) -> bool:
    """True for a valid DNS label (RFC 1123, at most 63 characters)."""
    return len(value) <= MAX_LABEL and _LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    """True for a valid DNS subdomain (RFC 1123, at most 253 characters)."""
    return 0 < len(value) <= MAX_SUBDOMAIN and all(_LABEL.fullmatch(part) for part in value.split("."))


#: One encoder for every call (``json.dumps`` with options builds a new one each time).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def canonical_json(value: object) -> str:
    """The canonical JSON text of a value: sorted keys, compact separators, UTF-8."""
    return _CANONICAL(value)


#: Hashes remembered (the same templates and records recur pod after pod), of texts up to
#: DIGEST_MEMO_TEXT characters: at most DIGEST_MEMO_SIZE of them, least recently used out.
DIGEST_MEMO_SIZE = 1024
DIGEST_MEMO_TEXT = 4096


def digest(value: object, length: int = 10) -> str:
    """A short stable hash of a JSON-able value: ``length`` lower-case base32 characters."""
    return digest_text(canonical_json(value), length)


def digest_text(text: str, length: int = 10) -> str:
    """:func:`digest` of the value whose canonical JSON is ``text``."""
    return _digest_text(text, length) if len(text) <= DIGEST_MEMO_TEXT else _digest_text.__wrapped__(text, length)


@functools.lru_cache(maxsize=DIGEST_MEMO_SIZE)
def _digest_text(text: str, length: int) -> str:
    """:func:`digest` of a canonical text (pure: remembered by exactly its arguments)."""
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    # base32 writes each 5 bytes as 8 characters on their own: encoding only the blocks the
    # prefix needs gives the same characters as encoding the whole digest, at a fraction.
    blocks = min(-(-length // 8), 7) * 5
    return base64.b32encode(raw[:blocks]).decode("ascii").lower()[:length]


def to_label(text: str, max_len: int = MAX_LABEL) -> str:
    """Squash arbitrary text into a DNS label: lower case, runs of other characters to '-'.

    Too long or empty results keep a prefix and end in a hash of the full text, so two
    different inputs never collapse to the same label by truncation.
    """
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if out and len(out) <= max_len:
        return out
    tail = digest(text, 8)
    keep = max_len - len(tail) - 1
    head = out[:keep].strip("-")
    return f"{head}-{tail}" if head else tail


def unique_labels(wanted: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """Make each wanted label unique (in order), appending ``-2``, ``-3``... on collision.

    Stable: the same input list always yields the same output list.
    """
    used = set(taken)
    out: list[str] = []
    for name in wanted:
        candidate, n = name, 1
        while candidate in used:
            n += 1
            suffix = f"-{n}"
            candidate = name[: MAX_LABEL - len(suffix)].rstrip("-") + suffix
        used.add(candidate)
        out.append(candidate)
    return out


def resource_label(resource_name: str) -> str:
    """A short label for a legacy resource: ``nvidia.com/mig-1g.10gb`` -> ``mig-1g-10gb``,
    ``nvidia.com/gpu`` -> ``gpu``, ``gpu.intel.com/i915`` -> ``i915``."""
    return to_label(resource_name.rsplit("/", 1)[-1], 30)
