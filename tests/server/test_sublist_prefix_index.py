"""The sublist's prefix index is generic: any family ``<head><k tokens>.<wildcard>`` that a server
registers matches every subject exactly as the trie alone does, whatever subscriptions come and go
(the ack and inbox families have their own tests)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.server.sublist import Sublist
from pyjetstream.server.subscription import Subscription

TOKENS = ["p", "a", "b", "*", ">"]
SUBJECT_TOKENS = ["p", "a", "b", ""]


def _subjects(tokens: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), min_size=1, max_size=max_size).map(".".join)


@settings(max_examples=300)
@given(
    st.integers(1, 2),
    st.sampled_from(["*", ">"]),
    st.lists(st.tuples(_subjects(TOKENS, 5), st.sampled_from(["", "", "q"]), st.booleans()), max_size=10),
    st.lists(_subjects(SUBJECT_TOKENS, 6), min_size=1, max_size=8),
)
def test_any_family_matches_as_the_trie(
    key_tokens: int, wildcard: str, ops: list[tuple[str, str, bool]], published: list[str]
) -> None:
    indexed = Sublist()
    indexed.index_prefix("p.", key_tokens, wildcard)
    plain = Sublist()
    live: list[Subscription] = []
    for n, (subject, queue, remove) in enumerate(ops):
        if ">" in subject.split(".")[:-1]:
            continue  # not a valid subscription subject
        if remove and live:
            sub = live.pop(0)
            indexed.remove(sub)
            plain.remove(sub)
        else:
            sub = Subscription(subject, str(n), queue)
            indexed.insert(sub)
            plain.insert(sub)
            live.append(sub)
        for subject in published:
            psubs, qsubs = indexed.match(subject)
            want_p, want_q = plain.match(subject)
            assert sorted(s.sid for s in psubs) == sorted(s.sid for s in want_p), (subject, [s.subject for s in live])
            assert sorted(s.sid for g in qsubs for s in g) == sorted(s.sid for g in want_q for s in g)
            if "" not in subject.split("."):
                assert sorted(s.sid for s in psubs) == sorted(
                    s.sid for s in live if not s.queue and subject_matches(s.subject, subject)
                )
