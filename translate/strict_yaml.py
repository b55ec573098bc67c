"""YAML text as Kubernetes tools read it (pure: text in, values out).

:class:`StrictLoader` is libyaml's safe loader (the pure-Python one where libyaml is
missing) that refuses duplicate mapping keys, as kubectl does: a silent "last one wins"
would change a pod or a policy. Timestamps stay strings (Kubernetes objects carry RFC 3339
text). Used by ``dra-migrate`` for manifests and by ``dra-webhook`` for its policy file.
"""

from __future__ import annotations

from typing import Any

import yaml

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
