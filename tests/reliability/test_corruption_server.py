"""Damaged files under the embedded server (issue #15; the file layout is ours, so embedded only):
a corrupt consumer state file and a block file deleted under the running server. The server
starts, keeps every intact message, reports what is gone in the stream's ``lost`` and keeps the
consumer (started without its stored state it redelivers, never loses: nats-server's
readStoredState ignores a bad state the same way)."""

from __future__ import annotations

from pathlib import Path

import nats

from pyjetstream import Server

TIMEOUT = 10.0


async def test_corrupt_consumer_state_keeps_consumer(tmp_path: Path) -> None:
    store_dir = tmp_path / "js"
    async with Server(jetstream=True, store_dir=str(store_dir)) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        for i in range(10):
            await js.publish("s", b"%d" % i)
        psub = await js.pull_subscribe("s", "C")
        for m in await psub.fetch(4, timeout=TIMEOUT):
            await m.ack_sync()
        await nc.close()
    states = list(store_dir.rglob("o.dat"))
    assert len(states) == 1
    states[0].write_bytes(b"\x00garbage\xff" * 3)
    async with Server(jetstream=True, store_dir=str(store_dir)) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        info = await js.consumer_info("S", "C")
        assert info.name == "C"
        psub = await js.pull_subscribe("s", "C")
        got = [m.data for m in await psub.fetch(10, timeout=TIMEOUT)]
        # Redelivered from the start rather than lost.
        assert got[-6:] == [b"%d" % i for i in range(4, 10)]
        assert (await js.stream_info("S")).state.messages == 10
        await nc.close()


async def test_block_deleted_under_running_server(tmp_path: Path) -> None:
    store_dir = tmp_path / "js"
    async with Server(jetstream=True, store_dir=str(store_dir)) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"], max_msg_size=-1)
        payload = b"x" * 200_000
        for _ in range(60):  # several blocks
            await js.publish("s", payload)
        blocks = sorted((p for p in store_dir.rglob("*.blk")), key=lambda p: int(p.stem))
        assert len(blocks) >= 2, blocks
        blocks[0].unlink()
        # The server keeps serving.
        assert (await js.stream_info("S")).state.messages == 60
        assert (await js.publish("s", b"after")).seq == 61
        await nc.close()
    async with Server(jetstream=True, store_dir=str(store_dir)) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        st = (await js.stream_info("S")).state
        assert st.lost is not None and st.lost.msgs, st
        assert st.messages == 61 - len(st.lost.msgs)
        assert st.last_seq == 61
        assert (await js.get_msg("S", 61)).data == b"after"
        assert st.lost.msgs[0] == 1 and st.first_seq == st.lost.msgs[-1] + 1
        assert (await js.get_msg("S", st.first_seq)).data == payload
        assert (await js.publish("s", b"more")).seq == 62
        await nc.close()
