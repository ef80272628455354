"""Walking one block of the tree: handler tables, error collection, warnings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyjetstream.server.conf.converters import Invalid, as_duration
from pyjetstream.server.conf.errors import ConfigIssue
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.options import ServerOptions

# A block's handlers: "key|alias" -> handler(key, node), or (attribute, converter) to
# set ``target.attribute = converter(node, key)``.
Handler = Callable[[str, Node], None] | tuple[str, Callable[[Node, str], Any]]


class BlockMapper:
    """Applies blocks of a parsed tree to a ServerOptions, collecting all errors and warnings.

    The mixins in ``mapping_*.py`` add one handler method per block they understand;
    `Mapper` combines them.
    """

    def __init__(self, opts: ServerOptions, strict: bool, filename: str) -> None:
        self.o = opts
        self.strict = strict
        self.filename = filename
        self.errors: list[ConfigIssue] = []
        self.nats_warnings: list[ConfigIssue] = []

    # ------------------------------------------------------------- reporting

    def issue(self, node: Node, message: str) -> ConfigIssue:
        return ConfigIssue(message, node.file or self.filename, node.line, node.col)

    def error(self, node: Node, message: str) -> None:
        self.errors.append(self.issue(node, message))

    def warn(self, node: Node, message: str) -> None:
        self.o.warnings.append(str(self.issue(node, message)))

    def unknown(self, key: str, node: Node) -> None:
        if node.used:  # a variable definition that was referenced
            return
        if self.strict:
            self.error(node, f'unknown field "{key}"')
        else:
            self.warn(node, f'unknown field "{key}" ignored')

    def each(
        self,
        entries: dict[str, Node],
        spec: Mapping[str, Handler],
        target: Any = None,
        unknown: Callable[[str, Node], None] | None = None,
    ) -> None:
        """Dispatch every entry of a block (keys are case-insensitive, as in nats-server)."""
        table = {alias: h for names, h in spec.items() for alias in names.split("|")}
        for key, node in entries.items():
            handler = table.get(key.lower())
            try:
                if handler is None:
                    (unknown or self.unknown)(key, node)
                elif isinstance(handler, tuple):
                    attr, convert = handler
                    setattr(self.o if target is None else target, attr, convert(node, key))
                else:
                    handler(key, node)
            except Invalid as exc:
                self.errors.append(self.issue(exc.node, exc.message))

    def nats_warning(self, node: Node, field: str | None, reason: str) -> None:
        """A warning nats-server itself gives (its ``configWarningErr``: ``invalid use of field
        "<field>": <reason>``; a plain ``configErr`` when ``field`` is None): logged at start, and
        fatal for ``-t`` as there (``ServerOptions.check_warnings``; nats-server ConfigureOptions).
        Listed before the errors when the file also has errors (nats-server processConfigErr)."""
        issue = self.issue(node, reason if field is None else f'invalid use of field "{field}": {reason}')
        self.nats_warnings.append(issue)
        self.o.warnings.append(str(issue))
        self.o.check_warnings.append(str(issue))

    def legacy_duration(self, node: Node, key: str, field: str | None = None) -> float:
        """nats-server parseDuration: a duration string; any other value draws its warning
        ``<field> should be converted to a duration`` and is then seconds if an integer —
        a float, boolean, array or map is an error after the warning, as there (a Go type
        assertion that fails). ``field`` is the name nats-server puts in the text (most
        callers name the key in lower case; ``sync`` passes the key as written)."""
        name = field or key.lower()
        if isinstance(node.value, str):
            return as_duration(node, name)  # "error parsing <field>: time: ..."
        self.nats_warning(node, name, f"{name} should be converted to a duration")
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            if node.raw and node.raw[-1:].lower() == "m":  # pyjetstream's hint, not for -t
                self.warn(node, f'the unquoted {node.raw} is the number {node.value}; write "{node.raw}"')
            return float(node.value)
        return as_duration(node, key)  # raises: expected a duration string, got <type>


class Fields:
    """A scratch record for a block's fields before they are checked together."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __setattr__(self, name: str, value: Any) -> None:  # any field, as in __init__
        self.__dict__[name] = value

    def __getattr__(self, name: str) -> Any:  # pragma: no cover - typing aid only
        raise AttributeError(name)
