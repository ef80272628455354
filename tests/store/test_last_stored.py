"""A read from the last message stored on (a consumer at the end of its stream: one message a pass) is
answered with that message as it was stored (``IndexedStore._last``, switch ``indexed.LAST_STORED``) while
it is still the stream's last and live; otherwise the index is walked and the record read back.

- On = off: random stores (one by one and in runs, with and without headers, on a few subjects), removals
  (the last message among them), erases, purges (whole, by subject, keeping some), compactions,
  truncations and skips, over every store kind; after each step the reads from the last sequence and
  around it, under no filter, the last message's subject, another subject and a wildcard, are the same
  with the switch on and off.
- Steps: such a read walks no index (``SeqIndex.next_slots`` not called) and reads no record, at 1,000
  and at 100,000 messages; off, one walk a read.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.store.conftest import StoreFactory

from pyjetstream.server.jetstream.store import indexed
from pyjetstream.server.jetstream.store.base import ErrStoreMsgNotFound, StoreError
from pyjetstream.server.jetstream.store.seqindex import SeqIndex

SUBJECTS = ["a.1", "a.2", "b.1"]
FILTERS = ["", ">", "a.1", "a.2", "b.1", "a.*", "c.9"]


def _reads(store: Any, monkeypatch: pytest.MonkeyPatch, on: bool) -> list[Any]:
    """The reads from the last sequence and around it under every filter, the switch ``on`` or off."""
    monkeypatch.setattr(indexed, "LAST_STORED", on)
    last = store.fast_state().last_seq
    out = []
    for f in FILTERS:
        for seq in (last - 1, last, last + 1):
            for want in (1, 3):
                out.append(store.load_next_msgs(f, max(seq, 1), want, 1 << 20))
    return out


def _step(store: Any, rng: random.Random) -> None:
    """One random change of ``store``."""
    op = rng.random()
    last = store.fast_state().last_seq
    hdr = b"NATS/1.0\r\nK: %d\r\n\r\n" % rng.randrange(100) if rng.random() < 0.3 else b""
    subject = rng.choice(SUBJECTS)
    try:
        if op < 0.45:
            store.store_msg(subject, hdr, b"p%d" % rng.randrange(10**6))
        elif op < 0.6:
            n = rng.randrange(1, 6)
            subjects = [rng.choice(SUBJECTS) for _ in range(n)] if rng.random() < 0.5 else [subject] * n
            hdrs = [hdr if rng.random() < 0.5 else b"" for _ in range(n)]
            with store.batch():
                if store.run_fits(subjects, 64, n * 64):
                    store.store_run(subjects, hdrs, [b"r%d" % i for i in range(n)])
        elif op < 0.72:
            store.remove_msg(last if rng.random() < 0.7 else rng.randrange(1, last + 1))
        elif op < 0.76:
            store.erase_msg(last)
        elif op < 0.8:
            store.purge()
        elif op < 0.85:
            store.purge_ex(subject=subject, keep=rng.randrange(2))
        elif op < 0.89:
            store.compact(rng.randrange(1, last + 2))
        elif op < 0.94 and last > max(store.fast_state().first_seq - 1, 0):
            store.truncate(rng.randrange(max(store.fast_state().first_seq - 1, 0), last))
        else:
            store.skip_msg()
    except (ErrStoreMsgNotFound, StoreError):
        pass


@pytest.mark.parametrize("seed", range(4))
def test_reads_from_the_last_stored_are_the_same_on_and_off(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    store = make_store()
    for _ in range(250):
        _step(store, rng)
        assert _reads(store, monkeypatch, True) == _reads(store, monkeypatch, False)


def _walks(make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, msgs: int, on: bool) -> int:
    """Index walks while 200 messages are each stored and then read from their sequence on (a consumer
    at the end of a stream of ``msgs`` messages, unfiltered and on the message's subject)."""
    monkeypatch.setattr(indexed, "LAST_STORED", on)
    store = make_store()
    store.store_run([f"s.{i % 100}" for i in range(msgs)], [b""] * msgs, [b"x"] * msgs)
    walks = [0]
    real = SeqIndex.next_slots

    def counted(self: SeqIndex, *args: Any) -> Any:
        walks[0] += 1
        return real(self, *args)

    with monkeypatch.context() as m:
        m.setattr(SeqIndex, "next_slots", counted)
        for i in range(200):
            subject = f"s.{i % 7}"
            seq, _ = store.store_msg(subject, b"", b"%d" % i)
            for f in ("", subject):
                got = store.load_next_msgs(f, seq, 256, 1 << 20)
                assert [(m[0], m[1], m[4]) for m in got] == [(subject, seq, b"%d" % i)]
    return walks[0]


@pytest.mark.parametrize("store_kind", ["memory", "file"])
def test_a_read_of_the_last_stored_walks_no_index(make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _walks(make_store, monkeypatch, 1_000, True) == 0
    assert _walks(make_store, monkeypatch, 100_000, True) == 0
    assert _walks(make_store, monkeypatch, 1_000, False) == 400  # (off: a walk a read)
