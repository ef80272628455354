"""The embedded NATS server (core routing; JetStream lives in ``pyjetstream.server.jetstream``).

``Server`` (asyncio) and ``ServerThread`` (a background thread for synchronous code) are imported
lazily so that importing a submodule (``pyjetstream.server.options``…) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyjetstream.server.server import Server
    from pyjetstream.server.thread import ServerThread

__all__ = ["Server", "ServerThread"]


def __getattr__(name: str) -> Any:
    if name == "Server":
        from pyjetstream.server.server import Server

        return Server
    if name == "ServerThread":
        from pyjetstream.server.thread import ServerThread

        return ServerThread
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
