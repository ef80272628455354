"""Every failure of a CLI command becomes one clear line on stderr and a non-zero exit code.

The nats CLI prints ``nats: error: <what failed>: <server's text>`` and exits 1; we print
``pyjetstream: error: …`` the same way. A server-side JetStream error keeps the server's own
description and codes; usage mistakes exit 2 (as argparse does); Ctrl-C exits 130 quietly.
A traceback is shown only when ``PYJETSTREAM_TRACE=1`` is set (for bug reports).
"""

from __future__ import annotations

import os
import re
import sys
import traceback

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "CliError",
    "UsageError",
    "describe",
    "go_json_error",
    "report",
]

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
    description = go_json_error(str(description))
    err_code = getattr(error, "err_code", 0)
    code = getattr(error, "code", 0)
    if err_code:
        return f"{description} (code={code}, err_code={err_code})"
    if code:
        return f"{description} (status {code})"
    return str(description)


# Go's encoding/json errors as nats-server passes them on ("invalid JSON: json: cannot unmarshal …").
_GO_UNMARSHAL = re.compile(
    r"json: cannot unmarshal (\w+)(?: (\S+))? into Go (?:struct field (\w+)\.(\S+)|value) of type ([\w.\[\]*]+)"
)
_GO_TYPES = {
    "int64": "a 64-bit integer", "uint64": "an unsigned 64-bit integer", "int": "a whole number",
    "int32": "a 32-bit integer", "uint32": "an unsigned 32-bit integer", "uint16": "an unsigned 16-bit integer",
    "uint8": "an unsigned 8-bit integer", "float64": "a number", "string": "a string", "bool": "true or false",
    "time.Duration": "a duration in nanoseconds", "time.Time": "an RFC 3339 time", "[]string": "a list of strings",
}  # fmt: skip


def go_json_error(text: str) -> str:
    """A Go ``json: cannot unmarshal number 1e30 into Go struct field StreamConfigRequest.max_bytes
    of type int64`` as ``max_bytes: 1e30 does not fit a 64-bit integer``: the field and the value
    first, no Go struct or type names. Other texts are returned unchanged."""
    m = _GO_UNMARSHAL.search(text)
    if m is None:
        return text
    got, value, field, go_type = m.group(1), m.group(2), m.group(4), m.group(5)
    default = "an object" if go_type.startswith(("server.", "*server.")) else "another type"
    wanted = _GO_TYPES.get(go_type, default)
    if got == "number" and value is not None:
        problem = f"{value} does not fit {wanted}"
    else:
        problem = f"expected {wanted}, got {'a' if got[0] not in 'aeiou' else 'an'} {got}"
    return f"{field}: {problem}" if field else problem


def describe(exc: BaseException) -> str:
    """The one-line message for an exception: the cause first, in the server's words where it gave any."""
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
        return str(exc)
    if isinstance(exc, core.AuthorizationError):
        return f"authorization failed: {exc}"
    if isinstance(exc, TimeoutError):
        return f"timeout: {exc}" if str(exc) else "timeout"
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError | NotADirectoryError):
        what = (exc.strerror or str(exc)).lower()
        return f"{exc.filename}: {what}" if exc.filename else what
    if isinstance(exc, OSError):
        return core.why_not_connected(exc) if exc.errno is not None else (exc.strerror or str(exc))
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
