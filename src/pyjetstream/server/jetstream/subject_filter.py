"""A consumer's subject filter(s), matched fast on the delivery and ack paths.

Several filters are matched by a walk of their trie (a `GenericSublist`, as nats-server keeps a
consumer's ``filters`` in a ``gsl`` sublist): a subject asked for the first time — each message
of an ever-new subject that a limit removes, or that an ack on an interest stream asks about —
costs its tokens, not a test of each of up to thousands of ``filter_subjects``.
"""

from __future__ import annotations

from pyjetstream.protocol.gsl import GenericSublist, InvalidSubject
from pyjetstream.protocol.subjects import has_wildcard, subject_matches

__all__ = ["INDEXED", "SubjectFilter"]

#: Several filters matched through their trie; off: each filter tested in turn (the differential
#: test in tests/jetstream/test_subject_filter.py proves both give the same answers).
INDEXED = True

# Distinct subjects remembered per filter before the memo is reset (KV buckets can have many keys).
_MEMO_MAX = 8192


class SubjectFilter:
    """Matches subjects against zero (everything), one or several filters.

    Results for wildcard filters are memoised per subject: streams tend to reuse a small set of
    subjects, and a dict lookup is much cheaper than token-by-token matching.
    """

    __slots__ = ("_literal", "_memo", "_trie", "filters", "match_all", "single")

    def __init__(self, filters: list[str]) -> None:
        self.filters = [f for f in filters if f]
        self.match_all = not self.filters or ">" in self.filters
        # The one filter to hand the store ("" for all); None when there are several.
        self.single: str | None = (
            "" if self.match_all else (self.filters[0] if len(self.filters) == 1 else None)
        )
        self._literal = self.single if self.single and not has_wildcard(self.single) else None
        self._memo: dict[str, bool] = {}
        self._trie: GenericSublist[str] | None = None
        if len(self.filters) > 1 and not self.match_all:
            trie: GenericSublist[str] = GenericSublist()
            try:
                for f in self.filters:
                    trie.insert(f, f)
            except InvalidSubject:
                pass  # (not a valid filter: tested in turn, as the config's check will refuse it)
            else:
                self._trie = trie

    def matches(self, subject: str) -> bool:
        if self.match_all:
            return True
        if self._literal is not None:
            return subject == self._literal
        memo = self._memo
        hit = memo.get(subject)
        if hit is None:
            trie = self._trie
            if trie is not None and INDEXED:
                hit = trie.has_interest(subject)
            else:
                hit = any(subject_matches(f, subject) for f in self.filters)
            if len(memo) >= _MEMO_MAX:
                memo.clear()
            memo[subject] = hit
        return hit

    def store_filters(self) -> list[str]:
        """The filters to query the store with (``[">"]`` for everything)."""
        return [">"] if self.match_all else list(self.filters)
