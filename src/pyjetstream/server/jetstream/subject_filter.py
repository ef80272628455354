"""A consumer's subject filter(s), matched fast on the delivery and ack paths."""

from __future__ import annotations

from pyjetstream.protocol.subjects import has_wildcard, subject_matches

__all__ = ["SubjectFilter"]

# Distinct subjects remembered per filter before the memo is reset (KV buckets can have many keys).
_MEMO_MAX = 8192


class SubjectFilter:
    """Matches subjects against zero (everything), one or several filters.

    Results for wildcard filters are memoised per subject: streams tend to reuse a small set of
    subjects, and a dict lookup is much cheaper than token-by-token matching.
    """

    __slots__ = ("_literal", "_memo", "filters", "match_all", "single")

    def __init__(self, filters: list[str]) -> None:
        self.filters = [f for f in filters if f]
        self.match_all = not self.filters or ">" in self.filters
        # The one filter to hand the store ("" for all); None when there are several.
        self.single: str | None = (
            "" if self.match_all else (self.filters[0] if len(self.filters) == 1 else None)
        )
        self._literal = self.single if self.single and not has_wildcard(self.single) else None
        self._memo: dict[str, bool] = {}

    def matches(self, subject: str) -> bool:
        if self.match_all:
            return True
        if self._literal is not None:
            return subject == self._literal
        memo = self._memo
        hit = memo.get(subject)
        if hit is None:
            hit = any(subject_matches(f, subject) for f in self.filters)
            if len(memo) >= _MEMO_MAX:
                memo.clear()
            memo[subject] = hit
        return hit

    def store_filters(self) -> list[str]:
        """The filters to query the store with (``[">"]`` for everything)."""
        return [">"] if self.match_all else list(self.filters)
