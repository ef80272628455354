"""The subscription index: which subscriptions match a published subject (nats-server ``sublist.go``).

A trie with one node per token; each node has literal children plus the ``*`` and ``>`` children
kept apart, so a publish to the literal subject ``foo.*`` is matched by ``foo.*``/``foo.>``/``>``
subscriptions but not by ``foo.bar`` (as nats-server does).

Every publish asks `Sublist.match`, so results are cached per subject. A result is an
immutable ``(plain_subs, queue_groups)`` pair of tuples; the router may hold on to one while
subscriptions come and go. Inserting or removing a subscription drops the cached results it
affects: just its own subject when it is literal; when it has wildcards, the matching cached
subjects among those with its first token (the cached subjects are kept by first token too), so
a client's ``_INBOX.<id>.*`` coming or going costs nothing in the cache — nats-server scans its
whole cache (at most 1,024 entries) for each such change. A wildcard subscription whose first
token is itself a wildcard still scans the cache (or clears it when large: refilling is cheaper
than scanning in Python).

JetStream ack subjects (``$JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>``) are
unique per message, so they would all miss the cache (and evict what it holds). A consumer listens
on ``$JS.ACK.<stream>.<consumer>.>``: while every subscription that could match under ``$JS.ACK.``
has that form, an ack subject is matched by one dict lookup on its ``$JS.ACK.<s>.<c>.`` prefix.

Reply subjects are unique per request too: a requester (nats.go, nats.py, our client, JetStream
publishers waiting for PubAcks) listens on one ``_INBOX.<id>.*`` and each request's reply goes to
``_INBOX.<id>.<n>``. The inbox index does for them what the ack index does for acks: while every
subscription that could match a three-token ``_INBOX.`` subject is a plain ``_INBOX.<id>.*``, such
a reply is matched by one dict lookup on its ``_INBOX.<id>.`` prefix, and the cache keeps what
repeats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from pyjetstream.protocol.subjects import FWC, PWC, SEP, is_valid_subject, subject_matches

if TYPE_CHECKING:
    # Annotations only: the sublist reads a subscription's subject, queue and literal flag and
    # hands the objects back; it is compiled without the (interpreted) class (see _compiled.py).
    from pyjetstream.server.subscription import Subscription

__all__ = ["EMPTY_RESULT", "MatchResult", "Sublist", "SublistError"]

# Cached results kept at most; beyond this the oldest half is dropped (nats-server slCacheMax 1024).
CACHE_MAX = 4096
# A wildcard insert/remove scans at most this many cached subjects, else clears the cache.
CACHE_SCAN_MAX = 512


class SublistError(ValueError):
    """A subscription subject that cannot be indexed (``Invalid Subject``)."""


# (plain subscriptions, queue groups: one tuple of member subscriptions per group name)
MatchResult: TypeAlias = "tuple[tuple[Subscription, ...], tuple[tuple[Subscription, ...], ...]]"
EMPTY_RESULT: MatchResult = ((), ())


class _Node:
    __slots__ = ("fwc", "literal", "psubs", "pwc", "qsubs")

    def __init__(self) -> None:
        self.literal: dict[str, _Node] = {}
        self.pwc: _Node | None = None
        self.fwc: _Node | None = None
        self.psubs: list[Subscription] = []
        self.qsubs: dict[str, list[Subscription]] = {}

    def child(self, token: str) -> _Node | None:
        if token == PWC:
            return self.pwc
        if token == FWC:
            return self.fwc
        return self.literal.get(token)

    def is_empty(self) -> bool:
        return not (self.literal or self.pwc or self.fwc or self.psubs or self.qsubs)


class Sublist:
    """Subscriptions indexed by subject, with a per-subject match cache."""

    def __init__(self) -> None:
        self._root = _Node()
        # Public so the router's hot path can do ``cache.get(subject)`` without a method call.
        self.cache: dict[str, MatchResult] = {}
        # The cached subjects by first token (a wildcard change looks at its own token's only).
        self._firsts: dict[str, set[str]] = {}
        # ``$JS.ACK.<s>.<c>.`` -> the match result of its ``$JS.ACK.<s>.<c>.>`` subscriptions, and
        # how many other subscriptions could match an ack subject (the index is used only at 0).
        self._acks: dict[str, MatchResult] = {}
        self._ack_overlaps = 0
        # ``_INBOX.<id>.`` -> the match result of its ``_INBOX.<id>.*`` subscriptions, and how many
        # other subscriptions could match a three-token ``_INBOX.`` subject (used only at 0).
        self._inboxes: dict[str, MatchResult] = {}
        self._inbox_overlaps = 0
        self.count = 0
        self.inserts = 0
        self.removes = 0
        self.matches = 0
        self.cache_misses = 0
        self.scanned = 0  # cached subjects a wildcard change looked at (the complexity tests read it)

    # ------------------------------------------------------------------ changes

    def insert(self, sub: Subscription) -> None:
        subject = sub.subject
        if not is_valid_subject(subject):
            raise SublistError("Invalid Subject")
        node = self._root
        for token in subject.split(SEP):
            if token == PWC:
                if node.pwc is None:
                    node.pwc = _Node()
                node = node.pwc
            elif token == FWC:
                if node.fwc is None:
                    node.fwc = _Node()
                node = node.fwc
            else:
                nxt = node.literal.get(token)
                if nxt is None:
                    nxt = node.literal[token] = _Node()
                node = nxt
        if sub.queue:
            node.qsubs.setdefault(sub.queue, []).append(sub)
        else:
            node.psubs.append(sub)
        self.count += 1
        self.inserts += 1
        self._invalidate(sub)
        self._index_ack(sub, True)
        self._index_inbox(sub, True)

    def remove(self, sub: Subscription) -> bool:
        """Remove ``sub``; False when it was not in the index."""
        path: list[tuple[_Node, str]] = []
        node: _Node | None = self._root
        for token in sub.subject.split(SEP):
            assert node is not None
            nxt = node.child(token)
            if nxt is None:
                return False
            path.append((node, token))
            node = nxt
        assert node is not None
        if sub.queue:
            members = node.qsubs.get(sub.queue)
            if members is None or not _remove_identity(members, sub):
                return False
            if not members:
                del node.qsubs[sub.queue]
        elif not _remove_identity(node.psubs, sub):
            return False
        self.count -= 1
        self.removes += 1
        self._prune(path, node)
        self._invalidate(sub)
        self._index_ack(sub, False)
        self._index_inbox(sub, False)
        return True

    def _index_ack(self, sub: Subscription, added: bool) -> None:
        """Keep the ack index (see the module docstring) in step with an insert or remove."""
        tokens = sub.subject.split(SEP)
        first = tokens[0]
        if first != FWC and not (first in _ACK_FIRST and len(tokens) > 1 and tokens[1] in _ACK_SECOND):
            return  # cannot match an ack subject
        if sub.queue or len(tokens) != 5 or tokens[4] != FWC or first != "$JS" or tokens[1] != "ACK":
            self._ack_overlaps += 1 if added else -1
            return
        if tokens[2] in _WILDCARDS or tokens[3] in _WILDCARDS:
            self._ack_overlaps += 1 if added else -1
            return
        prefix = sub.subject[:-1]
        psubs = self._acks.get(prefix, EMPTY_RESULT)[0]
        psubs = (*psubs, sub) if added else tuple(s for s in psubs if s is not sub)
        if psubs:
            self._acks[prefix] = (psubs, ())
        else:
            self._acks.pop(prefix, None)

    def _index_inbox(self, sub: Subscription, added: bool) -> None:
        """Keep the inbox index (see the module docstring) in step with an insert or remove."""
        tokens = sub.subject.split(SEP)
        first = tokens[0]
        n = len(tokens)
        if first not in _INBOX_FIRST or not (n == 3 or (tokens[-1] == FWC and n <= 3)):
            return  # cannot match a three-token ``_INBOX.`` subject
        if sub.queue or n != 3 or first != _INBOX or tokens[2] != PWC or tokens[1] in _WILDCARDS:
            self._inbox_overlaps += 1 if added else -1
            return
        prefix = sub.subject[:-1]
        psubs = self._inboxes.get(prefix, EMPTY_RESULT)[0]
        psubs = (*psubs, sub) if added else tuple(s for s in psubs if s is not sub)
        if psubs:
            self._inboxes[prefix] = (psubs, ())
        else:
            self._inboxes.pop(prefix, None)

    def _match_ack(self, subject: str) -> MatchResult:
        """An ack subject's subscriptions from the ack index (only valid without overlaps)."""
        # The ``$JS.ACK.<s>.<c>.`` prefix: the dots after the stream and the consumer tokens.
        dot = subject.find(SEP, _ACK_PREFIX_LEN)
        dot = subject.find(SEP, dot + 1) if dot > _ACK_PREFIX_LEN else -1
        if dot < 0 or subject[dot - 1] == SEP:
            return EMPTY_RESULT  # fewer tokens than the ``>`` needs, or an empty one
        tail = subject[dot + 1 :]
        if not tail or tail[0] == SEP or tail[-1] == SEP or _EMPTY_TOKEN in tail:
            return EMPTY_RESULT  # nats-server: a subject with an empty token matches nothing
        return self._acks.get(subject[: dot + 1], EMPTY_RESULT)

    def ack_prefix_match(self, prefix: str) -> MatchResult | None:
        """What `match` gives every ack subject ``prefix`` + five non-empty tokens
        (``prefix`` is ``$JS.ACK.<stream>.<consumer>.``, both tokens non-empty): the ack index's
        entry, or None while other subscriptions could match ack subjects (each is then matched
        on its own). A cached result for such a subject is the same (a subscription that matches
        it invalidates it), so the run of acks ``Server.route_acks`` routes skips the cache. Not
        counted in ``matches``: the caller counts each ack."""
        if self._ack_overlaps:
            return None
        return self._acks.get(prefix, EMPTY_RESULT)

    def _prune(self, path: list[tuple[_Node, str]], leaf: _Node) -> None:
        """Drop nodes left empty, so churn of unique subjects (inboxes) does not grow the trie."""
        node = leaf
        for parent, token in reversed(path):
            if not node.is_empty():
                return
            if token == PWC:
                parent.pwc = None
            elif token == FWC:
                parent.fwc = None
            else:
                del parent.literal[token]
            node = parent

    def _invalidate(self, sub: Subscription) -> None:
        cache = self.cache
        if not cache:
            return
        subject = sub.subject
        first = _first_token(subject)
        if sub.literal:
            if cache.pop(subject, None) is not None:
                self._firsts[first].discard(subject)
            return
        keys: set[str] | dict[str, MatchResult]
        if first == PWC or first == FWC:
            if len(cache) > CACHE_SCAN_MAX:
                cache.clear()
                self._firsts.clear()
                return
            keys = cache
        else:
            bucket = self._firsts.get(first)
            if not bucket:
                return
            if len(bucket) > CACHE_SCAN_MAX:
                for key in bucket:
                    del cache[key]
                del self._firsts[first]
                return
            keys = bucket
        self.scanned += len(keys)
        for key in [k for k in keys if subject_matches(subject, k)]:
            del cache[key]
            self._firsts[_first_token(key)].discard(key)

    # ------------------------------------------------------------------ lookups

    def match(self, subject: str) -> MatchResult:
        """Subscriptions matching a published subject (cached)."""
        self.matches += 1
        if not self._inbox_overlaps and subject.startswith(_INBOX_PREFIX):
            # ``_INBOX.<id>.<n>``: exactly three non-empty tokens (anything else takes the cache
            # and the trie). Before the cache: a reply is never in it, and a unique subject's
            # hash and miss cost as much as the index lookup itself.
            dot = subject.find(SEP, _INBOX_PREFIX_LEN)
            if dot > _INBOX_PREFIX_LEN and dot + 1 < len(subject) and subject.find(SEP, dot + 1) < 0:
                return self._inboxes.get(subject[: dot + 1], EMPTY_RESULT)
        result = self.cache.get(subject)
        if result is not None:
            return result
        if subject.startswith(_ACK_PREFIX) and not self._ack_overlaps:
            return self._match_ack(subject)
        self.cache_misses += 1
        tokens = subject.split(SEP)
        if "" in tokens:
            # nats-server: a subject with an empty token matches nothing (and is not cached).
            return EMPTY_RESULT
        psubs: list[Subscription] = []
        qgroups: dict[str, list[Subscription]] = {}
        _collect(self._root, tokens, 0, psubs, qgroups)
        if psubs or qgroups:
            result = (tuple(psubs), tuple(tuple(members) for members in qgroups.values()))
        else:
            result = EMPTY_RESULT
        cache = self.cache
        firsts = self._firsts
        if len(cache) >= CACHE_MAX:
            for key in list(cache)[: CACHE_MAX // 2]:
                del cache[key]
            firsts.clear()
            for key in cache:
                firsts.setdefault(_first_token(key), set()).add(key)
        cache[subject] = result
        bucket = firsts.get(tokens[0])
        if bucket is None:
            firsts[tokens[0]] = {subject}
        else:
            bucket.add(subject)
        return result

    def has_interest(self, subject: str) -> bool:
        psubs, qsubs = self.match(subject)
        return bool(psubs or qsubs)

    def all_subscriptions(self) -> list[Subscription]:
        out: list[Subscription] = []
        stack = [self._root]
        while stack:
            node = stack.pop()
            out.extend(node.psubs)
            for members in node.qsubs.values():
                out.extend(members)
            stack.extend(node.literal.values())
            if node.pwc is not None:
                stack.append(node.pwc)
            if node.fwc is not None:
                stack.append(node.fwc)
        return out

    def stats(self) -> dict[str, Any]:
        """The numbers nats-server reports in ``/subsz``."""
        fanouts = [len(p) + len(q) for p, q in self.cache.values()]
        hits = self.matches - self.cache_misses
        return {
            "num_subscriptions": self.count,
            "num_cache": len(self.cache),
            "num_inserts": self.inserts,
            "num_removes": self.removes,
            "num_matches": self.matches,
            "cache_hit_rate": (hits / self.matches) if self.matches else 0,
            "max_fanout": max(fanouts) if fanouts else 0,
            "avg_fanout": (sum(fanouts) / len(fanouts)) if fanouts else 0,
        }


_INBOX = "_INBOX"
_INBOX_PREFIX = "_INBOX."
_INBOX_PREFIX_LEN = len(_INBOX_PREFIX)
# A subscription whose first token is among these may match some ``_INBOX.`` subject.
_INBOX_FIRST = (_INBOX, PWC, FWC)
_ACK_PREFIX = "$JS.ACK."
_ACK_PREFIX_LEN = len(_ACK_PREFIX)
_EMPTY_TOKEN = SEP + SEP
_WILDCARDS = (PWC, FWC)
# A subscription whose first two tokens are among these may match some ack subject.
_ACK_FIRST = ("$JS", PWC, FWC)
_ACK_SECOND = ("ACK", PWC, FWC)


def _first_token(subject: str) -> str:
    dot = subject.find(SEP)
    return subject if dot < 0 else subject[:dot]


def _remove_identity(items: list[Subscription], sub: Subscription) -> bool:
    for i, item in enumerate(items):
        if item is sub:
            del items[i]
            return True
    return False


def _add_node(node: _Node, psubs: list[Subscription], qgroups: dict[str, list[Subscription]]) -> None:
    if node.psubs:
        psubs.extend(node.psubs)
    if node.qsubs:
        for name, members in node.qsubs.items():
            # Members of one group under different filters form one group (nats-server merges them).
            group = qgroups.get(name)
            if group is None:
                qgroups[name] = list(members)
            else:
                group.extend(members)


def _collect(
    node: _Node,
    tokens: list[str],
    i: int,
    psubs: list[Subscription],
    qgroups: dict[str, list[Subscription]],
) -> None:
    n = len(tokens)
    while True:
        if i == n:
            _add_node(node, psubs, qgroups)
            return
        if node.fwc is not None:
            _add_node(node.fwc, psubs, qgroups)
        if node.pwc is not None:
            _collect(node.pwc, tokens, i + 1, psubs, qgroups)
        nxt = node.literal.get(tokens[i])
        if nxt is None:
            return
        node = nxt
        i += 1
