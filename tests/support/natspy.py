"""nats-py as a peer in the tests: the one thing its ``flush()`` does not promise.

nats-py 2.16 queues a SUB in its write buffer for its flusher task, but ``flush()`` writes its PING
straight to the socket. The PING can therefore reach the server ahead of the SUB, and the PONG
come back before the subscription exists: a publish from *another* connection right after that
``flush()`` can find no interest (no-responders, or a message lost). On a loaded machine this
happens often enough to fail CI. The same connection's own publishes are not affected: they queue
behind the SUB.
"""

from __future__ import annotations

from nats.aio.client import Client


async def subscriptions_live(*clients: Client) -> None:
    """Return once the server has every SUB these clients sent before the call.

    The first ``flush()`` gives the flusher task its turn (it runs while the flush waits for its
    PONG), so the buffered SUB is on the socket when it returns; the second PING follows the SUB,
    and its PONG proves the server processed it.
    """
    for nc in clients:
        await nc.flush()
        await nc.flush()
