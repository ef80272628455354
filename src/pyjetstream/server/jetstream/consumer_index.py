"""A stream's consumers indexed by their subject filters (nats-server ``stream.go``: the consumer
sublist ``csl``, ``setConsumer``, ``removeConsumer``, ``swapSigSubs``).

Every stored message must reach the consumers whose filter takes its subject (to count it and
wake their delivery), an interest stream must know whether any consumer wants a new message, and
an ack on an interest stream must ask the consumers that could still need the message. Asking
every consumer makes each of those cost time in proportion to the number of consumers; nats-server
keeps its consumers in a subject sublist and matches the message's subject. So does this index: a
`GenericSublist` (nats-server's ``gsl``, as its ``csl`` is a ``Sublist`` without cache use) holds one
entry per filter (``>`` for a consumer without one); the consumers filtered to a literal subject and those taking everything are also kept
in dicts, which answer alone while no other wildcard filter exists; else the consumers a subject
reaches are cached per subject as one tuple, in the order they were added, until a consumer comes,
goes or changes its filters. A change marks the dicts' tuple of its subject stale (`_STALE`), to be
built again by the next `match` that asks for it: building it at every change made creating n
consumers on one filter (or none) cost n² steps (``copied`` counts the consumers copied into them).

It also keeps what listing and limits ask of all consumers at once: the count of public ones
(not direct, nats-server ``numPublicConsumers``), of limitable ones (neither direct nor sourcing,
``numLimitableConsumers``) and the public names in order, for ``CONSUMER.NAMES`` / ``LIST`` pages
(sorted once per change, not per page).

``visited`` counts the consumers handed out by `match` (what a publish, a signal or an ack
looks at): the step counter the complexity tests read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.protocol.gsl import GenericSublist
from pyjetstream.protocol.subjects import FWC, has_wildcard
from pyjetstream.server.jetstream.consumer_config import filters_of

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer

__all__ = ["ConsumerIndex"]

#: Subjects whose consumers are cached at most (beyond it the cache starts over).
CACHE_MAX = 4096
_NO_CONSUMERS: tuple[Consumer, ...] = ()
#: A direct lookup's tuple, to be built again from its entries (truthy: it has some; never iterated).
_STALE: tuple[Consumer, ...] = (None,)  # type: ignore[assignment]


class _Entry:
    """One filter of one consumer (held by identity under its filter in the sublist)."""

    __slots__ = ("consumer", "literal", "order", "subject")

    def __init__(self, subject: str, consumer: Consumer, order: int) -> None:
        self.subject = subject
        self.literal = not has_wildcard(subject)
        self.consumer = consumer
        self.order = order


class ConsumerIndex:
    """The consumers of one stream by filter subject, with the counts listing and limits read.

    While no consumer has a wildcard filter other than ``>`` (the common case: literal filters,
    or none), a subject's consumers are one dict lookup — those filtered to exactly it, and those
    taking everything — with nothing to cache; otherwise the sublist answers and its answers are
    cached per subject."""

    __slots__ = (
        "_added",
        "_all",
        "_all_entries",
        "_cache",
        "_entries",
        "_lit",
        "_lit_entries",
        "_names",
        "_sl",
        "_wild",
        "copied",
        "direct",
        "limitable",
        "visited",
    )

    def __init__(self) -> None:
        self._sl: GenericSublist[_Entry] = GenericSublist()
        self._entries: dict[str, list[_Entry]] = {}  # consumer name -> its entries
        self._cache: dict[str, tuple[Consumer, ...]] = {}
        # (entries as dict keys, in the order they were added: one is removed in one step)
        self._lit_entries: dict[str, dict[_Entry, None]] = {}  # literal filter -> its entries
        self._lit: dict[str, tuple[Consumer, ...]] = {}  # literal filter -> its consumers, in order
        self._all_entries: dict[_Entry, None] = {}  # filter ``>`` (or none)
        self._all: tuple[Consumer, ...] = _NO_CONSUMERS
        self._wild = 0  # entries with another wildcard filter (then the sublist answers)
        self._names: list[str] | None = None  # public names, sorted (None: to sort again)
        self._added = 0
        self.direct = 0  # direct consumers (a mirror's or a source's, on its origin)
        self.limitable = 0  # neither direct nor sourcing
        self.copied = 0  # consumers copied into the direct lookups' tuples (a step count)
        self.visited = 0

    def add(self, consumer: Consumer) -> None:
        """A consumer joined the stream (``setConsumer``)."""
        if consumer.name in self._entries:
            self.remove(consumer)
        cfg = consumer.cfg
        self.direct += bool(cfg.direct)
        self.limitable += not (cfg.direct or cfg.sourcing)
        self._insert(consumer)
        self._names = None

    def remove(self, consumer: Consumer) -> None:
        """A consumer left (``removeConsumer``)."""
        entries = self._entries.get(consumer.name)
        if entries is None:
            return
        cfg = entries[0].consumer.cfg
        self.direct -= bool(cfg.direct)
        self.limitable -= not (cfg.direct or cfg.sourcing)
        self._drop(consumer.name)
        self._names = None

    def refilter(self, consumer: Consumer) -> None:
        """The consumer's filters changed (``swapSigSubs``)."""
        self._drop(consumer.name)
        self._insert(consumer)

    def _insert(self, consumer: Consumer) -> None:
        self._added += 1
        entries = [_Entry(f, consumer, self._added) for f in filters_of(consumer.cfg) or [">"]]
        for entry in entries:
            self._sl.insert(entry.subject, entry)
            self._place(entry, True)
        self._entries[consumer.name] = entries
        self._cache.clear()

    def _drop(self, name: str) -> None:
        for entry in self._entries.pop(name, ()):
            self._sl.remove(entry.subject, entry)
            self._place(entry, False)
        self._cache.clear()

    def _place(self, entry: _Entry, added: bool) -> None:
        """Keep the direct lookups (literal filters, ``>``) in step with an entry: the lookup's
        tuple is marked stale, not built (see the module doc)."""
        subject = entry.subject
        if entry.literal:
            entries = self._lit_entries.setdefault(subject, {})
            if added:
                entries[entry] = None
            else:
                del entries[entry]
            if entries:
                self._lit[subject] = _STALE
            else:
                del self._lit_entries[subject]
                del self._lit[subject]
        elif subject == FWC:
            if added:
                self._all_entries[entry] = None
            else:
                del self._all_entries[entry]
            self._all = _STALE if self._all_entries else _NO_CONSUMERS
        else:
            self._wild += 1 if added else -1

    def _built_all(self) -> tuple[Consumer, ...]:
        self.copied += len(self._all_entries)
        found = self._all = tuple(e.consumer for e in self._all_entries)
        return found

    def _built_lit(self, subject: str) -> tuple[Consumer, ...]:
        entries = self._lit_entries[subject]
        self.copied += len(entries)
        found = self._lit[subject] = tuple(e.consumer for e in entries)
        return found

    def clear(self) -> None:
        """The stream stopped: no consumers."""
        self._sl = GenericSublist()
        self._entries.clear()
        self._cache.clear()
        self._lit_entries.clear()
        self._lit.clear()
        self._all_entries.clear()
        self._all = _NO_CONSUMERS
        self._wild = 0
        self._names = None
        self.direct = self.limitable = 0

    def match(self, subject: str) -> tuple[Consumer, ...]:
        """The consumers whose filter takes ``subject``, in the order they were added."""
        if not self._wild:
            found = self._lit.get(subject)
            if found is None:
                found = self._all
                if found is _STALE:
                    found = self._built_all()
            elif self._all:
                found = self._cache.get(subject) or self._lookup(subject)
            elif found is _STALE:
                found = self._built_lit(subject)
        else:
            found = self._cache.get(subject)
            if found is None:
                found = self._lookup(subject)
        self.visited += len(found)
        return found

    def _lookup(self, subject: str) -> tuple[Consumer, ...]:
        entries = self._sl.match(subject)
        if not entries:
            found = _NO_CONSUMERS
        else:
            # (a consumer's filters never overlap, so each comes once)
            ordered = sorted(entries, key=_order) if len(entries) > 1 else entries
            found = tuple(e.consumer for e in ordered)
        cache = self._cache
        if len(cache) >= CACHE_MAX:
            cache.clear()
        cache[subject] = found
        return found

    def has_interest(self, subject: str) -> bool:
        """Some consumer's filter takes ``subject`` (``csl.HasInterest``)."""
        if not self._wild:
            return bool(self._all) or subject in self._lit
        found = self._cache.get(subject)
        if found is None:
            found = self._lookup(subject)
        return bool(found)

    def public_names(self) -> list[str]:
        """The names of the public (not direct) consumers, sorted (what a listing pages through)."""
        names = self._names
        if names is None:
            names = self._names = self._sort_names()
        return names

    def _sort_names(self) -> list[str]:
        return sorted(n for n, es in self._entries.items() if not es[0].consumer.cfg.direct)

    @property
    def public(self) -> int:
        """Consumers that are not direct (``numPublicConsumers``)."""
        return len(self._entries) - self.direct


def _order(entry: object) -> int:
    return entry.order  # type: ignore[attr-defined]
