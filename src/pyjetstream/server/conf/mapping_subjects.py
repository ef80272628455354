"""``mappings`` (``maps``), top-level (the global account's) and in an account: nats-server's
``parseAccountMappings`` / ``parseAccountMapDest``, each mapping checked as it is added
(`pyjetstream.server.mappings.check`), every error with nats-server's text and place."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyjetstream.protocol.subjects import is_valid_subject
from pyjetstream.server.conf.converters import go_type, go_value
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.mappings import MappingError, check
from pyjetstream.server.options import MapDest
from pyjetstream.server.options import Mappings as MappingsConfig

if TYPE_CHECKING:
    from pyjetstream.server.conf.mapping_base import BlockMapper

_INT64 = 2**63
_ATOI = re.compile(r"^[+-]?[0-9]+$")


class _Panic(Exception):
    """A Go type assertion that fails in nats-server's parser: the rest of the block is skipped
    (``convertPanicToErrorList``)."""

    def __init__(self, node: Node, want: str) -> None:
        super().__init__(f"interface conversion: interface {{}} is {go_type(node.value)}, not {want}")
        self.node = node


def _string(node: Node) -> str:
    if not isinstance(node.value, str):
        raise _Panic(node, "string")
    return node.value


def _weight(mapper: BlockMapper, node: Node) -> int | None:
    """A destination's ``weight``: ``50``, ``"50%"``; None (reported) when it is not one."""
    value = node.value
    if isinstance(value, str):
        text = value.removesuffix("%")
        if not _ATOI.match(text) or not -_INT64 <= int(text) < _INT64:  # Go's strconv.Atoi
            mapper.error(node, f'Invalid weight "{text}" for mapping destination')
            return None
        weight = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        weight = value
    else:
        shown = str(value).lower() if isinstance(value, bool) else go_value(value)
        mapper.error(node, f"Unknown entry type for weight of {shown}\n")
        return None
    if not 0 <= weight <= 100:
        mapper.error(node, f"Invalid weight {weight} for mapping destination")
        return None
    return weight


def _dest(mapper: BlockMapper, node: Node) -> MapDest | None:
    """nats-server ``parseAccountMapDest``: one ``{destination, weight, cluster}``."""
    if not isinstance(node.value, dict):
        mapper.error(node, "Expected an entry for the mapping destination")
        return None
    subject, cluster = "", ""
    weight: int | None = None
    for key, item in node.value.items():
        name = key.lower()
        if name in ("dest", "destination"):
            subject = _string(item)
        elif name == "weight":
            weight = _weight(mapper, item)
            if weight is None:
                return None
        elif name == "cluster":
            cluster = _string(item)
        else:
            mapper.error(item, f'Unknown field "{key}" for mapping destination')
            return None
    if weight is None:
        mapper.error(node, f'Missing weight for mapping destination "{subject}"')
        return None
    return MapDest(subject=subject, weight=weight, cluster=cluster)


def _entry(mapper: BlockMapper, out: MappingsConfig, subject: str, node: Node) -> None:
    """One ``subject: destination(s)`` of the block, added if nats-server adds it."""
    value = node.value
    if isinstance(value, str):
        dests = [MapDest(subject=value)]
        what = f'"{subject}" to "{value}"'
    else:
        items = value if isinstance(value, list) else [node]
        dests = [d for d in (_dest(mapper, item) for item in items) if d is not None]
        what = f'"{subject}"'
        if not isinstance(value, list) and not dests:
            return
    try:
        check(subject, dests)
    except MappingError as exc:
        mapper.error(node, f"Error adding mapping for {what} : {exc}")
        return
    out[subject] = dests


def parse_mappings(mapper: BlockMapper, node: Node) -> MappingsConfig:
    """The block's mappings that nats-server would add (the others are reported as errors)."""
    out: MappingsConfig = {}
    if not isinstance(node.value, dict):
        mapper.error(node, str(_Panic(node, "map[string]interface {}")))
        return out
    try:
        for subject, item in node.value.items():
            if not is_valid_subject(subject):
                mapper.error(node, f'Subject "{subject}" is not a valid subject')
                continue
            _entry(mapper, out, subject, item)
    except _Panic as exc:
        mapper.error(exc.node, str(exc))
    return out
