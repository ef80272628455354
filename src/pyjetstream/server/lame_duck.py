"""Lame duck mode (SIGUSR2, ``--signal ldm``): nats-server's ``lameDuckMode`` (``server/server.go``).

The server stops accepting clients (its listeners close: a new connection is refused), publishes
``$SYS.SERVER.<id>.LAMEDUCK`` in the system account, stops JetStream, and sends every connected
client that takes asynchronous INFOs (CONNECT ``protocol`` 1, its first PING answered) an INFO with
``"ldm":true`` — clients then reconnect elsewhere. After ``lame_duck_grace_period`` it closes the
clients one by one, spread over the rest of ``lame_duck_duration`` (a random pause of half to all
of the share of each, at most a second), then shuts down; with no client it shuts down at once.
SIGTERM is ignored meanwhile (``pyjetstream serve``), SIGINT still stops at once.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import TYPE_CHECKING

from pyjetstream.server.client import ClosedReason
from pyjetstream.server.sys_requests import server_info

if TYPE_CHECKING:
    from pyjetstream.server.server import Server

__all__ = ["lame_duck_mode"]


def _spacing(duration: float, grace: float, clients: int) -> tuple[float, int]:
    """nats-server's pause between two closes and how many to close per pause: the duration left
    after the grace period shared among the clients, at least a nanosecond, at most a second."""
    dur = duration - grace
    if dur <= 0:
        dur = 1.0
    pause, batch = dur / clients, 1
    if pause < 1e-9:
        pause, batch = 1e-9, max(1, int(clients / (dur * 1e9)))
    return min(pause, 1.0), batch


async def _sleep_unless_shutdown(server: Server, seconds: float) -> bool:
    """Wait, or return False at once when the server shuts down meanwhile (nats-server's quitCh)."""
    done = server.shutdown_event()
    try:
        await asyncio.wait_for(done.wait(), seconds)
    except TimeoutError:
        return True
    return False


async def lame_duck_mode(server: Server) -> None:
    if not server.running or server.shutting_down or server.ldm:
        return
    server.logger.info("Entering lame duck mode, stop accepting new clients")
    server.ldm = True
    _ldm_event(server)
    server.stop_listening()
    await server.stop_jetstream(disable=False)
    if server.shutting_down:
        return
    clients = [c for c in server.clients.values() if not c.closed]
    if not clients:
        await server.shutdown()
        return
    opts = server.options
    grace = abs(opts.lame_duck_grace_period)  # negative in nats-server's tests: longer than the duration
    pause, batch = _spacing(opts.lame_duck_duration, grace, len(clients))
    for conn in clients:  # nats-server sendLDMToClients
        if conn.protocol >= 1 and conn.first_pong and not conn.closed:
            conn.enqueue(server.async_info(conn, ldm=True))
    if not await _sleep_unless_shutdown(server, grace):
        return
    server.logger.info("Closing existing clients")
    for i, conn in enumerate(clients):
        conn.close(ClosedReason.SHUTDOWN)
        if i == len(clients) - 1:
            break
        if batch == 1 or i % batch == 0:
            if not await _sleep_unless_shutdown(server, max(pause / 2, random.uniform(0, pause))):
                return
    await server.shutdown()


def _ldm_event(server: Server) -> None:
    """``$SYS.SERVER.<id>.LAMEDUCK`` with the server's info (nats-server ``sendLDMShutdownEventLocked``)."""
    system = server.system_account
    if system is None:
        return
    payload = json.dumps(server_info(server), separators=(",", ":")).encode()
    system.publish_internal(f"$SYS.SERVER.{server.server_id}.LAMEDUCK", payload)
