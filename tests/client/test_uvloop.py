"""The client on uvloop (whose transports differ from asyncio's): pub/sub, request, flush, reconnect."""

from __future__ import annotations

import asyncio

import pytest
from tests.client.conftest import wait_until
from tests.support.targets import Target

from pyjetstream.client import NoRespondersError, connect

uvloop = pytest.importorskip("uvloop")


def test_core_flows_on_uvloop(server: Target) -> None:
    async def scenario() -> None:
        # Unlimited attempts: a loaded machine can take longer than 60 x 0.05 s to restart the server.
        nc = await connect(server.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
        try:
            sub = await nc.subscribe("uv.>")
            await nc.subscribe("uv.svc", cb=lambda m: asyncio.ensure_future(m.respond(b"ok")))
            await nc.flush()
            for i in range(5000):
                nc.publish_nowait("uv.data", b"%d" % i, headers={"I": str(i)} if i % 2 else None)
            await nc.flush()
            for i in range(5000):
                msg = await sub.next_msg(timeout=5)
                assert msg.data == b"%d" % i
            assert (await nc.request("uv.svc", b"")).data == b"ok"
            assert (await sub.next_msg()).subject == "uv.svc"
            with pytest.raises(NoRespondersError):
                await nc.request("nobody", b"")
            await asyncio.to_thread(server.restart)
            await wait_until(lambda: nc.is_connected and nc.stats["reconnects"] == 1)
            await nc.publish("uv.after", b"x")
            assert (await sub.next_msg(timeout=5)).subject == "uv.after"
        finally:
            await nc.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
