"""The subscription index: which subscriptions match a published subject (nats-server ``sublist.go``).

A trie with one node per token; each node has literal children plus the ``*`` and ``>`` children
kept apart, so a publish to the literal subject ``foo.*`` is matched by ``foo.*``/``foo.>``/``>``
subscriptions but not by ``foo.bar`` (as nats-server does).

Every publish asks `Sublist.match`, so results are cached per subject. A result is an
immutable ``(plain_subs, queue_groups)`` pair of tuples; the router may hold on to one while
subscriptions come and go. Inserting or removing a subscription drops the cached results it
affects: just its own subject when it is literal; when it has wildcards, the matching cached
subjects among those that share its literal first tokens (the cached subjects are also kept by
their first two tokens), so a client's ``_INBOX.<id>.*`` or a consumer's ``$JS.ACK.<s>.<c>.>``
coming or going costs nothing in the cache — nats-server scans its whole cache (at most 1,024
entries) for each such change. A wildcard subscription whose first token is itself a wildcard
still scans the cache (or clears it when large: refilling is cheaper than scanning in Python).

A cache miss must not leave objects behind for CPython's cyclic collector: each one kept past a
couple of young collections counts toward the next full collection, which walks every
subscription and trie node — so with 100k subscriptions a miss cost 9× one at 1k (and an insert
5×), the time spent in ``gc``. A subject whose receivers are one node's shares that node's result
(``_Node.result``, made at its first match, dropped when the node's subscriptions change), the
cached subjects' buckets are dicts of strings (untracked, where a set always is), and a node holds
no plain-subscription list until it has one. (nats-server's Go collector runs beside the server.)

Some subjects are unique per message — a request's reply ``_INBOX.<id>.<n>``, a JetStream ack
``$JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>`` — so they would all miss the cache
(and evict what it holds) and walk the trie. Their receivers listen on a prefix: ``_INBOX.<id>.*``,
``$JS.ACK.<stream>.<consumer>.>``. A *prefix index* (`Sublist.index_prefix`, registered by the
server: the sublist knows no subject grammar but its own) does for such a family what the cache
does for repeated subjects: while every subscription that could match a subject of the family is of
the indexed form ``<head><k literal tokens>.<wildcard>``, such a subject is matched by one dict
lookup on its ``<head><k tokens>.`` prefix.

``/subsz`` and ``/accountz`` report the cached results' fanouts (their sum for the average, and the
maximum). nats-server's ``Stats`` walks its cache for them, at most 1,024 entries; ours holds up to
4,096, so the sublist keeps them as the cache changes instead (`Sublist.fanouts`): the sum, the
largest fanout and how many cached results have it, each added or dropped result counted once (a
few integer operations on a miss; the cache-hit path, which only reads the cache, does none of it;
an eviction counts the half it keeps afresh, one look per result, amortized over the misses that
filled it). Only when the last result of the largest fanout leaves is the maximum unknown (an upper
bound): the next statistics walk the cache once to find it — what nats-server does at every request.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, TypeAlias

from pyjetstream.protocol.subjects import (
    FWC,
    PWC,
    SEP,
    subject_matches,
    subjects_overlap,
    valid_subject_tokens,
)


class Indexed(Protocol):
    """What the sublist reads of what it indexes: a subject, a queue group and whether the subject
    is literal; it hands the objects back. The server's ``subscription.Subscription`` and its
    shadows are indexed alike (a protocol: compiled, the sublist checks no class)."""

    subject: str
    queue: str
    literal: bool

__all__ = ["EMPTY_RESULT", "MatchResult", "PrefixIndex", "Sublist", "SublistError", "merged_stats"]

# Cached results kept at most; beyond this the oldest half is dropped (nats-server slCacheMax 1024).
CACHE_MAX: Final = 4096
# A wildcard insert/remove scans at most this many cached subjects, else clears the cache.
CACHE_SCAN_MAX: Final = 512
#: Whether the statistics (`merged_stats`) read the fanouts kept as the cache changes
#: (`Sublist.fanouts`) or walk the cache for them as nats-server's ``Stats`` does (`Sublist.walk_fanouts`).
RUNNING_FANOUTS = True


class SublistError(ValueError):
    """A subscription subject that cannot be indexed (``Invalid Subject``)."""


# (plain subscriptions, queue groups: one tuple of member subscriptions per group name)
# ``tuple[tuple[Indexed, ...], tuple[tuple[Indexed, ...], ...]]``, typed as any tuple: mypyc
# keeps a fixed-length tuple unboxed and boxes a new one at every return, and the router tells
# receiver sets apart by the result object's identity (the one a subject's lookups always give).
MatchResult: TypeAlias = "tuple[Any, ...]"
EMPTY_RESULT: Final[MatchResult] = ((), ())


# The empty plain-subscription list, child table and queue-group table all nodes share until they
# hold one (never written to): a node on the way to others' has no subscriptions, a leaf has no
# children, and each distinct object, even an empty one, is one more for every collection of
# CPython's cyclic collector to visit while the node lives.
_NO_SUBS: Final[list[Indexed]] = []
_NO_CHILDREN: Final[dict[str, _Node]] = {}
_NO_QUEUES: Final[dict[str, list[Indexed]]] = {}


class _Node:
    __slots__ = ("fwc", "literal", "psubs", "pwc", "qsubs", "result")

    def __init__(self) -> None:
        # ``_NO_CHILDREN``, ``_NO_SUBS``, ``_NO_QUEUES`` until the node has one (see ``_NO_SUBS``).
        self.literal: dict[str, _Node] = _NO_CHILDREN
        self.pwc: _Node | None = None
        self.fwc: _Node | None = None
        self.psubs: list[Indexed] = _NO_SUBS
        self.qsubs: dict[str, list[Indexed]] = _NO_QUEUES
        # The match result of a subject whose receivers are this node's alone, made at its first
        # such match and kept while the node's subscriptions stay (see ``Sublist.match``).
        self.result: MatchResult | None = None

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
        # The cached subjects by first and second token ("" for a one-token subject): a wildcard
        # change looks at those its literal first tokens select only. Built by the first wildcard
        # change that needs it (`_index_cache`), kept up to date by the misses after it, dropped
        # when the cache is cut (`_evict`): a run of misses with no subscription change between
        # them — a publisher cycling over more subjects than the cache holds — does none of this
        # bookkeeping, and each cached subject is indexed at most twice (it outlives one cut). A
        # bucket is a dict of str to None, not a set: CPython leaves such a dict out of its cyclic
        # collector (a set is always in it), so a miss leaves no object behind for every full
        # collection to walk.
        self._firsts: dict[str, dict[str, dict[str, None]]] | None = None
        # The nodes a miss collects (`_collect`), one list reused: a miss allocates no list.
        self._nodes: list[_Node] = []
        self._indexes: list[PrefixIndex] = []
        self._leads: tuple[str, ...] = ()  # each index's head's first token and dot (`_may_index`)
        # Each distinct match result once (see ``match``); dropped as a whole when it is large.
        self._results: dict[MatchResult, MatchResult] = {}
        self.count = 0
        self.inserts = 0
        self.removes = 0
        self.matches = 0
        self.cache_misses = 0
        self.scanned = 0  # cached subjects a wildcard change looked at (the complexity tests read it)
        self.indexed = 0  # cached subjects put in the first-token index (`_firsts`; the tests read it)
        self.results_made = 0  # match results built (kept by the cache: see ``match``)
        # The cached results' fanouts (subscriptions plus queue groups, nats-server's
        # ``len(psubs) + len(qsubs)``), changed only where ``cache`` is (see the module docstring):
        # their sum; a fanout no cached result exceeds, and how many cached results have it — it
        # is the maximum unless that count fell to 0 (then `fanouts` walks the cache for it).
        self.fanout_sum = 0
        self.fanout_top = 0
        self.at_top = 0
        self.fanout_walks = 0  # walks of the cache `fanouts` made (the complexity tests read it)

    # ------------------------------------------------------------------ changes

    def insert(self, sub: Indexed) -> None:
        subject = sub.subject
        tokens = valid_subject_tokens(subject)
        if tokens is None:
            raise SublistError("Invalid Subject")
        node = self._root
        for token in tokens:
            if token == PWC:
                if node.pwc is None:
                    node.pwc = _Node()
                node = node.pwc
            elif token == FWC:
                if node.fwc is None:
                    node.fwc = _Node()
                node = node.fwc
            else:
                literal = node.literal
                nxt = literal.get(token)
                if nxt is None:
                    if literal is _NO_CHILDREN:
                        literal = node.literal = {}
                    nxt = literal[token] = _Node()
                node = nxt
        if sub.queue:
            if node.qsubs is _NO_QUEUES:
                node.qsubs = {}
            node.qsubs.setdefault(sub.queue, []).append(sub)
        elif node.psubs is _NO_SUBS:
            node.psubs = [sub]
        else:
            node.psubs.append(sub)
        node.result = None
        self.count += 1
        self.inserts += 1
        self._invalidate(sub)
        if self._may_index(subject):
            for index in self._indexes:
                index.note(sub, True)

    def remove(self, sub: Indexed) -> bool:
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
        node.result = None
        self.count -= 1
        self.removes += 1
        self._prune(path, node)
        self._invalidate(sub)
        if self._may_index(sub.subject):
            for index in self._indexes:
                index.note(sub, False)
        if self._results:
            self._results.clear()  # (no removed subscription kept alive by it)
        return True

    def _may_index(self, subject: str) -> bool:
        """Whether a prefix index may have to note a subscription to ``subject``: its first token
        is a wildcard or some index's head's first token (`PrefixIndex.note`'s quick answer,
        once for them all)."""
        if not subject.startswith(self._leads):
            return subject[0] == PWC or subject[0] == FWC  # (a valid subject is not empty)
        return True

    def index_prefix(self, head: str, key_tokens: int, wildcard: str) -> None:
        """Match the subjects ``<head><key_tokens tokens>.<rest>`` (``rest`` one token for ``*``,
        one or more for ``>``) by their prefix while every subscription that could match one is
        ``<head><key_tokens literal tokens>.<wildcard>`` (see the module docstring). ``head`` ends
        with a dot."""
        index = PrefixIndex(head, key_tokens, wildcard)
        for sub in self.all_subscriptions():
            index.note(sub, True)
        self._indexes.append(index)
        self._leads = (*self._leads, index.lead)

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

    def _invalidate(self, sub: Indexed) -> None:
        cache = self.cache
        if not cache:
            return
        subject = sub.subject
        if sub.literal:
            gone = cache.pop(subject, None)
            if gone is not None:
                self._uncount(gone)
                if self._firsts is not None:
                    first, second = _first_tokens(subject)
                    self._firsts[first][second].pop(subject, None)
            return
        tokens = subject.split(SEP)
        first = tokens[0]
        if first == PWC or first == FWC:
            if len(cache) > CACHE_SCAN_MAX:
                self._clear_cache()
                return
            self._drop_matching(subject, [dict.fromkeys(cache)])
            return
        firsts = self._firsts
        if firsts is None:
            firsts = self._index_cache()
        buckets = firsts.get(first)
        if not buckets:
            return
        second = tokens[1]  # (a wildcard subject with a literal first token has a second one)
        if second == PWC or second == FWC:
            self._drop_matching(subject, list(buckets.values()))
        else:
            bucket = buckets.get(second)
            if bucket:
                self._drop_matching(subject, [bucket])

    def _drop_matching(self, subject: str, buckets: list[dict[str, None]]) -> None:
        """Drop the cached subjects of ``buckets`` that ``subject`` (a wildcard) matches; a bucket
        too large to scan goes whole."""
        cache = self.cache
        for bucket in buckets:
            if len(bucket) > CACHE_SCAN_MAX:
                gone = list(bucket)
            else:
                self.scanned += len(bucket)
                gone = [k for k in bucket if subject_matches(subject, k)]
            firsts = self._firsts
            for key in gone:
                self._uncount(cache[key])
                del cache[key]
                if firsts is not None:
                    first, second = _first_tokens(key)
                    firsts[first][second].pop(key, None)

    def _index_cache(self) -> dict[str, dict[str, dict[str, None]]]:
        """Index the cached subjects by their first two tokens (see ``_firsts``)."""
        firsts: dict[str, dict[str, dict[str, None]]] = {}
        for key in self.cache:
            _index(firsts, key)
        self.indexed += len(self.cache)
        self._firsts = firsts
        return firsts

    def _evict(self) -> None:
        """Drop the older half of the cache (nats-server drops entries at random past
        ``slCacheMax``), and the first-token index with it (see ``_firsts``)."""
        cache = self.cache
        for key in list(cache)[: CACHE_MAX // 2]:
            del cache[key]
        self._firsts = None
        self._recount()

    def _clear_cache(self) -> None:
        """Drop every cached result (and the first-token index, and their fanouts)."""
        self.cache.clear()
        self._firsts = None
        self.fanout_sum = self.fanout_top = self.at_top = 0

    def _count(self, result: MatchResult) -> None:
        """Count a result put in the cache in the fanouts (see ``fanout_sum``)."""
        fanout = _fanout(result)
        self.fanout_sum += fanout
        if fanout > self.fanout_top:
            self.fanout_top = fanout
            self.at_top = 1
        elif fanout == self.fanout_top:
            self.at_top += 1

    def _uncount(self, result: MatchResult) -> None:
        """Take a result dropped from the cache out of the fanouts (see ``fanout_sum``)."""
        fanout = _fanout(result)
        self.fanout_sum -= fanout
        if fanout == self.fanout_top:
            self.at_top -= 1

    def fanouts(self) -> tuple[int, int]:
        """The cached results' fanouts: their sum and maximum (0 for an empty cache), as kept by
        the cache's changes; the cache is walked only when the last result of the largest fanout
        has left since the last walk (see the module docstring)."""
        if not self.at_top and self.fanout_top:
            self.fanout_walks += 1
            self._recount()
        return self.fanout_sum, self.fanout_top

    def _recount(self) -> None:
        """Count the cached results' fanouts afresh (after `_evict`: one look at each result
        left costs less than taking each one dropped out, and leaves the maximum exact)."""
        total = top = at_top = 0
        for result in self.cache.values():
            fanout = _fanout(result)
            total += fanout
            if fanout > top:
                top = fanout
                at_top = 1
            elif fanout == top:
                at_top += 1
        self.fanout_sum = total
        self.fanout_top = top
        self.at_top = at_top

    def walk_fanouts(self) -> tuple[int, int]:
        """`fanouts` found by walking the cache, as nats-server's ``Stats`` does (the figures
        ``RUNNING_FANOUTS`` off reports, and what the tests check the kept ones against)."""
        total = top = 0
        for psubs, qsubs in self.cache.values():
            fanout = len(psubs) + len(qsubs)
            total += fanout
            if fanout > top:
                top = fanout
        return total, top

    # ------------------------------------------------------------------ lookups

    def match(self, subject: str) -> MatchResult:
        """Subscriptions matching a published subject (cached)."""
        self.matches += 1
        for index in self._indexes:
            # A subject unique per message (a reply, an ack): its prefix, before the cache (it is
            # never in it, and a unique subject's hash and miss cost as much as the index lookup).
            if not index.overlaps and subject.startswith(index.head):
                key = index.key(subject)
                if key:
                    return index.entries.get(key, EMPTY_RESULT)
        result = self.cache.get(subject)
        if result is not None:
            return result
        self.cache_misses += 1
        if not subject or subject[0] == SEP or subject[-1] == SEP or _EMPTY_TOKEN in subject:
            # nats-server: a subject with an empty token matches nothing (and is not cached).
            return EMPTY_RESULT
        nodes = self._nodes
        _collect(self._root, subject, 0, nodes)
        if len(nodes) == 1:
            node = nodes[0]
            result = _node_result(node)
            if result is None:
                self.results_made += 1
                result = node.result = _result(node.psubs, node.qsubs)
        elif nodes:
            result = self._shared_result(nodes)
        else:
            result = EMPTY_RESULT
        nodes.clear()
        cache = self.cache
        if len(cache) >= CACHE_MAX:
            self._evict()
        cache[subject] = result
        self._count(result)
        if self._firsts is not None:
            self.indexed += 1
            _index(self._firsts, subject)
        return result

    def _shared_result(self, nodes: list[_Node]) -> MatchResult:
        """The result of receivers from several nodes, one object per receiver set: subjects with
        the same receivers share it, so a run of messages to them is one receiver set to the
        router (``router._Run``: ``result is segment``)."""
        psubs: list[Indexed] = []
        qgroups: dict[str, list[Indexed]] = {}
        for node in nodes:
            _add_node(node, psubs, qgroups)
        result: MatchResult = _result(psubs, qgroups)
        shared = self._results.get(result)
        if shared is not None:
            return shared
        if len(self._results) >= CACHE_MAX:
            self._results.clear()
        self._results[result] = result
        self.results_made += 1
        return result

    def has_interest(self, subject: str) -> bool:
        psubs, qsubs = self.match(subject)
        return bool(psubs or qsubs)

    def all_subscriptions(self) -> list[Any]:
        """Everything indexed (the server's: its ``Subscription`` objects)."""
        out: list[Any] = []
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
        """The numbers nats-server reports in ``/accountz``'s ``sublist_stats`` (``Sublist.Stats``)."""
        return merged_stats([self])


def merged_stats(sublists: list[Sublist]) -> dict[str, Any]:
    """nats-server ``Sublist.Stats`` added up over several accounts' sublists (``SublistStats.add``):
    what ``/subsz`` reports, and ``/accountz`` of one account."""
    subs = cache = inserts = removes = matches = hits = max_fanout = total_fanout = 0
    for sl in sublists:
        total, top = sl.fanouts() if RUNNING_FANOUTS else sl.walk_fanouts()
        subs += sl.count
        cache += len(sl.cache)
        inserts += sl.inserts
        removes += sl.removes
        matches += sl.matches
        hits += sl.matches - sl.cache_misses
        if top > max_fanout:
            max_fanout = top
        total_fanout += total
    return {
        "num_subscriptions": subs,
        "num_cache": cache,
        "num_inserts": inserts,
        "num_removes": removes,
        "num_matches": matches,
        "cache_hit_rate": (hits / matches) if matches else 0,
        "max_fanout": max_fanout,
        "avg_fanout": (total_fanout / cache) if total_fanout else 0,
    }


class PrefixIndex:
    """One family of subjects matched by prefix (`Sublist.index_prefix`): ``entries`` maps
    ``<head><k tokens>.`` to the match result of its ``<head><k tokens>.<wildcard>``
    subscriptions; ``overlaps`` counts the other subscriptions that could match a subject of the
    family (the index answers only while there are none)."""

    __slots__ = ("entries", "head", "key_tokens", "lead", "overlaps", "pattern", "tested", "wildcard")

    def __init__(self, head: str, key_tokens: int, wildcard: str) -> None:
        self.head = head
        self.key_tokens = key_tokens
        self.wildcard = wildcard
        # Every subject of the family, as a subscription subject (for the overlap test).
        self.pattern = head + "*." * key_tokens + wildcard
        # The head's first token and its dot: a subscription whose first token is another literal
        # cannot match a subject of the family (`note`'s quick answer, before the overlap test).
        self.lead = head[: head.find(SEP) + 1]
        self.tested = 0  # subscriptions given the overlap test (the complexity tests read it)
        self.entries: dict[str, MatchResult] = {}
        self.overlaps = 0

    def key(self, subject: str) -> str:
        """``<head><k tokens>.`` of a subject of the family (starting with ``head``), "" when it is
        not one (a token missing or empty, more tokens than ``*`` takes): the trie decides."""
        pos = len(self.head)
        for _ in range(self.key_tokens):
            dot = subject.find(SEP, pos)
            if dot <= pos:
                return ""
            pos = dot + 1
        n = len(subject)
        if pos >= n or subject[pos] == SEP:
            return ""
        if self.wildcard == PWC:
            if subject.find(SEP, pos) >= 0:
                return ""
        elif subject[n - 1] == SEP or subject.find(_EMPTY_TOKEN, pos) >= 0:
            return ""
        return subject[:pos]

    def note(self, sub: Indexed, added: bool) -> None:
        """Keep the index in step with an insert (``added``) or a remove of ``sub``."""
        subject = sub.subject
        if not subject.startswith(self.lead) and not (subject and (subject[0] == PWC or subject[0] == FWC)):
            return  # another literal first token (nats-server's tokensCanMatch: no overlap)
        self.tested += 1
        if not subjects_overlap(subject, self.pattern):
            return  # cannot match a subject of the family
        head = self.head
        tokens = subject[len(head) :].split(SEP) if subject.startswith(head) else []
        k = self.key_tokens
        if (
            sub.queue
            or len(tokens) != k + 1
            or tokens[k] != self.wildcard
            or any(not t or t == PWC or t == FWC for t in tokens[:k])
        ):
            self.overlaps += 1 if added else -1
            return
        prefix = subject[:-1]
        psubs = self.entries.get(prefix, EMPTY_RESULT)[0]
        psubs = (*psubs, sub) if added else tuple(s for s in psubs if s is not sub)
        if psubs:
            self.entries[prefix] = (psubs, ())
        else:
            self.entries.pop(prefix, None)


_EMPTY_TOKEN: Final = SEP + SEP


def _node_result(node: _Node) -> Any:
    """``node.result`` typed as any object (compiled, a tuple stays one object, see ``MatchResult``)."""
    return node.result


def _result(psubs: list[Indexed], qgroups: dict[str, list[Indexed]]) -> Any:
    """A match result (typed as any object: compiled, a tuple stays one object, see ``MatchResult``)."""
    return (tuple(psubs), tuple(tuple(members) for members in qgroups.values()))


def _fanout(result: MatchResult) -> int:
    """A match result's fanout: its plain subscriptions and queue groups (nats-server's
    ``len(r.psubs) + len(r.qsubs)``). Typed tuples: compiled, each ``len`` reads the tuple's size."""
    psubs: tuple[Any, ...] = result[0]
    qsubs: tuple[Any, ...] = result[1]
    return len(psubs) + len(qsubs)


def _index(firsts: dict[str, dict[str, dict[str, None]]], subject: str) -> None:
    """Put a cached subject in its first-token bucket (see ``Sublist._firsts``)."""
    first, second = _first_tokens(subject)
    buckets = firsts.get(first)
    if buckets is None:
        firsts[first] = {second: {subject: None}}
        return
    bucket = buckets.get(second)
    if bucket is None:
        buckets[second] = {subject: None}
    else:
        bucket[subject] = None


def _first_tokens(subject: str) -> tuple[str, str]:
    """A subject's first and second token ("" when it has one token)."""
    dot = subject.find(SEP)
    if dot < 0:
        return subject, ""
    end = subject.find(SEP, dot + 1)
    return subject[:dot], subject[dot + 1 :] if end < 0 else subject[dot + 1 : end]


def _remove_identity(items: list[Indexed], sub: Indexed) -> bool:
    for i, item in enumerate(items):
        if item is sub:
            del items[i]
            return True
    return False


def _add_node(node: _Node, psubs: list[Indexed], qgroups: dict[str, list[Indexed]]) -> None:
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


def _collect(node: _Node, subject: str, pos: int, nodes: list[_Node]) -> None:
    """The nodes with subscriptions that match the tokens of ``subject`` from ``pos`` on, from
    ``node``, in nats-server's ``matchLevel`` order (``>`` then ``*`` then the literal at each
    level). Walks the subject by its dots (no token list: the caller has refused empty tokens)."""
    n = len(subject)
    while True:
        if pos > n:
            if node.psubs or node.qsubs:
                nodes.append(node)
            return
        fwc = node.fwc
        if fwc is not None and (fwc.psubs or fwc.qsubs):
            nodes.append(fwc)
        dot = subject.find(SEP, pos)
        if dot < 0:
            dot = n
        if node.pwc is not None:
            _collect(node.pwc, subject, dot + 1, nodes)
        literal = node.literal
        if not literal:
            return
        nxt = literal.get(subject[pos:dot])
        if nxt is None:
            return
        node = nxt
        pos = dot + 1
