"""Issue 24, dimension 5: writing a consumer's state with many acks pending costs what changed,
not what is pending, and runs the same Python steps as with few (embedded server, steps and
entries counted, not timed).

nats-server writes the whole state each time (``writeState``, ``encodeConsumerState``, at most
every 100 ms). The embedded server packs a whole state in one C call (``pack_consumer_state``: no
Python per pending ack) and, from ``JOURNAL_MIN`` pending acks, writes only the entries that
changed since the last write (``pack_consumer_changes``, appended to the store's journal) while
they are fewer than the pending acks. Counted here: the entries a write holds, and the Python
lines, calls and returns it runs (``sys.settrace``: C code raises no such events), at two sizes of
pending acks; and, with the journal on and off, the state read back from the files after each
write is the consumer's (the switch, ``JOURNAL_MIN``, proven not to change what is persisted).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import embedded
from tests.support.steps import counting

from pyjetstream.server.jetstream import consumer_persistence, delivery_state
from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.store.consumer_journal import PackedChanges
from pyjetstream.server.jetstream.store.consumer_store import FileConsumerStore, PackedState

SMALL, LARGE = 400, 4000
WAIT = 60_000_000_000


@pytest.fixture(autouse=True)
def _in_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write in the event loop (none in the writer thread beside the test's own)."""
    monkeypatch.setattr(consumer_persistence, "STATE_INLINE_MAX", 1 << 40)


async def _fetch(nc: RawClient, server: Any, n: int, inbox: str) -> Any:
    sub = nc.subscribe(inbox)
    nc.pull("W", "C", inbox, {"batch": n, "expires": 30_000_000_000})
    msgs = await sub.collect(n, timeout=30)
    return server.jetstream.streams["W"].consumers["C"], msgs


def _write(consumer: Consumer) -> tuple[PackedState | PackedChanges, int]:
    """One state write, as the writer makes it: what it wrote and its Python steps."""
    with counting() as steps:
        packed = consumer.state.packed()
        assert consumer.writer._write(packed)
    return packed, steps.count


def _read_back(consumer: Consumer) -> None:
    """The files hold the consumer's state (slot and journal, as a restart reads them)."""
    store = consumer.writer.store
    assert isinstance(store, FileConsumerStore)
    assert FileConsumerStore(store.directory, "C").state() == consumer.state.snapshot()


async def _acks_written(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """``n`` pending, a whole write, 50 acks at random, a write: (entries in it, its steps, the
    whole write's steps)."""
    monkeypatch.setattr(delivery_state, "JOURNAL_MIN", 100)
    # No timed write (`dirty`'s, 100 ms on): acks spread over several reads under load would be
    # split between it and the write counted here.
    monkeypatch.setattr(consumer_persistence, "STATE_FLUSH_DELAY", 3600.0)
    monkeypatch.setattr(consumer_persistence, "STATE_FLUSH_MAX", 3600.0)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("W", ["w.>"], storage="file")
            for i in range(n):
                nc.publish("w.x", b"%d" % i)
            await nc.flush()
            resp = await nc.add_consumer("W", "C", durable_name="C", max_ack_pending=-1, ack_wait=WAIT)
            assert "error" not in resp, resp
            consumer, msgs = await _fetch(nc, server, n, "_W.x")
            consumer.state.changed = None  # (a timed write may have come first: this one is whole)
            whole, whole_steps = _write(consumer)
            assert isinstance(whole, PackedState) and whole.npend == n
            for m in random.Random(n).sample(msgs, 50):
                nc.publish(m.reply, b"+ACK")
            await nc.flush()

            async def acked() -> bool:
                return len(consumer.state.pending) == n - 50

            await wait_for(acked, timeout=30)
            changes, steps = _write(consumer)
            assert isinstance(changes, PackedChanges)
            _read_back(consumer)
            return changes.nchg, steps, whole_steps
        finally:
            await nc.close()


async def test_a_write_holds_what_changed_not_what_is_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _acks_written(SMALL, monkeypatch)
    large = await _acks_written(LARGE, monkeypatch)
    assert small[0] == large[0] == 50, (small, large)  # one entry per ack
    # No Python per entry: the same steps (but for a step or two of the floor cursor).
    assert large[1] <= small[1] + 10 and large[2] <= small[2] + 10, (small, large)


@pytest.mark.parametrize("journal", [True, False])
async def test_what_is_written_is_the_consumers_state(monkeypatch: pytest.MonkeyPatch, journal: bool) -> None:
    """Acks, NAKs and their redeliveries, progress, new deliveries and ack-wait expiries at
    random, a write after each round: the files read back as the consumer's state, journal or
    not (`JOURNAL_MIN`: the switch)."""
    monkeypatch.setattr(delivery_state, "JOURNAL_MIN", 100 if journal else 1 << 40)
    monkeypatch.setattr(delivery_state, "JOURNAL_WEIGHT", 1)  # (rounds that change a fifth: journaled)
    rng = random.Random(7)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("W", ["w.>"], storage="file")
            for i in range(2000):
                nc.publish("w.x", b"%d" % i)
            await nc.flush()
            resp = await nc.add_consumer("W", "C", durable_name="C", max_ack_pending=-1, ack_wait=2_000_000_000)
            assert "error" not in resp, resp
            consumer, msgs = await _fetch(nc, server, 600, "_W.r0")
            kinds = []
            for rnd in range(1, 7):
                live = [m for m in msgs if m.stream_seq in consumer.state.pending]
                for m in rng.sample(live, len(live) // 5):
                    reply = rng.choice([b"+ACK", b"+ACK", b"-NAK", b"+WPI"])
                    nc.publish(m.reply, reply)
                await nc.flush()
                if rnd == 4:  # the ack wait passes for what was not acked or progressed

                    async def expired() -> bool:
                        return len(consumer.state.rdq) > 100

                    await wait_for(expired, timeout=30)
                _, got = await _fetch(nc, server, 100, f"_W.r{rnd}")  # redeliveries first, then new
                msgs += got
                packed, _ = _write(consumer)
                kinds.append(type(packed).__name__)
                _read_back(consumer)
            assert ("PackedChanges" in kinds) is journal, kinds
        finally:
            await nc.close()
