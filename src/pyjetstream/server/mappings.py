"""Subject mappings of an account: a publish to a mapped subject is routed as a publish to its
destination (nats-server ``accounts.go``: ``AddWeightedMappings``, ``RemoveMapping``,
``selectMappedSubject``).

A mapping maps a source subject (literal or with wildcards) to one or more destinations, each a
subject transform (`pyjetstream.server.subject_transform`: the same functions and checks as a
stream's ``subject_transform``) with a weight in percent. The weights are kept cumulative and
sorted, so picking one is a random number in ``[0, 100)`` and the first destination whose
cumulative weight is above it. When the weights do not add up to 100, the rest goes to the source
subject itself (the message is not mapped), unless the source is listed as a destination: then
the rest is lost (mapped to nothing). Destinations may be scoped to a cluster; a server uses those
of its own cluster's name, else the unscoped ones.

The server applies an account's mappings to every publish of a client before anything else looks
at the subject (permissions, routing, JetStream): see ``ClientConnection._process``. An account
without mappings pays one boolean test per read (`Account.mapped`).

Finding a subject's mapping: nats-server walks its mappings in order and takes the first that
matches (a literal source equal to the subject, a wildcard one by ``isSubsetMatch``) — O(mappings)
a publish, ~20-30 ns each in Go; in Python ~0.3 µs each, so a publish beside 1,000 wildcard
mappings cost 346 µs of CPU against nats-server's 30.5 (the ``mappings`` scale dimension). Here the
literal sources sit in a dict and the wildcard ones in a token trie by their positions (a
`GenericSublist`): the first match is the lowest position among those the trie's walk reaches —
the subject's own token and ``*`` at each level, and ``>`` — O(tokens), whatever the number of
mappings. `INDEXED` off, or a subject with an empty token (which ``isSubsetMatch`` matches and the
trie does not): the wildcard sources tried in order, as nats-server does (the differential test
proves both find the same). A subject's deterministic result is cached besides.
Adding a mapping is O(1) (the configuration's 10,000 were O(n²) when each add rebuilt the index).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any

from msgspec import Struct

from pyjetstream.protocol.gsl import GenericSublist
from pyjetstream.protocol.subjects import is_valid_subject
from pyjetstream.server.options import MapDest
from pyjetstream.server.options import Mappings as MappingsConfig
from pyjetstream.server.subject_transform import (
    ERR_BAD_SUBJECT,
    SubjectTransform,
    TransformError,
    transform_tokenize,
    validate_mapping,
)

__all__ = ["CACHE_BUILT", "INDEXED", "MappingError", "Mappings", "check", "cluster_name"]

#: The wildcard sources found through their token trie (`Mappings._trie`); off: tried in order.
INDEXED = True


def cluster_name(options: Any) -> str:
    """The cluster name a server's cluster-scoped destinations are picked by (nats-server
    ``cachedClusterName``): the ``cluster { name }`` of its configuration, which the embedded
    server keeps though it runs no cluster; "" without one."""
    cluster = options.unsupported.get("cluster")
    name = cluster.get("name") if isinstance(cluster, dict) else None
    return name if isinstance(name, str) else ""


#: What a subject resolves to before chance: no mapping (None), a subject (one destination that
#: always gives the same one), or the destinations to pick from with the tokens they are given.
_Resolved = None | str | tuple[list["_Dest"], list[str]]
_MISS: Any = object()
_CACHE_MAX = 4096


class MappingError(ValueError):
    """A mapping nats-server refuses; the text is its error's."""


class _Dest(Struct):
    """One weighted destination of a subject mapping."""

    transform: SubjectTransform | None  # None: the empty destination (nothing to map to)
    weight: int  # cumulative, after `_weigh`


class _Mapping(Struct):
    """One source subject's mapping: its destinations, overall and per cluster."""

    src: str
    wildcard: bool
    dests: list[_Dest]
    cluster_dests: dict[str, list[_Dest]]
    src_tokens: list[str]


def _weigh(src: str, wildcard: bool, dests: list[_Dest], src_listed: bool) -> list[_Dest]:
    """nats-server's ``processDestinations``: the source itself takes what the weights leave of
    100 (unless it is listed: then that share is lost), sorted by weight, made cumulative."""
    total = sum(d.weight for d in dests)
    if total != 100 and not src_listed:
        dest = transform_tokenize(src) if wildcard else src
        dests = [*dests, _Dest(SubjectTransform.compile(src, dest), 100 - total if dests else 100)]
    dests = sorted(dests, key=lambda d: d.weight)
    acc = 0
    for d in dests:
        d.weight += acc
        acc = d.weight
    return dests


#: Built mappings kept by (source, destinations) (`_built`); off: each built again.
CACHE_BUILT = True


def _mapping(src: str, dests: list[MapDest]) -> _Mapping:
    """nats-server ``AddWeightedMappings``, its checks in its order and with its texts.

    A mapping is built once per (source, destinations) while `CACHE_BUILT` (a bounded cache; a
    built `_Mapping` is never changed, so accounts share it): a start checks the configuration's
    mappings as it loads them (nats-server adds them to the account then) and the account builds
    its own from the options — with 10,000 mappings the second build was ~20 µs a mapping of a
    start. A refused one is checked again each time (raises)."""
    if CACHE_BUILT:
        return _built(src, tuple(dests))
    return _build(src, dests)


def check(src: str, dests: list[MapDest]) -> None:
    """Raise `MappingError` where nats-server's ``AddWeightedMappings`` refuses the mapping (the
    configuration's check as it loads it; the mapping built is kept for the account's `add`)."""
    _mapping(src, dests)


@functools.lru_cache(maxsize=1 << 16)  # (as `subject_transform._validated`, whose transforms these hold)
def _built(src: str, dests: tuple[MapDest, ...]) -> _Mapping:
    return _build(src, dests)


def _build(src: str, dests: Sequence[MapDest]) -> _Mapping:
    if not is_valid_subject(src):
        raise MappingError(ERR_BAD_SUBJECT)
    wildcard = any(t in ("*", ">") for t in src.split("."))
    m = _Mapping(src, wildcard, [], {}, src.split("."))
    seen: set[str] = set()
    totals: dict[str, int] = {}
    for d in dests:
        if d.subject in seen:
            raise MappingError(f'duplicate entry for "{d.subject}"')
        seen.add(d.subject)
        if d.weight > 100:
            raise MappingError("individual weights need to be <= 100")
        totals[d.cluster] = totals.get(d.cluster, 0) + d.weight
        if totals[d.cluster] > 100:
            raise MappingError("total weight needs to be <= 100")
        try:
            transform = validate_mapping(src, d.subject)
        except TransformError as exc:
            raise MappingError(str(exc)) from None
        dest = _Dest(transform, d.weight)
        if d.cluster:
            m.cluster_dests.setdefault(d.cluster, []).append(dest)
        else:
            m.dests.append(dest)
    m.dests = _weigh(src, wildcard, m.dests, src in seen)
    for cluster, cdests in m.cluster_dests.items():
        m.cluster_dests[cluster] = _weigh(src, wildcard, cdests, src in seen)
    return m


def _matches(tokens: list[str], stoks: list[str]) -> bool:
    """nats-server ``isSubsetMatch`` of a literal subject's tokens against a source's."""
    for i, s in enumerate(stoks):
        if s == ">":
            return len(tokens) > i
        if i >= len(tokens) or (s != "*" and s != tokens[i]):
            return False
    return len(tokens) == len(stoks)


class Mappings:
    """One account's mappings, in the order they were added (the first that matches is used)."""

    def __init__(self, cluster: str = "") -> None:
        #: The server's cluster name: picks cluster-scoped destinations (nats-server ``cachedClusterName``).
        self.cluster = cluster
        self._entries: list[_Mapping] = []
        self._position: dict[str, int] = {}  # source -> its place in ``_entries``
        # The same, indexed: literal sources by subject, the wildcard ones in order and their
        # positions in a trie by source.
        self._literal: dict[str, tuple[int, _Mapping]] = {}
        self._wild: list[tuple[int, _Mapping]] = []
        self._trie: GenericSublist[int] = GenericSublist()
        self._cache: dict[str, _Resolved] = {}

    def _index(self, i: int, m: _Mapping, new: bool) -> None:
        """Mapping ``m`` at position ``i`` in the indexes: the last one (``new``), or in place of
        its source's."""
        if not m.wildcard:
            self._literal[m.src] = (i, m)
        else:
            wild = self._wild
            if new:
                wild.append((i, m))
            else:
                wild[next(k for k, (j, _) in enumerate(wild) if j == i)] = (i, m)
            self._trie.insert(m.src, i)
        self._cache.clear()

    def _reindex(self) -> None:
        self._position = {m.src: i for i, m in enumerate(self._entries)}
        self._literal, self._wild, self._trie = {}, [], GenericSublist()
        for i, m in enumerate(self._entries):
            self._index(i, m, True)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def sources(self) -> list[str]:
        return [m.src for m in self._entries]

    def add(self, src: str, dests: list[MapDest]) -> None:
        """Add or replace the mapping of ``src`` (raises `MappingError`)."""
        m = _mapping(src, dests)
        i = self._position.get(src)
        if i is None:
            self._position[src] = len(self._entries)
            self._entries.append(m)
            self._index(len(self._entries) - 1, m, True)
        else:
            self._entries[i] = m  # (replaced in place: it keeps its turn)
            self._index(i, m, False)

    def remove(self, src: str) -> bool:
        i = self._position.get(src)
        if i is None:
            return False
        del self._entries[i]
        self._reindex()  # (the positions after it move: rare, O(mappings) as nats-server's)
        return True

    def monitor_info(self) -> dict[str, list[dict[str, Any]]]:
        """``/accountz``'s ``mappings`` (nats-server ``accountInfo``): each source's destinations
        as held — cumulative weights, the source's own share included — the unscoped ones first;
        sorted by source as Go writes a map."""
        out: dict[str, list[dict[str, Any]]] = {}
        for m in sorted(self._entries, key=lambda m: m.src):
            dests = [(d, "") for d in m.dests]
            dests += [(d, c) for c, cd in m.cluster_dests.items() for d in cd]
            out[m.src] = [
                {"subject": d.transform.dest if d.transform else "", "weight": d.weight, **({"cluster": c} if c else {})}
                for d, c in dests
            ]
        return out

    @classmethod
    def from_config(cls, config: MappingsConfig, cluster: str = "") -> Mappings:
        """Mappings checked by the configuration's loading: raises `MappingError` still."""
        out = cls(cluster)
        for src, dests in config.items():
            out.add(src, dests)
        return out

    def _find(self, subject: str) -> tuple[_Mapping, list[str]] | None:
        """The first mapping whose source matches, and the tokens its transform is given: nats-server
        tokenizes at the first mapping that is not an exact literal match, so they are empty when
        the first mapping matched literally (``{{partition(n)}}`` then hashes nothing)."""
        literal = self._literal.get(subject)
        end = literal[0] if literal is not None else len(self._entries)
        if end == 0 and literal is not None:
            return literal[1], []
        tokens = subject.split(".")
        if INDEXED and "" not in tokens:
            found = self._trie.match(subject)
            first = min(found) if found else end
            if first < end:
                return self._entries[first], tokens
        else:
            for i, m in self._wild:
                if i >= end:
                    break
                if _matches(tokens, m.src_tokens):
                    return m, tokens
        return (literal[1], tokens) if literal is not None else None

    def select(self, subject: str) -> str | None:
        """nats-server ``selectMappedSubject``: the subject a publish to ``subject`` goes to, or
        None when no mapping applies ("" when the pick is the lost share). What does not depend
        on chance is kept per subject (bounded, as nats-server's per-client results cache)."""
        hit = self._cache.get(subject, _MISS)
        if hit is _MISS:
            hit = self._resolve(subject)
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[subject] = hit
        if hit is None or hit.__class__ is str:
            return hit
        dests, tokens = hit
        w = int(random.random() * 100)  # nats-server fastrand.Uint32n(100)
        for dest in dests:
            if w < dest.weight:
                transform = dest.transform
                return "" if transform is None else transform.apply_tokens(tokens)
        return ""  # the share the weights leave when the source is listed: lost

    def _resolve(self, subject: str) -> _Resolved:
        found = self._find(subject)
        if found is None:
            return None
        m, tokens = found
        dests = m.dests
        if m.cluster_dests:
            dests = m.cluster_dests.get(self.cluster) or m.dests
        if len(dests) == 1 and dests[0].weight == 100:
            transform = dests[0].transform
            if transform is None:
                return ""
            if transform.deterministic:
                return transform.apply_tokens(tokens)
        return dests, tokens
