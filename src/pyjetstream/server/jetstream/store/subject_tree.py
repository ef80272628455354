"""The stored subjects as a token trie: a wildcard filter's matching subjects by a walk over the
tokens the filter allows, not a test of every subject (nats-server ``server/stree``, the
``SubjectTree`` behind ``psim`` and each block's ``fss``).

A node is a dict from token to what follows it: an ``int`` (the subject id of a subject ending
there, with nothing below it — most subjects, so most entries cost one dict slot) or a
`_Node` (what lies below, and the id of a subject ending there, 0 when none). The tree
holds ids only; the `SubjectTable` owns names and per-subject state.

Cost of `SubjectTree.match`: the entries its walk visits — for a literal token one lookup,
for ``*`` every entry of that node, for ``>`` everything below. So ``a.b.>`` over 100k subjects
of which 10 start with ``a.b`` visits about 10 entries; ``*.x`` visits every first token, as
nats-server's walk does. ``steps`` counts the entries visited (the complexity tests read it).

Cost of `SubjectTree.insert`: a lookup of the subject's prefix (all but its last token) in
``_heads`` and one dict store — the walk of its tokens only for a prefix not seen before
(``walks`` counts those): a publish on a new subject under ``orders.eu.`` does not walk
``orders`` and ``eu`` again. `SubjectTree.remove` of such a subject, where others stay beside
it, is that lookup and one dict delete too (``HEAD_REMOVE``); else it walks and prunes.
"""

from __future__ import annotations

__all__ = ["SubjectTree"]


class _Node:
    """What lies below a token (``kids``) and the id of a subject ending at it (0: none)."""

    __slots__ = ("kids", "sid")

    def __init__(self, sid: int) -> None:
        self.sid = sid
        self.kids: dict[str, _Entry] = {}


_Entry = int | _Node

#: Prefixes `SubjectTree.insert` remembers at most.
_HEADS_MAX = 4096
#: `SubjectTree.remove` of a subject whose prefix's dict `insert` remembers, with nothing below it
#: and others beside it (nothing to prune), deletes its entry there without a walk; False: every
#: remove walks its tokens (the differential test compares the trees).
HEAD_REMOVE = True


class SubjectTree:
    """Subject → id, walked by filter (see the module docstring)."""

    __slots__ = ("_heads", "_root", "steps", "walks")

    def __init__(self) -> None:
        self._root: dict[str, _Entry] = {}
        # Where the subjects under a prefix go: ``a.b`` → the dict below ``a.b`` (all but the
        # last token), so an insert under a prefix seen before is one lookup, not a walk of its
        # tokens. Emptied when a node goes (`remove`'s prune), the one change that orphans a dict,
        # and when it holds `_HEADS_MAX` (a prefix per subject would double the tree's memory).
        self._heads: dict[str, dict[str, _Entry]] = {}
        self.steps = 0  # entries visited by match() (a counter for the complexity tests)
        self.walks = 0  # inserts and removes that walked their tokens (the step tests read it)

    def insert(self, subject: str, sid: int) -> None:
        """Add a subject (not in the tree) with its id."""
        head, dot, last = subject.rpartition(".")
        d = self._heads.get(head) if dot else self._root
        if d is None:
            heads = self._heads
            if len(heads) >= _HEADS_MAX:
                heads.clear()
            d = heads[head] = self._walk_to(head)
        e = d.get(last)
        if e is None or isinstance(e, int):
            d[last] = sid
        else:
            e.sid = sid

    def _walk_to(self, head: str) -> dict[str, _Entry]:
        """The dict below the tokens of ``head``, nodes made on the way."""
        self.walks += 1
        d = self._root
        for tok in head.split("."):
            e = d.get(tok)
            if e is None:
                n = _Node(0)
                d[tok] = n
                d = n.kids
            elif isinstance(e, int):
                n = _Node(e)
                d[tok] = n
                d = n.kids
            else:
                d = e.kids
        return d

    def remove(self, subject: str) -> None:
        """Forget a subject (in the tree); nodes left with nothing are pruned. A subject removed
        from under a remembered prefix (``_heads``) with nothing below it and another entry beside
        it leaves no node empty: its entry goes, nothing else changes (``HEAD_REMOVE``)."""
        if HEAD_REMOVE:
            head, dot, last = subject.rpartition(".")
            if dot:
                d = self._heads.get(head)
                if d is not None and len(d) > 1 and isinstance(d.get(last), int):
                    del d[last]
                    return
        self.walks += 1
        path: list[tuple[dict[str, _Entry], str]] = []
        d = self._root
        toks = subject.split(".")
        last = toks.pop()
        for tok in toks:
            path.append((d, tok))
            n = d[tok]
            assert isinstance(n, _Node)
            d = n.kids
        e = d[last]
        if isinstance(e, int):
            del d[last]
        elif e.kids:
            e.sid = 0
        else:
            self._heads.clear()
            del d[last]
        for d, tok in reversed(path):
            n = d[tok]
            assert isinstance(n, _Node)
            if n.kids:
                break
            self._heads.clear()  # (n's dict is orphaned: no insert may go there)
            if n.sid:
                d[tok] = n.sid  # nothing below any more: back to a plain entry
                break
            del d[tok]

    def clear(self) -> None:
        self._root = {}
        self._heads = {}

    def match(self, filter_subject: str) -> list[int]:
        """Ids of the subjects a filter matches (a valid filter; a literal one is a lookup)."""
        out: list[int] = []
        ftoks = filter_subject.split(".")
        self._walk(self._root, ftoks, 0, out)
        return out

    def _walk(self, d: dict[str, _Entry], ftoks: list[str], i: int, out: list[int]) -> None:
        tok = ftoks[i]
        final = i == len(ftoks) - 1
        if tok == ">" and final:  # (elsewhere ``>`` is an ordinary token, as in compile_filter)
            self._all(d, out)
            return
        if tok == "*":
            self.steps += len(d)
            for e in d.values():
                if isinstance(e, int):
                    if final:
                        out.append(e)
                elif final:
                    if e.sid:
                        out.append(e.sid)
                else:
                    self._walk(e.kids, ftoks, i + 1, out)
            return
        self.steps += 1
        hit = d.get(tok)
        if hit is None:
            return
        if isinstance(hit, int):
            if final:
                out.append(hit)
        elif final:
            if hit.sid:
                out.append(hit.sid)
        else:
            self._walk(hit.kids, ftoks, i + 1, out)

    def _all(self, d: dict[str, _Entry], out: list[int]) -> None:
        """Every id at or below the entries of ``d``."""
        stack = [d]
        while stack:
            d = stack.pop()
            self.steps += len(d)
            for e in d.values():
                if isinstance(e, int):
                    out.append(e)
                else:
                    if e.sid:
                        out.append(e.sid)
                    stack.append(e.kids)
