"""Objects that differ only in their name, converted once: ``convert`` of many copies of one
manifest (the pods of a generated input, the Jobs of one template) converts the first and, for
each other, renames a copy of that output.

What the conversion reads of an object (the pod template with its labels
and annotations, the namespace and its quotas, the owner kind, the scheduler; the policy's
rules match on these) is all in the key: the object's text less its ``metadata.name``, as
``repr`` prints it (exact for what YAML and JSON decode to: mappings in their key order, lists,
strings, numbers, booleans and None, each printed with its type). Its name is not read: no
output, template or finding carries it. The output is stored only where it carries the name
at the same place as the input. A document that reaches a list or mapping twice (YAML aliases)
is converted afresh: its output's anchors follow its own text. Bounded: the SIZE outputs most
recently used.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.workloads import Converted

#: A converted object and its findings as the command shows them.
Result = tuple[Converted, tuple[Finding, ...]]

SIZE = 64


def _key(obj: Any) -> str | None:
    """``obj``'s text less its name, or None where it has none (or a name that is not text)."""
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is not dict or type(meta.get("name")) is not str:
        return None
    try:
        return repr({**obj, "metadata": {**meta, "name": ""}})
    except ValueError:  # an integer too long to print: no key
        return None


def _name(obj: Any) -> object:
    meta = obj.get("metadata") if type(obj) is dict else None
    return meta.get("name") if type(meta) is dict else None


class NameMemo:
    """The results of the objects converted last, by their text less their name."""

    def __init__(self, size: int = SIZE) -> None:
        self.size, self.hits = size, 0
        self._results: OrderedDict[str, Result] = OrderedDict()

    def result(self, obj: Any, aliased: bool, work: Callable[[], Result]) -> Result:
        """``work()``, the result for ``obj``; or the stored result for an object that differs
        only in its name, renamed ``obj``'s."""
        key = None if aliased or not self.size else _key(obj)
        if key is None:
            return work()
        found = self._results.get(key)
        if found is not None:
            self._results.move_to_end(key)
            self.hits += 1
            converted, findings = found
            out = dict(converted.obj)
            out["metadata"] = {**out["metadata"], "name": obj["metadata"]["name"]}
            return Converted(out, converted.templates, converted.findings), findings
        result = work()
        if _name(result[0].obj) == obj["metadata"]["name"]:
            self._results[key] = result
            if len(self._results) > self.size:
                self._results.popitem(last=False)
        return result
