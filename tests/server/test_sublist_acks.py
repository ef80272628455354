"""The sublist's prefix index as the server sets it for acks (``$JS.ACK.<s>.<c>.>``): JetStream ack
subjects match exactly as through the trie, whatever other subscriptions (overlapping wildcards,
literals, queue groups) come and go."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.server.sublist import EMPTY_RESULT, Sublist
from pyjetstream.server.subscription import Subscription

ACK_SUBS = ["$JS.ACK.S.C.>", "$JS.ACK.S.D.>", "$JS.ACK.T.C.>"]
OTHER_SUBS = [
    ">",
    "$JS.>",
    "*.ACK.>",
    "$JS.*.S.C.>",
    "$JS.ACK.*.C.>",
    "$JS.ACK.S.C.1.*.>",
    "$JS.ACK.x",
    "*",
    "$JS",
]
ACK_SUBJECTS = [
    "$JS.ACK.S.C.1.2.3.4.5",
    "$JS.ACK.S.D.1.9.3.4.0",
    "$JS.ACK.T.C.x",
    "$JS.ACK.S.C",
    "$JS.ACK.S.C.",
    "$JS.ACK..C.1",
    "$JS.ACK.S..1",
    "$JS.ACK.S.C.1..2",
    "$JS.ACK.U.V.1.2.3.4.5",
    "$JS.ACK.x",
]


def _sublist() -> Sublist:
    """A sublist with the server's prefix index for these subjects (``accounts.PREFIX_INDEXES``)."""
    sl = Sublist()
    sl.index_prefix('$JS.ACK.', 2, '>')
    return sl


def _expected(subs: list[Subscription], subject: str) -> list[str]:
    if "" in subject.split("."):
        return []
    return sorted(s.sid for s in subs if not s.queue and subject_matches(s.subject, subject))


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(st.sampled_from(ACK_SUBS + OTHER_SUBS), st.sampled_from(["", "q"]), st.booleans()),
        max_size=12,
    )
)
def test_ack_subjects_match_as_the_trie(ops: list[tuple[str, str, bool]]) -> None:
    sl = _sublist()
    live: list[Subscription] = []
    for n, (subject, queue, remove) in enumerate(ops):
        if remove and live:
            sl.remove(live.pop(0))
        else:
            sub = Subscription(subject, str(n), queue)
            sl.insert(sub)
            live.append(sub)
        for ack in ACK_SUBJECTS:
            psubs, qgroups = sl.match(ack)
            assert sorted(s.sid for s in psubs) == _expected(live, ack), (ack, [s.subject for s in live])
            members = sorted(s.sid for group in qgroups for s in group)
            want_q = sorted(
                s.sid
                for s in live
                if s.queue and "" not in ack.split(".") and subject_matches(s.subject, ack)
            )
            assert members == want_q


def test_ack_subjects_are_not_cached() -> None:
    sl = _sublist()
    consumer = Subscription("$JS.ACK.S.C.>", "1")
    sl.insert(consumer)
    assert sl.match("$JS.ACK.S.C.1.2.3.4.5") == ((consumer,), ())
    assert sl.match("$JS.ACK.S.X.1.2.3.4.5") == EMPTY_RESULT
    assert sl.cache == {}
    sl.remove(consumer)
    assert sl.match("$JS.ACK.S.C.1.2.3.4.5") == EMPTY_RESULT
