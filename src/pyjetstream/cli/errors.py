"""Every failure of a CLI command becomes one clear line on stderr and a non-zero exit code.

The nats CLI prints ``nats: error: <what failed>: <server's text>`` and exits 1; we print
``pyjetstream: error: …`` the same way. A server-side JetStream error keeps the server's own
description and codes; usage mistakes exit 2 (as argparse does); Ctrl-C exits 130 quietly.
A traceback is shown only when ``PYJETSTREAM_TRACE=1`` is set (for bug reports).
"""

from __future__ import annotations

import os
import sys
import traceback

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_USAGE", "CliError", "UsageError", "describe", "report"]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A failure with a message meant for the user (no traceback), and the exit code to use."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CliError):
    """Bad or missing command-line input (exit 2, like argparse)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


def _api_text(exc: BaseException) -> str | None:
    """``description (code=…, err_code=…)`` for a JetStream API error, else None."""
    error = getattr(exc, "error", None)
    description = getattr(error, "description", None)
    if description is None:
        return None
    err_code = getattr(error, "err_code", 0)
    code = getattr(error, "code", 0)
    if err_code:
        return f"{description} (code={code}, err_code={err_code})"
    if code:
        return f"{description} (status {code})"
    return str(description)


def describe(exc: BaseException) -> str:
    """The one-line message for an exception: the server's words where it gave any."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client import errors as core

    if isinstance(exc, CliError):
        return str(exc)
    api = _api_text(exc)
    if api is not None:
        return api
    if isinstance(exc, core.NoRespondersError):
        return str(exc) or "no responders available for request"
    if isinstance(exc, core.NoServersError):
        return f"could not connect: {exc}"
    if isinstance(exc, core.AuthorizationError):
        return f"authorization failed: {exc}"
    if isinstance(exc, TimeoutError):
        return f"timeout: {exc}" if str(exc) else "timeout"
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    text = str(exc)
    if isinstance(exc, core.NatsError | ValueError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def report(exc: BaseException, prog: str = "pyjetstream") -> int:
    """Print ``prog: error: …`` for ``exc`` and return the exit code for it."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_ERROR
    if os.environ.get("PYJETSTREAM_TRACE"):
        traceback.print_exception(exc)
    print(f"{prog}: error: {describe(exc)}", file=sys.stderr)
    return exc.exit_code if isinstance(exc, CliError) else EXIT_ERROR
