"""The reconnect policy: which server to try next, how long to wait first, when to give up on one.

nats.go ``doReconnect``: servers are tried in pool order, each at most ``max_reconnect_attempts`` times
in a row (-1: forever), waiting ``reconnect_time_wait`` plus a random jitter since the last attempt on
that server; a server that refuses the same credentials twice in a row is dropped from the pool. The
connection itself does the attempts (`Client._reconnect_loop`); this module only decides.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, Callable

from pyjetstream.client.options import ClientOptions, ServerAddress, ServerPool


class ReconnectPolicy:
    def __init__(self, options: ClientOptions, pool: ServerPool) -> None:
        self._opts = options
        self._pool = pool

    async def attempts(self, wanted: Callable[[], bool]) -> AsyncGenerator[ServerAddress, None]:
        """The servers to try, each once its wait is over, while ``wanted()``; ends when the pool is empty."""
        opts = self._opts
        pool = self._pool
        while wanted():
            for server in pool.next_candidates():
                if 0 <= opts.max_reconnect_attempts <= server.reconnects:
                    pool.remove(server)
                    continue
                wait = opts.reconnect_time_wait + random.uniform(0, opts.jitter(server.tls or opts.tls is not None))
                elapsed = time.monotonic() - server.last_attempt
                if elapsed < wait:
                    await asyncio.sleep(wait - elapsed)
                if not wanted():
                    return
                server.reconnects += 1
                yield server
            if not len(pool):
                return

    def auth_failed(self, server: ServerAddress, exc: Exception) -> None:
        """nats.go: the same auth error twice in a row from one server removes it from the pool."""
        if server.last_auth_error == str(exc):
            self._pool.remove(server)
        server.last_auth_error = str(exc)
