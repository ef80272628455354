"""``pyjetstream serve``: run the server from nats-server's flags and config file, like nats-server.

Logs as nats-server does (``-D``/``-V``/``-l``), writes the pid and ports files, and shuts down
gracefully on SIGINT/SIGTERM (clients drained, JetStream stopped) with exit code 0. Uses uvloop
when it is installed.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence

from pyjetstream.cli.serve_args import ServeArgsExit, parse_serve_args
from pyjetstream.server.log import configure_logging
from pyjetstream.server.options import ServerOptions
from pyjetstream.server.thread import new_event_loop

__all__ = ["main", "serve"]


# The signals serve acts on. nats-server's signal.Notify (in NewServer, before Start) makes Go
# deliver them whatever the process inherited: an ignored disposition (a shell's `cmd &`, nohup)
# is replaced and the signal is unblocked. asyncio's add_signal_handler replaces the disposition;
# the mask is unblocked here — both before the server starts, so a stop sent during start-up is kept.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def serve(options: ServerOptions) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.server.server import Server

    server = Server(options)
    loop = asyncio.get_running_loop()
    requested: list[int] = []
    stopping: list[asyncio.Task[None]] = []

    def on_signal(signum: int) -> None:
        server.logger.debug('Trapped "%s" signal', signal.Signals(signum).name)
        requested.append(signum)
        if server.running and not stopping:
            stopping.append(loop.create_task(server.shutdown()))

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await server.start()
    except OSError as exc:
        server.logger.critical("Error listening on port: %s:%d, %s", options.host, options.port, exc)
        return 1
    if requested and not stopping:  # a stop sent while the server was starting
        stopping.append(loop.create_task(server.shutdown()))
    await server.wait_closed()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse_serve_args(args, prog="pyjetstream")
    except ServeArgsExit as exc:
        return exc.emit()
    configure_logging(options)
    loop = new_event_loop()
    try:
        return loop.run_until_complete(serve(options))
    except Exception as exc:  # a start-up failure nats-server would log as fatal
        # Deferred: CLI start-up speed (loaded only when this command runs).
        import logging

        logging.getLogger("pyjetstream.server").critical("%s", exc)
        return 1
    finally:
        loop.close()
