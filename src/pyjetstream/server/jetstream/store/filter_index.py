"""The filters of a subject table's cached filter matches as a token trie, so that a subject
stored for the first time finds the cached matches it belongs to by a walk over its
tokens, not a test against every cached filter (nats-server ``Sublist.Match``: a subject against
the filters of its subscriptions).

`SubjectTable` keeps up to 64 `FilterMatch`es (a consumer's filter or set of filters, the ids of
the subjects they match); each new subject had to be tested against every filter of every one of
them — 63 regular-expression calls a new subject beside one consumer with 1,000
``filter_subjects``, whose per-filter pending counts fill the cache. Here a filter's tokens lead
down the trie to the keys (the cached filter sets) holding it: a literal token one dict lookup,
``*`` any one token, a last ``>`` one or more. ``steps`` counts the nodes a match visits.
"""

from __future__ import annotations

__all__ = ["FilterIndex", "Key"]

#: A cached match's key: its filters.
Key = tuple[str, ...]

_PWC, _FWC = "*", ">"


class _Node:
    """The keys whose filter ends at this token (``keys``) or goes on with a last ``>`` (``tail``)
    and what follows it (``kids``)."""

    __slots__ = ("keys", "kids", "tail")

    def __init__(self) -> None:
        self.kids: dict[str, _Node] = {}
        self.keys: set[Key] = set()
        self.tail: set[Key] = set()

    def empty(self) -> bool:
        return not (self.kids or self.keys or self.tail)


class FilterIndex:
    """Filter → the keys holding it, walked by subject (see the module docstring)."""

    __slots__ = ("_root", "steps")

    def __init__(self) -> None:
        self._root = _Node()
        self.steps = 0

    def add(self, filter_subject: str, key: Key) -> None:
        """``key`` holds ``filter_subject`` (a valid filter; a ``>`` counts only as its last token,
        as `pyjetstream.protocol.subjects.compile_filter` reads it)."""
        tokens = filter_subject.split(".")
        node = self._root
        last = len(tokens) - 1
        for i, tok in enumerate(tokens):
            if tok == _FWC and i == last:
                node.tail.add(key)
                return
            nxt = node.kids.get(tok)
            if nxt is None:
                nxt = node.kids[tok] = _Node()
            node = nxt
        node.keys.add(key)

    def discard(self, filter_subject: str, key: Key) -> None:
        """``key`` no longer holds ``filter_subject``; nodes left empty go."""
        tokens = filter_subject.split(".")
        path: list[tuple[_Node, str]] = []
        node = self._root
        last = len(tokens) - 1
        for i, tok in enumerate(tokens):
            if tok == _FWC and i == last:
                node.tail.discard(key)
                break
            nxt = node.kids.get(tok)
            if nxt is None:
                return
            path.append((node, tok))
            node = nxt
        else:
            node.keys.discard(key)
        while path and node.empty():
            parent, tok = path.pop()
            del parent.kids[tok]
            node = parent

    def match(self, subject: str) -> set[Key]:
        """The keys holding a filter that matches ``subject`` (a valid literal subject)."""
        found: set[Key] = set()
        nodes = [self._root]
        for tok in subject.split("."):
            if not nodes:
                return found
            following: list[_Node] = []
            for node in nodes:
                self.steps += 1
                if node.tail:
                    found |= node.tail
                kids = node.kids
                if kids:
                    nxt = kids.get(tok)
                    if nxt is not None:
                        following.append(nxt)
                    nxt = kids.get(_PWC)
                    if nxt is not None:
                        following.append(nxt)
            nodes = following
        for node in nodes:
            self.steps += 1
            found |= node.keys
        return found
