"""The sublist's prefix index as the server sets it for inboxes (``_INBOX.<id>.*``): reply subjects
``_INBOX.<id>.<n>`` match exactly as through the trie, whatever other subscriptions (overlapping wildcards, literals, queue groups) come
and go, and a stream of unique replies does not fill the match cache."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.server.sublist import EMPTY_RESULT, Sublist
from pyjetstream.server.subscription import Subscription

INBOX_SUBS = ["_INBOX.abc.*", "_INBOX.abc.*", "_INBOX.xyz.*"]
OTHER_SUBS = [
    ">",
    "_INBOX.>",
    "*.*.*",
    "*.>",
    "_INBOX.*.*",
    "_INBOX.abc.>",
    "_INBOX.abc.7",
    "_INBOX.abc",
    "_INBOX.*",
    "_INBOX.abc.7.x",
    "other.*.*",
]
REPLIES = [
    "_INBOX.abc.7",
    "_INBOX.abc.8",
    "_INBOX.xyz.1",
    "_INBOX.zzz.1",
    "_INBOX.abc",
    "_INBOX.abc.7.x",
    "_INBOX.abc.",
    "_INBOX..7",
    "_INBOX.abc.*",
]


def _sublist() -> Sublist:
    """A sublist with the server's prefix index for these subjects (``accounts.PREFIX_INDEXES``)."""
    sl = Sublist()
    sl.index_prefix('_INBOX.', 1, '*')
    return sl


def _expected(subs: list[Subscription], subject: str, queue: bool) -> list[str]:
    if "" in subject.split("."):
        return []
    return sorted(s.sid for s in subs if bool(s.queue) == queue and subject_matches(s.subject, subject))


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.sampled_from(INBOX_SUBS + OTHER_SUBS), st.sampled_from(["", "", "q"]), st.booleans()),
        max_size=12,
    )
)
def test_reply_subjects_match_as_the_trie(ops: list[tuple[str, str, bool]]) -> None:
    sl = _sublist()
    live: list[Subscription] = []
    for n, (subject, queue, remove) in enumerate(ops):
        if remove and live:
            sl.remove(live.pop(0))
        else:
            sub = Subscription(subject, str(n), queue)
            sl.insert(sub)
            live.append(sub)
        for reply in REPLIES:
            psubs, qgroups = sl.match(reply)
            assert sorted(s.sid for s in psubs) == _expected(live, reply, False), (reply, [s.subject for s in live])
            assert sorted(s.sid for g in qgroups for s in g) == _expected(live, reply, True)


def test_unique_replies_are_not_cached() -> None:
    sl = _sublist()
    requester = Subscription("_INBOX.abc.*", "1")
    sl.insert(requester)
    for n in range(100):
        assert sl.match(f"_INBOX.abc.{n}") == ((requester,), ())
    assert sl.match("_INBOX.other.1") == EMPTY_RESULT
    assert sl.cache == {}
    sl.remove(requester)
    assert sl.match("_INBOX.abc.1") == EMPTY_RESULT
