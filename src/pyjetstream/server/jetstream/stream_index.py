"""An account's streams by their subjects and by the bytes they reserve: what a stream's create,
update or restore checks against every other stream, found without visiting them all.

Why: nats-server's ``subjectsOverlap`` compares the new config's subjects with every subject of
every stream of the account (``SubjectsCollide``) and ``checkBytesLimits`` sums every stream's
``max_bytes`` — O(streams) a create, cheap in Go. Here the two loops cost ~4.5 µs a stream: a
KV bucket created beside 1,000 / 3,000 buckets took 3.0 / 14 ms of CPU (1.0 ms beside 100), and
a build of 10,000 buckets was quadratic. Now:

- each stream's subjects sit in a token trie (`StreamIndex.candidates`): a subject can collide
  only with those that, token by token, are equal to it or wild where it is not (a token that
  starts with ``*`` or ``>`` — ``SubjectsCollide``'s ``tokensCanMatch`` and
  ``isSubsetMatchTokenized`` look no further than that), so the walk follows its own token and
  the wild ones at each level and takes a whole subtree where it is wild itself; each stream
  found that way is then compared as before (`subjects_overlap`): the same answers, from the
  few streams that can give one;
- the reserved bytes are kept per storage type as streams come, change and go
  (`StreamIndex.reserved`).

`INDEXED` off: every stream visited, as before (the differential test proves both equal).
"""

from __future__ import annotations

from collections import Counter

from pyjetstream.api.enums import StorageType
from pyjetstream.api.models_stream import StreamConfig

__all__ = ["INDEXED", "StreamIndex"]

#: Overlap candidates from the subject trie and reservations from running sums; off: every
#: stream visited (`api_stream._check_overlap`, `JetStreamEngine.check_reservation`).
INDEXED = True

SEP = "."


def _wild(token: str) -> bool:
    """A token that ``SubjectsCollide`` lets match another (``*``, ``>``, or starting so)."""
    return bool(token) and token[0] in "*>"


class _Node:
    __slots__ = ("below", "children", "wild")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.wild: dict[str, _Node] = {}  # the children whose token is wild (`_wild`)
        self.below: Counter[str] = Counter()  # stream name -> its subjects ending here or deeper


class StreamIndex:
    """The streams of one engine by subject (a token trie) and their reservations."""

    def __init__(self) -> None:
        self._root = _Node()
        self._reserved: Counter[StorageType] = Counter()
        #: The server's reservations (memory, file: `server_jetstream.ServerJetStream.reserved`), kept with
        #: this index's own while its engine is one of the server's.
        self.server_reserved: list[int] | None = None
        self.visited = 0  # trie nodes a lookup went through (a step count for tests)

    # --- keeping it -----------------------------------------------------------------------

    def add(self, name: str, cfg: StreamConfig) -> None:
        for subject in set(cfg.subjects or ()):
            node = self._root
            node.below[name] += 1
            for token in subject.split(SEP):
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = _Node()
                    if _wild(token):
                        node.wild[token] = child
                node = child
                node.below[name] += 1
        if cfg.max_bytes > 0:
            self._reserve(cfg.storage, cfg.max_bytes)

    def remove(self, name: str, cfg: StreamConfig) -> None:
        for subject in set(cfg.subjects or ()):
            path = [self._root]
            for token in subject.split(SEP):
                path.append(path[-1].children[token])
            for parent, node, token in zip(path, path[1:], subject.split(SEP), strict=False):
                if node.below[name] == 1 and len(node.below) == 1:
                    del parent.children[token]  # (nothing else below: the branch goes)
                    parent.wild.pop(token, None)
                    break
            for node in path:
                node.below[name] -= 1
                if not node.below[name]:
                    del node.below[name]
        if cfg.max_bytes > 0:
            self._reserve(cfg.storage, -cfg.max_bytes)

    def _reserve(self, storage: StorageType, delta: int) -> None:
        self._reserved[storage] += delta
        if self.server_reserved is not None:
            self.server_reserved[0 if storage == StorageType.MEMORY else 1] += delta

    def emptied(self) -> StreamIndex:
        """A new empty index in this one's place (its engine stopped): the server's reservations
        lose this one's."""
        fresh = StreamIndex()
        shared = fresh.server_reserved = self.server_reserved
        if shared is not None:
            shared[0] -= self._reserved[StorageType.MEMORY]
            shared[1] -= self._reserved[StorageType.FILE]
        return fresh

    def replace(self, name: str, old: StreamConfig, new: StreamConfig) -> None:
        """A stream's config changed (an update)."""
        self.remove(name, old)
        self.add(name, new)

    # --- asking it ------------------------------------------------------------------------

    def reserved(self, storage: StorageType) -> int:
        """The sum of the ``max_bytes`` of the streams of ``storage`` that set one."""
        return self._reserved[storage]

    def candidates(self, subject: str) -> set[str]:
        """The streams with a subject that may collide with ``subject`` (a superset of those
        that do: see the module's note)."""
        found: set[str] = set()
        node: _Node | None = self._root
        for token in subject.split(SEP):
            if node is None:
                return found
            self.visited += 1
            if _wild(token):
                break  # (anything below may collide: taken whole)
            for child in node.wild.values():
                found.update(child.below)
            node = node.children.get(token)
        if node is not None:
            found.update(node.below)  # (where the subject ends, or is wild: all below)
        return found
