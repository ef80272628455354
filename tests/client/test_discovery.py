"""Server discovery from INFO connect_urls, and failover to a discovered server.

Needs a NATS cluster (two routed servers): nats-server only — the embedded server is single-node by
design (see design.md), so it never announces peers.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.client.conftest import wait_until
from tests.support.targets import NATS_SERVER, make_target

from pyjetstream.client import connect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_discovers_cluster_peer_and_fails_over(tmp_path: Path) -> None:
    route_port = _free_port()
    a = make_target(
        NATS_SERVER,
        tmp_path / "a",
        jetstream=False,
        server_name="A",
        cluster={"name": "c", "listen": f"127.0.0.1:{route_port}"},
    )
    b = make_target(
        NATS_SERVER,
        tmp_path / "b",
        jetstream=False,
        server_name="B",
        cluster={"name": "c", "listen": "127.0.0.1:-1", "routes": [f"nats-route://127.0.0.1:{route_port}"]},
    )
    try:
        reconnected = asyncio.Event()
        nc = await connect(
            a.url,
            dont_randomize=True,
            reconnect_time_wait=0.05,
            reconnected_cb=reconnected.set,
        )
        try:
            b_url = f"nats://127.0.0.1:{b.port}"
            # B's address arrives in INFO connect_urls, at connect or in a later async INFO.
            await wait_until(lambda: b_url in nc.discovered_servers, what="B announced")
            sub = await nc.subscribe("failover")
            await nc.flush()
            await asyncio.to_thread(a.stop)
            await asyncio.wait_for(reconnected.wait(), 15)
            assert nc.connected_url == b_url
            peer = await connect(b.url)
            try:
                await peer.publish("failover", b"via B")
                await peer.flush()
            finally:
                await peer.close()
            assert (await sub.next_msg(timeout=5)).data == b"via B"
        finally:
            await nc.close()
    finally:
        a.stop()
        b.stop()
