"""pyjetstream: NATS JetStream in Python — an embedded server, a simplified client, a CLI.

``pyjetstream.Server`` / ``pyjetstream.ServerThread`` are loaded on first use, so importing the
package stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyjetstream.server.server import Server
    from pyjetstream.server.thread import ServerThread

__all__ = ["Server", "ServerThread"]


def __getattr__(name: str) -> Any:
    if name in ("Server", "ServerThread"):
        import pyjetstream.server as server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
