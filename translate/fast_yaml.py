"""PyYAML's safe loading and dumping with the per-node Python work done inline for plain values
(pure: nodes in, values out; values in, nodes out). The results are PyYAML's own, to the value,
the byte and the error: anything but plain mappings, lists and scalars goes the stock way.

libyaml parses and emits in C, but calls back into Python for each node: the resolver (which
tag a plain scalar has), and the constructor or representer. Those callbacks are most of the
cost of a load or a dump, so each is made cheaper here:

- :class:`ScalarTags` is the resolver's answer for a plain scalar (a pure function of its text,
  for a fixed table of implicit resolvers), memoized (a bounded memo of short values: memory
  stays flat over a stream). :func:`resolve_method` makes of it a ``resolve`` for a loader or dumper class.
- :class:`FastConstructor` builds a document's plain mappings, lists and scalars directly from
  its nodes (the same node twice, a YAML alias, gives the same object, as the stock constructor
  does). A node it does not handle (another tag, a merge key ``<<``, a key that is not a scalar,
  a duplicate key, a scalar constructor's error) sends the whole document to the stock
  constructor, which gives the value or raises the error it always did.
- :class:`FastDumper` is ``yaml.CSafeDumper`` whose ``represent_data`` builds the nodes of exact
  ``str``, ``int``, ``bool``, ``None``, ``dict`` and ``list`` values directly; a dict or list met
  twice in a document is the same node, as the stock representer makes it (the emitter writes
  an anchor and an alias); any other value is the stock representer's.
"""

from __future__ import annotations

import operator
from typing import Any, ClassVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from dra_bridge.translate.errors import TranslateError

STR_TAG = "tag:yaml.org,2002:str"
SEQ_TAG = "tag:yaml.org,2002:seq"
MAP_TAG = "tag:yaml.org,2002:map"
_INT_TAG, _BOOL_TAG, _NULL_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"

#: Scalar tags whose constructor is a plain function of the node (no generator, no state).
_SCALAR_TAGS = (
    _INT_TAG,
    _BOOL_TAG,
    _NULL_TAG,
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:binary",
)

#: Plain scalars whose tag is remembered at most (then the memo starts afresh), and the longest
#: remembered (a long value is not kept alive by the memo: memory stays that of a document).
MEMO_SIZE, MEMO_LENGTH = 4096, 100

Resolvers = dict[Any, list[tuple[str, Any]]]


class ScalarTags:
    """The tag PyYAML's ``BaseResolver.resolve`` gives a plain scalar of ``value``'s text under
    ``table`` (a class's ``yaml_implicit_resolvers``, read once: the table must not change
    after), without path resolvers: the first implicit resolver for its first character (or
    a wildcard one) whose pattern matches, else ``str``. A call finds it and remembers it in
    :attr:`memo` (:func:`resolve_method` looks there first)."""

    def __init__(self, table: Resolvers) -> None:
        wildcard = list(table.get(None, []))
        self.by_first = {key: [*rules, *wildcard] for key, rules in table.items() if key is not None}
        self.wildcard = wildcard
        self.memo: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        rules = self.by_first.get(value[0] if value else "", self.wildcard)
        tag = STR_TAG
        for rule_tag, pattern in rules:
            if pattern.match(value):
                tag = rule_tag
                break
        if len(value) <= MEMO_LENGTH:
            memo = self.memo
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[value] = tag
        return tag


def resolve_method(cls: type[Any]) -> Any:
    """A ``resolve`` method for ``cls`` (a loader or dumper class without path resolvers) that
    answers as PyYAML's does from ``cls``'s implicit resolvers as they are now."""
    if cls.yaml_path_resolvers:
        raise ValueError(f"{cls.__name__} has path resolvers: PyYAML's resolve is needed")
    tags = ScalarTags(cls.yaml_implicit_resolvers)
    remembered = tags.memo.get  # the memo is cleared, never replaced

    def resolve(self: Any, kind: type[Node], value: Any, implicit: Any) -> str | None:
        if kind is ScalarNode:
            return (remembered(value) or tags(value)) if implicit[0] else STR_TAG
        if kind is SequenceNode:
            return SEQ_TAG
        return MAP_TAG if kind is MappingNode else None

    return resolve


def install_resolver(cls: type[Any]) -> None:
    """Give ``cls`` (a loader or dumper class without path resolvers, its implicit resolvers
    final) :func:`resolve_method`'s ``resolve``, and path tracking that does nothing: libyaml
    calls ``descend_resolver`` and ``ascend_resolver`` for every node, and without path
    resolvers PyYAML's do nothing either (here C functions that ignore their arguments: no
    Python frame per node)."""
    cls.resolve = resolve_method(cls)
    cls.descend_resolver = staticmethod(operator.is_)  # (parent, index) -> ignored
    cls.ascend_resolver = staticmethod(tuple)  # () -> ignored


class _NotPlain(TranslateError):
    """A node the fast constructor leaves to the stock one (caught here, never raised out)."""


class FastConstructor:
    """A mixin before a PyYAML constructor class (``class L(FastConstructor, CSafeLoader)``):
    :meth:`construct_document` as the stock one computes it, plain nodes built directly."""

    yaml_constructors: ClassVar[dict[Any, Any]]

    #: The values of the document constructed last (every mapping value and list item, and the
    #: document itself), where it was built here and reaches no list or mapping twice: what
    #: ``strict_yaml.value_count`` would count, without a walk of its own. None otherwise.
    plain_values: int | None = None

    def construct_document(self, node: Node) -> Any:
        self.plain_values = None
        try:
            value, count = self._plain_document(node)
        except Exception:  # anything unusual: the stock constructor decides, error included
            return super().construct_document(node)  # type: ignore[misc]
        self.plain_values = count
        return value

    def _plain_document(self, root: Node) -> tuple[Any, int | None]:
        built: dict[Node, Any] = {}  # list and mapping nodes: an alias is the same object
        reached_twice = False
        count = 1
        scalars = {tag: self.yaml_constructors[tag] for tag in _SCALAR_TAGS}

        def scalar(node: Node) -> Any:
            tag = node.tag
            return node.value if tag == STR_TAG else scalars[tag](self, node)

        def build(node: Node) -> Any:
            nonlocal reached_twice, count
            kind = node.__class__
            if kind is ScalarNode:
                return scalar(node)
            data = built.get(node)
            if data is not None:
                reached_twice = True
                return data
            count += len(node.value)
            if kind is MappingNode and node.tag == MAP_TAG:
                mapping: dict[Any, Any] = {}
                built[node] = mapping
                for key_node, value_node in node.value:
                    if key_node.__class__ is not ScalarNode:
                        raise _NotPlain
                    key = scalar(key_node)
                    if value_node.__class__ is ScalarNode and value_node.tag == STR_TAG:
                        mapping[key] = value_node.value
                    else:
                        mapping[key] = build(value_node)
                if len(mapping) != len(node.value):
                    raise _NotPlain  # a duplicate key: the stock constructor names it
                return mapping
            if kind is SequenceNode and node.tag == SEQ_TAG:
                items: list[Any] = []
                built[node] = items
                items += [
                    item.value if item.__class__ is ScalarNode and item.tag == STR_TAG else build(item)
                    for item in node.value
                ]
                return items
            raise _NotPlain

        value = build(root)
        return value, (None if reached_twice else count)


_CSafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when available


class FastDumper(_CSafeDumper):  # type: ignore[misc,valid-type]
    """``yaml.CSafeDumper`` building the nodes of plain values directly (the same nodes, so the
    same text), for ``default_style`` None, ``default_flow_style`` not None and unsorted keys;
    with other settings it is the stock dumper."""

    def __init__(self, stream: Any, **kwargs: Any) -> None:
        super().__init__(stream, **kwargs)
        if self.default_style is not None or self.default_flow_style is None or self.sort_keys:
            self.represent_data = super().represent_data  # type: ignore[method-assign]

    def represent_data(self, data: Any) -> Node:
        kind = type(data)  # the stock representer's dispatch: type(data), not what __class__ claims
        if kind is str:
            return ScalarNode(STR_TAG, data)
        if kind is dict or kind is list:
            objects = self.represented_objects  # by id, as the stock representer keeps them
            node: Node | None = objects.get(id(data))
            if node is not None:
                return node
            represent = self.represent_data
            value: list[Any] = []
            if kind is dict:
                node = objects[id(data)] = MappingNode(MAP_TAG, value, flow_style=self.default_flow_style)
                for key, item in data.items():
                    value.append(
                        (
                            ScalarNode(STR_TAG, key) if type(key) is str else represent(key),
                            ScalarNode(STR_TAG, item) if type(item) is str else represent(item),
                        )
                    )
            else:
                node = objects[id(data)] = SequenceNode(SEQ_TAG, value, flow_style=self.default_flow_style)
                value += [ScalarNode(STR_TAG, item) if type(item) is str else represent(item) for item in data]
            return node
        if kind is int:
            return ScalarNode(_INT_TAG, str(data))
        if kind is bool:
            return ScalarNode(_BOOL_TAG, "true" if data else "false")
        if data is None:
            return ScalarNode(_NULL_TAG, "null")
        return super().represent_data(data)  # type: ignore[no-any-return]


install_resolver(FastDumper)
