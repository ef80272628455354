"""A generic subject index: values kept under filter subjects, found by a literal subject
(nats-server ``server/gsl``'s ``GenericSublist``: ``Insert``, ``Remove``, ``Match``,
``HasInterest``).

Why a second trie beside the server's ``Sublist``: that one routes messages — a match cache, queue
groups, shared results, prefix indexes, statistics — and lives in the server, which the stores
may not import. Everything else that asks "which of these filters take this subject" wants none
of that: a store's cached filter matches (which a new subject joins), an account's wildcard
mapping sources, a stream's consumers by filter, a consumer's several filters, an importer's
stream imports. nats-server keeps the same split (``sublist.go`` for routing; ``gsl`` for a
consumer's filters, the JetStream API's info subjects, MQTT permissions), and so does this: one
trie of filters, at the bottom layer, for all of them.

The rules are nats-server's: a filter's token ``*`` takes any one token, a last ``>`` one or more;
a subject token ``*`` or ``>`` (a subscription's subject matched as nats-server matches one) is
taken only by ``*`` and ``>`` filters. A subject with
an empty token matches nothing. A value is held at most once per filter (``subs map[T]string``)
and `match` gives it once per filter of its that takes the subject (nats-server's ``Match`` calls
back once per filter): a caller whose values may sit under overlapping filters takes them as a set.

``steps`` counts the nodes whose children the lookups look at: the step counter the complexity
tests read.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Generic, TypeVar

from pyjetstream.protocol.subjects import FWC, PWC, SEP

__all__ = ["GenericSublist", "InvalidSubject"]

T = TypeVar("T", bound=Hashable)


class InvalidSubject(ValueError):
    """A filter with an empty token or a token after ``>`` (nats-server ``gsl.ErrInvalidSubject``)."""


class _Node(Generic[T]):
    """The values whose filter ends at this token (``values``) or goes on with a last ``>``
    (``tail``), and what follows it: a literal token (``kids``) or ``*`` (``pwc``)."""

    __slots__ = ("kids", "pwc", "tail", "values")

    def __init__(self) -> None:
        self.kids: dict[str, _Node[T]] = {}
        self.pwc: _Node[T] | None = None
        # (dicts as sets in insertion order: matches come out in it)
        self.values: dict[T, None] = {}
        self.tail: dict[T, None] = {}

    def empty(self) -> bool:
        return not (self.kids or self.pwc or self.values or self.tail)

    def child(self, token: str) -> _Node[T] | None:
        """The node below ``token``, if any."""
        return self.pwc if token == PWC else self.kids.get(token)

    def made(self, token: str) -> _Node[T]:
        """The node below ``token``, made when missing."""
        nxt = self.child(token)
        if nxt is None:
            nxt = _Node()
            if token == PWC:
                self.pwc = nxt
            else:
                self.kids[token] = nxt
        return nxt


class GenericSublist(Generic[T]):
    """Filter subjects → the values held under them, walked by a literal subject (see the module
    docstring). No cache: a caller that asks the same subject again keeps its own answers."""

    __slots__ = ("_root", "count", "steps")

    def __init__(self) -> None:
        self._root: _Node[T] = _Node()
        self.count = 0  # (filter, value) pairs held
        self.steps = 0

    def __len__(self) -> int:
        return self.count

    def insert(self, subject: str, value: T) -> None:
        """Hold ``value`` under the filter ``subject`` (raises `InvalidSubject`)."""
        tokens, tail = _split(subject)
        if "" in tokens or FWC in tokens:
            raise InvalidSubject(subject)
        node = self._root
        for token in tokens:
            node = node.made(token)
        held = node.tail if tail else node.values
        if value not in held:
            held[value] = None
            self.count += 1

    def remove(self, subject: str, value: T) -> bool:
        """``value`` no longer held under ``subject``; False when it was not. Nodes left empty go."""
        tokens, tail = _split(subject)
        path: list[tuple[_Node[T], str]] = []
        node = self._root
        for token in tokens:
            nxt = node.child(token)
            if nxt is None:
                return False
            path.append((node, token))
            node = nxt
        held = node.tail if tail else node.values
        if held.pop(value, _ABSENT) is _ABSENT:
            return False
        self.count -= 1
        while path and node.empty():
            parent, token = path.pop()
            if token == PWC:
                parent.pwc = None
            else:
                del parent.kids[token]
            node = parent
        return True

    def match(self, subject: str) -> list[T]:
        """The values held under a filter that takes ``subject``, once per filter: level by level
        (``>`` filters ending at a level before those going deeper), each node's in the order
        they were inserted. The walk keeps the sets that hold them: a ``>`` tail where it is,
        ``*`` and the literal token onwards — one node at a time (no list of them) until a
        ``*`` and the literal token both go on (`_branched`)."""
        tokens = subject.split(SEP)
        if "" in tokens:
            return []  # (nats-server: a subject with an empty token matches nothing)
        found: list[dict[T, None]] = []
        node = self._root
        n = len(tokens)
        i = 0
        while i < n:
            if node.tail:
                found.append(node.tail)
            nxt = node.kids.get(tokens[i])
            pwc = node.pwc
            i += 1
            if pwc is not None:
                if nxt is not None:
                    self.steps += i
                    return self._branched([pwc, nxt], tokens, i, found)
                node = pwc
            elif nxt is not None:
                node = nxt
            else:
                self.steps += i
                return _values(found)
        self.steps += n
        if node.values:
            found.append(node.values)
        return _values(found)

    def _branched(self, level: list[_Node[T]], tokens: list[str], i: int, found: list[dict[T, None]]) -> list[T]:
        """`match` on from ``tokens[i]`` at a level of several nodes."""
        for token in tokens[i:]:
            self.steps += len(level)
            below: list[_Node[T]] = []
            for node in level:
                if node.tail:
                    found.append(node.tail)
                pwc = node.pwc
                if pwc is not None:
                    below.append(pwc)
                nxt = node.kids.get(token)
                if nxt is not None:
                    below.append(nxt)
            if not below:
                return _values(found)
            level = below
        for node in level:
            if node.values:
                found.append(node.values)
        return _values(found)

    def has_interest(self, subject: str) -> bool:
        """Some filter takes ``subject`` (nats-server ``HasInterest``)."""
        return bool(self.match(subject))


#: What `dict.pop` gives for a value not held.
_ABSENT: Final = object()


def _split(subject: str) -> tuple[list[str], bool]:
    """A filter's tokens but a last ``>``, and whether it had one (its values are the ``tail``
    of the node the other tokens lead to)."""
    tokens = subject.split(SEP)
    if tokens[-1] == FWC:
        tokens.pop()
        return tokens, True
    return tokens, False


def _values(found: list[dict[T, None]]) -> list[T]:
    """The values of the sets a match found (not merged into one set: a value comes once per
    filter, and a dict's or set's merge costs several times a list's extend)."""
    if not found:
        return []
    out = list(found[0])
    if len(found) > 1:
        for held in found[1:]:
            out.extend(held)
    return out
