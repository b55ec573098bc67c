"""YAML text as Kubernetes tools read it (pure: text in, values out).

:class:`StrictLoader` is libyaml's safe loader (the pure-Python one where libyaml is
missing) that refuses duplicate mapping keys, as kubectl does: a silent "last one wins"
would change a pod or a policy. Timestamps stay strings (Kubernetes objects carry RFC 3339
text), also when tagged ``!!timestamp``, and a ``!!binary`` value stays its base64 text (the
JSON form of Kubernetes' byte fields): every value loaded is one JSON can write. Used by
``dra-migrate`` for manifests and by ``dra-webhook`` for its policy and catalog files.

:func:`too_deep` finds the first value nested deeper than a limit (the configuration files use
:data:`MAX_CONFIG_DEPTH`), walking iteratively: a value as deep as the parser allows cannot
exhaust the stack.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Nesting allowed in a configuration file (policy, catalog): theirs is at most 6 levels deep.
MAX_CONFIG_DEPTH = 20

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available


class StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe loader refusing duplicate mapping keys (ConstructorError naming the key and line)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: let the base class report it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


StrictLoader.yaml_implicit_resolvers = {
    k: [(tag, regexp) for tag, regexp in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _scalar_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _base64_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return "".join(str(loader.construct_scalar(node)).split())


StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _scalar_text)
StrictLoader.add_constructor("tag:yaml.org,2002:binary", _base64_text)


def too_deep(value: Any, limit: int = MAX_CONFIG_DEPTH) -> str | None:
    """The key path (``rules[0].match``) of the first value nested more than ``limit`` mappings
    or lists deep in ``value``, or None when it is not."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth >= limit:
            return path or "(top level)"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            step = f"[{key}]" if isinstance(node, list) else (f".{key}" if path else str(key))
            stack.append((child, path + step, depth + 1))
    return None
