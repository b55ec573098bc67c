"""``dra-migrate simulate``: which devices the scheduler would allocate to the claims of some manifests.

Reads files, directories or ``-`` (YAML/JSON, multi-document, List objects) as ``convert``
does, runs :func:`translate.alloc.simulate` and prints:

- ``-o json``: ``{"node": NAME, "claims": [{"name", "namespace", "outcome", "reason",
  "allocation"}]}`` (outcome ``allocated``, ``unsatisfiable`` or ``error``; allocation in the
  ``status.allocation`` shape, None unless allocated);
- ``-o yaml`` (default): the claims (resource.k8s.io/v1) with ``status.allocation`` filled in.

Exit codes: 0 every claim allocated, 2 some claim is not, 1 an input error (the message names
the document, the field and the rule; no traceback).
"""

from __future__ import annotations

import gc
import json
from typing import Any, TextIO

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK, InputFileError
from dra_bridge.migrate.manifests import dump, read_sources, why_empty
from dra_bridge.translate.alloc import parse_gates, simulate
from dra_bridge.translate.errors import TranslateError

__all__ = ["EXIT_UNALLOCATED", "run_simulate"]

EXIT_UNALLOCATED = 2
"""Some claim is unsatisfiable or fails with an allocator error."""


def _objects(sources: list[str], stdin: TextIO) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for source in sources:
        found = list(read_sources([source], stdin))
        if not found:
            raise InputFileError(f"{source}: no Kubernetes objects ({why_empty(source)})")
        for doc in found:
            if not isinstance(doc.obj, dict) or not isinstance(doc.obj.get("kind"), str):
                raise InputFileError(
                    f"{doc.source}: document {doc.index + 1} is not a Kubernetes object (a mapping with a kind)"
                )
            objects.append(doc.obj)
    return objects


def run_simulate(
    sources: list[str], node: str | None, gates: str | None, output: str, stdin: TextIO, out: TextIO, err: TextIO
) -> int:
    """Run ``simulate``; returns the exit code (0, 2; 1 after writing the error to ``err``)."""
    try:
        features = parse_gates(gates)
        objects = _objects(sources or ["-"], stdin)
        gc.freeze()  # the input lives to the end: full collections need not walk it (speed, issue 12)
        result = simulate(objects, features, node)
    except (InputFileError, TranslateError) as exc:
        err.write(f"dra-migrate: error: {exc}\n")
        return EXIT_ERROR
    if output == "json":
        out.write(json.dumps({"node": result.node, "claims": [c.as_json() for c in result.claims]}, indent=2) + "\n")
    else:
        out.write(dump([c.claim for c in result.claims], "yaml"))
    for claim in result.claims:
        if claim.outcome != "allocated":
            err.write(f"dra-migrate: ResourceClaim {claim.namespace}/{claim.name}: {claim.outcome}: {claim.reason}\n")
    return EXIT_OK if result.all_allocated else EXIT_UNALLOCATED
