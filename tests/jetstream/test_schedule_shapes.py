"""A firing's schedules whose blocks differ only in their target's value share what the rest of
the block makes of them (``schedules._Shapes``: one block of each shape read and checked, not
each; switch ``schedules.SHAPES``).

Differential: the due schedules of one firing — a publisher's run of one shape with a target each,
targets with spaces or a tab around them or none, two target lines, a misspelt target name, other
patterns (``@every``, cron in a time zone, invalid), TTLs and roll-ups (valid and not), a source
(with and without a last message), headers carried and stripped, no header block — produce the
same messages, drop the same schedules and leave the same state with ``SHAPES`` on and off.
Steps: on, the blocks read (``_read``) are one per shape, at 2,000 schedules as at 20; and on the
embedded server, the Python a firing runs (``MsgSchedules._run``: the due schedules read, their
messages stored in one pass, the one-off schedules purged, their targets' consumer told) is the
same per fired schedule beside 100 as beside 3,000 pending schedules (with the stream's subject
tree live, as a consumer filtered on a wildcard leaves it)."""

from __future__ import annotations

import asyncio
import datetime
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, headers, publish_acked, wait_for
from tests.jetstream.scale_steps import embedded
from tests.support.steps import counting

from pyjetstream.server.jetstream import schedules
from pyjetstream.server.jetstream.schedules import MsgSchedules
from pyjetstream.server.jetstream.store.base import StoreError

PAST = b"@at 2000-01-01T00:00:00Z"
AT = 1_700_000_000 * 1_000_000_000  # when the schedules are due (their heap time)
NOW = AT + 5 * 1_000_000_000


def _block(*lines: bytes) -> bytes:
    return b"NATS/1.0\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"


def _sched(target: bytes, *more: bytes, pattern: bytes = PAST) -> bytes:
    return _block(b"Nats-Schedule: " + pattern, b"Nats-Schedule-Target: " + target, *more, b"Nats-Rollup: sub")


def _blocks(n: int) -> list[tuple[str, bytes | None, int]]:
    """(schedule subject, block, heap time) of each due schedule."""
    out: list[tuple[str, bytes | None, int]] = [(f"s.s.{i}", _sched(b"s.t.%d" % i), AT) for i in range(n)]
    odd = [
        _sched(b"  s.t.spaced"),
        _sched(b"s.t.tab\t"),
        _sched(b""),
        _sched(b"   "),
        _sched(b"s.t.first", b"Nats-Schedule-Target: s.t.second"),
        _block(b"Nats-Schedule: " + PAST, b"Nats-Schedule-Target : s.t.misspelt"),
        _block(b"Nats-Schedule: " + PAST),
        _sched(b"s.t.every", pattern=b"@every 1m"),
        _block(b"Nats-Schedule: 0 * * * * *", b"Nats-Schedule-Target: s.t.cron", b"Nats-Schedule-Time-Zone: Europe/Amsterdam"),
        _block(b"Nats-Schedule: 0 * * * * *", b"Nats-Schedule-Target: s.t.cron2", b"Nats-Schedule-Time-Zone: Europe/Amsterdam"),
        _sched(b"s.t.bad", pattern=b"@at soon"),
        _sched(b"s.t.ttl", b"Nats-Schedule-TTL: 5m"),
        _sched(b"s.t.ttl2", b"Nats-Schedule-TTL: 5m"),
        _sched(b"s.t.badttl", b"Nats-Schedule-TTL: soon"),
        _sched(b"s.t.roll", b"Nats-Schedule-Rollup: sub"),
        _sched(b"s.t.src", b"Nats-Schedule-Source: s.src"),
        _sched(b"s.t.src2", b"Nats-Schedule-Source: s.src"),
        _sched(b"s.t.nosrc", b"Nats-Schedule-Source: s.none"),
        _sched(b"s.t.kept", b"X-Kept: yes", b"Nats-Msg-Id: m1", b"Nats-Expected-Stream: S", b"Nats-TTL: 1h"),
        _sched(b"s.t.kept2", b"X-Kept: yes", b"Nats-Msg-Id: m1", b"Nats-Expected-Stream: S", b"Nats-TTL: 1h"),
        None,
    ]
    out += [(f"s.o.{i}", block, AT) for i, block in enumerate(odd)]
    out += [(f"s.late.{i}", _sched(b"s.t.late.%d" % i), AT + 1) for i in range(3)]  # (another run time)
    return out


class _Store:
    def __init__(self, msgs: dict[int, tuple[str, int, int, bytes | None, bytes]]) -> None:
        self.msgs = msgs

    def load_msgs(self, seqs: list[int]) -> list[tuple[str, int, int, bytes | None, bytes]]:
        return [self.msgs[seq] for seq in seqs if seq in self.msgs]

    def load_last_msg(self, subject: str) -> Any:
        if subject == "s.src":
            return SimpleNamespace(hdr=_block(b"From: source", b"Nats-Msg-Id: x"), data=b"source data")
        raise StoreError("no message")


def _fire(on: bool, n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    monkeypatch.setattr(schedules, "SHAPES", on)
    reads = Counter[str]()
    read = schedules._read

    def counting(hdr: bytes) -> Any:
        reads["_read"] += 1
        return read(hdr)

    monkeypatch.setattr(schedules, "_read", counting)
    blocks = _blocks(n)
    store = _Store({seq: (subject, seq, 1, block, b"d%d" % seq) for seq, (subject, block, _) in enumerate(blocks, 1)})
    stream = SimpleNamespace(store=store, closed=True)
    sch = MsgSchedules(stream)  # type: ignore[arg-type]
    for seq, (subject, _, at) in enumerate(blocks, 1):
        sch._set(subject, seq, at)
    produced = sch._due(NOW)
    return produced, sorted(sch.entries.items()), sorted(sch.inflight), reads["_read"]


@pytest.mark.parametrize("n", [20, 2_000])
def test_schedules_of_one_shape_produce_what_each_read_alone_does(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    on = _fire(True, n, monkeypatch)
    off = _fire(False, n, monkeypatch)
    assert on[:3] == off[:3]
    produced = on[0]
    targets = [p[0] for p in produced]
    assert targets[:3] == ["s.t.0", "s.t.1", "s.t.2"] and "s.t.spaced" in targets and "s.t.tab\t" in targets
    assert "s.t.first" in targets and "s.t.second" not in targets and "s.t.misspelt" not in targets
    assert "s.t.badttl" not in targets and "s.t.bad" not in targets
    assert any(p[1].startswith(b"NATS/1.0\r\nFrom: source\r\n") for p in produced)
    assert off[3] == len(_blocks(n))  # (off: every block read)
    # On: one read a shape (the run, each odd one, the later run time's), whatever the run's length.
    assert on[3] <= 30, on[3]


def _schedule(target: str, pattern: str) -> bytes:
    return headers(("Nats-Schedule", pattern), ("Nats-Schedule-Target", target))


async def _firing_steps(pending: int, k: int) -> list[float]:
    """Trace events of `MsgSchedules._run` per fired schedule: two firings of ``k`` one-off
    schedules each (a consumer on their targets), beside ``pending`` schedules due in 2099."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("SC", ["sc.>"], allow_msg_schedules=True)
            far = "@at 2099-01-01T00:00:00Z"
            await publish_acked(nc, [f"sc.s.{i}" for i in range(pending)], [_schedule(f"sc.t.{i}", far) for i in range(pending)], timeout=60)
            sch: Any = server.jetstream.streams["SC"].schedules
            run, steps = sch._run, []

            def counted() -> None:
                with counting() as st:
                    run()
                steps.append(st.count)

            sch._run = counted
            per_fired = []
            for tag in ("a", "b"):
                dlv = nc.subscribe(f"_D.{tag}")
                cfg = {"deliver_subject": f"_D.{tag}", "ack_policy": "none", "filter_subject": f"sc.{tag}.t.>"}
                assert "error" not in await nc.add_consumer("SC", f"C{tag}", **cfg)
                at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
                pattern = "@at " + at.strftime("%Y-%m-%dT%H:%M:%SZ")
                steps.clear()  # (the firing may come before the last PubAck)
                await publish_acked(nc, [f"sc.{tag}.s.{j}" for j in range(k)], [_schedule(f"sc.{tag}.t.{j}", pattern) for j in range(k)], timeout=60)
                assert len(await dlv.collect(k, timeout=30)) == k
                await wait_for(lambda: _true(len(sch.entries) == pending), timeout=10)
                per_fired.append(sum(steps) / k)
                dlv.unsubscribe()
            return per_fired
        finally:
            await nc.close()


async def _true(value: bool) -> bool:
    return value


def test_a_firing_costs_the_same_steps_beside_more_pending_schedules() -> None:
    small = asyncio.run(_firing_steps(100, 300))
    large = asyncio.run(_firing_steps(3_000, 300))
    assert min(small + large) > 100, (small, large)  # (every firing counted)
    # (the second firing of each: the subject tree live, the first consumer's filter cached)
    assert large[1] <= small[1] * 1.05 + 2, (small, large)
    assert large[0] <= small[0] * 1.05 + 2, (small, large)
