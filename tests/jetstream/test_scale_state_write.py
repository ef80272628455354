"""Issue 24, dimension 5: writing a consumer's state with many acks pending runs the same Python
steps as with few (embedded server, steps counted, not timed).

The state is written whole, as nats-server's ``writeState`` writes it (``encodeConsumerState``),
at most every ``STATE_FLUSH_DELAY`` and a bounded share of the CPU (``StateWriter``). What keeps a
write cheap at 100,000 pending acks is that no Python runs per pending ack: the maps are packed
in one C call (``pack_consumer_state``) and the file store writes those bytes as they are
(``FileConsumerStore.adopt_packed``). The Python lines, calls and returns one write runs are
counted with ``sys.settrace`` (C code raises no such events), at two sizes of pending acks.
"""

from __future__ import annotations

import random
import sys
from types import FrameType
from typing import Any

from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded

from pyjetstream.server.jetstream.store.consumer_store import FileConsumerStore

SMALL, LARGE = 400, 4000


async def _write_steps(n: int) -> int:
    """A file stream's consumer with ``n`` delivered, a third of them acked in random order and a
    tenth NAKed and redelivered: the Python steps of one state write (and the state written is
    the consumer's, read back from its file)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("W", ["w.>"], storage="file")
            for i in range(n):
                nc.publish("w.x", b"%d" % i)
            await nc.flush()
            resp = await nc.add_consumer("W", "C", durable_name="C", max_ack_pending=-1, ack_wait=60_000_000_000)
            assert "error" not in resp, resp
            sub = nc.subscribe("_W.x")
            nc.pull("W", "C", "_W.x", {"batch": n, "expires": 30_000_000_000})
            msgs = await sub.collect(n, timeout=30)
            rng = random.Random(n)
            picked = rng.sample(msgs, n // 3 + n // 10)
            for m in picked[: n // 3]:
                nc.publish(m.reply, b"+ACK")
            for m in picked[n // 3 :]:
                nc.publish(m.reply, b"-NAK")
            await nc.flush()
            again = nc.subscribe("_W.again")
            nc.pull("W", "C", "_W.again", {"batch": n // 10, "expires": 30_000_000_000})
            await again.collect(n // 10, timeout=30)
            consumer = server.jetstream.streams["W"].consumers["C"]
            state = consumer.state
            assert len(state.pending) == n - n // 3 and len(state.rdc) == n // 10

            steps = 0

            def tracer(frame: FrameType, event: str, arg: Any) -> Any:
                nonlocal steps
                steps += 1
                return tracer

            sys.settrace(tracer)
            try:
                assert consumer.writer._write(state.packed())
            finally:
                sys.settrace(None)
            written = consumer.writer.store
            assert isinstance(written, FileConsumerStore)
            assert written.state() == state.snapshot()
            assert FileConsumerStore(written.directory, "C").state() == state.snapshot()
            return steps
        finally:
            await nc.close()


async def test_a_state_write_runs_no_python_per_pending_ack() -> None:
    small = await _write_steps(SMALL)
    large = await _write_steps(LARGE)
    # (the same but for a step or two of the floor cursor, `PendingIndex.next_pending`)
    assert large <= small + 10, (small, large)
