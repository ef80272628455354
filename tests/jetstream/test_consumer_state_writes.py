"""The consumer state writer's pace (consumer_persistence.StateWriter): the next write waits ten
times what the last one cost — its snapshot AND its store update — so persisting a large state
takes a bounded share of the CPU (the update's cost used to be added after the next write had
already been timed from the snapshot alone: 100,000 pending acks were written every 100 ms).
A fake clock, no real time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pyjetstream.server.jetstream import consumer_persistence as cp
from pyjetstream.server.jetstream.store.base import SequencePair
from pyjetstream.server.jetstream.store.consumer_store import PackedState, pack_consumer_state


def _empty() -> PackedState:
    return pack_consumer_state(SequencePair(), SequencePair(), {}, {})


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Loop:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def call_later(self, delay: float, callback: Any) -> Any:
        self.delays.append(delay)
        return SimpleNamespace(cancel=lambda: None)


class _Store:
    """Takes ``write`` fake seconds per state written."""

    persistent = False  # (ack replies are not held for it: StateWriter.confirm)

    def __init__(self, clock: _Clock, write: float) -> None:
        self.clock, self.write, self.written = clock, write, 0

    def adopt_packed(self, state: PackedState) -> None:
        self.clock.now += self.write
        self.written += 1


def _writer(clock: _Clock, snapshot: float, write: float, npend: int = 0) -> tuple[cp.StateWriter, _Loop, _Store]:
    def snap(whole: bool = False) -> PackedState:  # (DeliveryState.packed)
        clock.now += snapshot
        return _empty()

    loop = _Loop()
    consumer = SimpleNamespace(
        closed=False,
        loop=loop,
        engine=SimpleNamespace(sync_always=False),  # a small state: written in place, no thread
        state=SimpleNamespace(packed=snap, pending=SimpleNamespace(n=npend)),
    )
    store = _Store(clock, write)
    return cp.StateWriter(consumer, store), loop, store  # type: ignore[arg-type]


@pytest.mark.parametrize(("snapshot", "write"), [(0.001, 0.02), (0.02, 0.001), (0.004, 0.06)])
def test_next_write_waits_for_the_whole_cost_of_the_last(
    monkeypatch: pytest.MonkeyPatch, snapshot: float, write: float
) -> None:
    clock = _Clock()
    monkeypatch.setattr(cp.time, "thread_time", clock)
    writer, loop, store = _writer(clock, snapshot, write)
    monkeypatch.setattr(writer.consumer.engine, "sync_always", False)
    writer.dirty()
    assert loop.delays == [cp.STATE_FLUSH_DELAY]  # nothing written yet: the usual delay
    writer._flush_handle = None
    writer._write(writer.consumer.state.packed(), snapshot)  # (what _flush hands the thread)
    assert store.written == 1
    writer.dirty()
    expected = min(max(cp.STATE_FLUSH_DELAY, cp.STATE_WRITE_SHARE * (snapshot + write)), cp.STATE_FLUSH_MAX)
    assert loop.delays[-1] == pytest.approx(expected)


def test_a_small_state_is_written_every_flush_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """As nats-server's flushLoop (at most every 100 ms): a cheap write keeps that pace — a
    state of at most STATE_INLINE_MAX pending acks is not even timed (no clock read)."""
    clock = _Clock()
    reads: list[float] = []

    def thread_time() -> float:
        reads.append(clock())
        return clock()

    monkeypatch.setattr(cp.time, "thread_time", thread_time)
    writer, loop, store = _writer(clock, 0.0001, 0.0005, npend=cp.STATE_INLINE_MAX)
    writer._flush()  # a small state: snapshot and write in place
    assert store.written == 1 and reads == []
    writer.dirty()
    assert loop.delays[-1] == cp.STATE_FLUSH_DELAY


def test_a_large_state_write_is_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past STATE_INLINE_MAX pending acks the snapshot and the write are timed, and the next
    write waits ten times what they took."""
    clock = _Clock()
    monkeypatch.setattr(cp.time, "thread_time", clock)
    writer, loop, store = _writer(clock, 0.004, 0.006, npend=cp.STATE_INLINE_MAX + 1)
    monkeypatch.setattr(cp, "_state_writer", lambda: SimpleNamespace(submit=_run_now))
    writer._flush()  # (handed to the writer thread: here run at once)
    assert store.written == 1
    writer.dirty()
    assert loop.delays[-1] == pytest.approx(cp.STATE_WRITE_SHARE * 0.01)


def _run_now(fn: Any, *args: Any) -> concurrent.futures.Future[Any]:
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    done.set_result(fn(*args))
    return done


async def _until(cond: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline
        await asyncio.sleep(0.005)


async def test_ack_replies_wait_for_one_write_after_the_writer_threads() -> None:
    """Group commit (issue #27): replies held in one turn leave after one write, and that write
    comes after the writer thread's write under way (an older snapshot never lands after it)."""
    clock = _Clock()
    sent: list[str] = []
    consumer = SimpleNamespace(
        closed=False,
        loop=asyncio.get_running_loop(),
        engine=SimpleNamespace(sync_always=False),
        state=SimpleNamespace(packed=lambda whole=False: _empty(), pending=SimpleNamespace(n=0)),
        server=SimpleNamespace(publish_internal=lambda reply, payload: sent.append(reply)),
    )
    store = _Store(clock, 0.0)
    store.persistent = True
    writer = cp.StateWriter(consumer, store)  # type: ignore[arg-type]
    under_way: concurrent.futures.Future[bool] = concurrent.futures.Future()
    writer._write_future = under_way
    writer.confirm("r1")
    writer.confirm("r2")
    await asyncio.sleep(0)  # (the commit's turn: it must wait for the writer thread)
    await asyncio.sleep(0)
    assert sent == [] and store.written == 0
    threading.Thread(target=under_way.set_result, args=(True,)).start()
    await _until(lambda: sent == ["r1", "r2"])
    assert store.written == 1


class _TurnLoop(_Loop):
    """Keeps the timed write's callback and runs a commit's ``call_soon`` when asked."""

    def __init__(self) -> None:
        super().__init__()
        self.timers: list[Any] = []
        self.soon: list[Any] = []

    def call_later(self, delay: float, callback: Any) -> Any:
        self.timers.append(callback)
        return super().call_later(delay, callback)

    def call_soon(self, callback: Any) -> None:
        self.soon.append(callback)

    def run_soon(self) -> None:
        soon, self.soon = self.soon, []
        for callback in soon:
            callback()


def test_serial_confirmed_acks_keep_one_timed_write() -> None:
    """A commit (the write a confirmed ack waits for) leaves the timed write set rather than
    cancelling it — the next delivery set a new one, a timer made and dropped per serial ack —
    and that timer writes only what changed after the commit's snapshot."""
    clock = _Clock()
    sent: list[str] = []
    writer, _, store = _writer(clock, 0.0, 0.0)
    loop = _TurnLoop()
    writer.consumer.loop = loop
    writer.consumer.server = SimpleNamespace(publish_internal=lambda reply, payload: sent.append(reply))
    writer.durable = True
    for i in range(50):
        writer.dirty()  # (a delivery)
        writer.confirm(f"r{i}")  # (an ack with a reply)
        loop.run_soon()  # (the commit's turn)
    assert sent == [f"r{i}" for i in range(50)] and store.written == 50
    assert len(loop.timers) == 1  # one timed write set, kept across the 50 commits
    loop.timers[-1]()  # it comes due: nothing changed since the last commit
    assert store.written == 50
    writer.dirty()  # a change after it: a new timed write, which writes it
    assert len(loop.timers) == 2
    loop.timers[-1]()
    assert store.written == 51
