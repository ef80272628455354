"""Logging in nats-server's format: ``[PID] 2024/01/02 03:04:05.123456 [INF] message``.

The server logs to the ``pyjetstream.server`` logger; an embedding application routes it like any
Python logger. `configure_logging` is what ``pyjetstream serve`` uses to look like
nats-server: ``-D`` enables ``[DBG]``, ``-V`` enables ``[TRC]`` (protocol trace), ``-l`` writes to
a file instead of stderr.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from pyjetstream.server.options import ServerOptions

__all__ = [
    "LOGGER_NAME",
    "TRACE",
    "NatsFormatter",
    "configure_logging",
    "get_logger",
    "reconfigure_logging",
    "reopen_log_file",
]

LOGGER_NAME = "pyjetstream.server"
# Below DEBUG: the raw protocol trace (-V).
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_LEVEL_TAGS = {
    TRACE: "TRC",
    logging.DEBUG: "DBG",
    logging.INFO: "INF",
    logging.WARNING: "WRN",
    logging.ERROR: "ERR",
    logging.CRITICAL: "FTL",
}


class NatsFormatter(logging.Formatter):
    """``[PID] yyyy/mm/dd hh:mm:ss.uuuuuu [LVL] msg`` (``logtime=False`` drops the timestamp)."""

    def __init__(self, logtime: bool = True, utc: bool = False) -> None:
        super().__init__()
        self.logtime = logtime
        self.utc = utc
        self.pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        tag = _LEVEL_TAGS.get(record.levelno, "INF")
        message = record.getMessage()
        if record.exc_info:
            message = f"{message}\n{self.formatException(record.exc_info)}"
        if not self.logtime:
            return f"[{self.pid}] [{tag}] {message}"
        parts = time.gmtime(record.created) if self.utc else time.localtime(record.created)
        stamp = time.strftime("%Y/%m/%d %H:%M:%S", parts)
        micros = int((record.created % 1) * 1_000_000)
        return f"[{self.pid}] {stamp}.{micros:06d} [{tag}] {message}"


_OURS = "_pyjetstream_configured"


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


def configure_logging(options: ServerOptions) -> logging.Logger:
    """Send the server's log to stderr (or ``options.logfile``) in nats-server's format."""
    logger = get_logger()
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    if options.logfile:
        handler: logging.Handler = logging.FileHandler(options.logfile, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(NatsFormatter(options.logtime, options.logtime_utc))
    setattr(handler, _OURS, True)  # the handler configure_logging installed
    logger.addHandler(handler)
    if options.trace or options.trace_verbose:
        level = TRACE
    elif options.debug:
        level = logging.DEBUG
    else:
        level = logging.INFO
    logger.setLevel(level)
    if level == TRACE and not options.debug:
        # nats-server's -V traces without turning on debug lines.
        handler.addFilter(lambda record: record.levelno != logging.DEBUG)
    logger.propagate = False
    return logger


def _configured() -> bool:
    """Whether the server's log is `configure_logging`'s (``pyjetstream serve``), not an embedding
    application's handlers, which a reload or a log reopen leaves alone."""
    return any(getattr(h, _OURS, False) for h in get_logger().handlers)


def reconfigure_logging(options: ServerOptions) -> None:
    """A configuration reload changed how the server logs (nats-server ``ConfigureLogger``)."""
    if _configured():
        configure_logging(options)


def reopen_log_file(options: ServerOptions) -> None:
    """SIGUSR1 / ``--signal reopen`` (nats-server ``ReOpenLogFile``): open the log file again,
    so that a log rotated away is written anew where it was."""
    logger = get_logger()
    if not _configured():
        logger.info("File log re-open ignored, no logger")
    elif not options.logfile:
        logger.info("File log re-open ignored, not a file logger")
    else:
        configure_logging(options)
        logger.info("File log re-opened")
