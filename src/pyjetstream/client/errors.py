"""Typed errors of the core NATS client.

Every error derives from ``NatsError``; ``TimeoutError`` also derives from the builtin
``TimeoutError`` so ``except TimeoutError`` (and ``asyncio.wait_for`` habits) keep working.
"""

from __future__ import annotations

import builtins


class NatsError(Exception):
    """Base class of every pyjetstream client error."""


class ConnectionClosedError(NatsError):
    """The client is closed (or closing): no more publishes, subscriptions or requests."""


class NoServersError(NatsError):
    """No server in the pool could be reached (initial connect or after all reconnect attempts)."""


class TimeoutError(NatsError, builtins.TimeoutError):
    """An operation (request, flush, next_msg, connect) did not finish in time."""


class NoRespondersError(NatsError):
    """A request reached no subscriber: the server answered with an inline ``503`` status."""


class AuthorizationError(NatsError):
    """The server refused our credentials (``-ERR 'Authorization Violation'`` and friends)."""


class BadSubjectError(NatsError, ValueError):
    """A subject (or queue group / reply) is empty or contains whitespace."""


class MaxPayloadError(NatsError, ValueError):
    """Headers + payload exceed the server's ``max_payload`` (checked before sending)."""


class SlowConsumerError(NatsError):
    """A subscription's pending limits were exceeded: messages are being dropped."""

    def __init__(self, subject: str, sid: int, dropped: int) -> None:
        super().__init__(f"slow consumer on subject {subject!r} (sid {sid}): {dropped} message(s) dropped")
        self.subject = subject
        self.sid = sid
        self.dropped = dropped


class StaleConnectionError(NatsError):
    """The peer stopped answering PINGs (or the server said ``-ERR 'Stale Connection'``)."""


class DrainTimeoutError(NatsError, builtins.TimeoutError):
    """``drain()`` did not finish within ``drain_timeout``; the client was closed anyway."""


class ProtocolError(NatsError):
    """The server sent an ``-ERR`` or bytes we could not parse."""


class PermissionsViolationError(ProtocolError):
    """``-ERR 'Permissions Violation …'``: reported through ``error_cb``, the connection stays up."""


class OutboundBufferLimitError(NatsError):
    """The bytes buffered while disconnected reached ``pending_size``: the publish is refused."""


class BadSubscriptionError(NatsError):
    """The subscription is unsubscribed/closed, or the operation does not fit its mode."""


class ConnectionDrainingError(NatsError):
    """The client is draining: no new subscriptions."""


class HeaderError(NatsError, ValueError):
    """Header names/values that cannot be encoded (colon or whitespace in a name, CR/LF in a value)."""


def why_not_connected(exc: BaseException) -> str:
    """Why a connection attempt failed, in words ("connection refused", "unknown host"), never a
    Python repr: the text [`NoServersError`][] gives after each server's URL."""
    import socket
    import ssl

    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is a server listening there?)"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: the server's certificate was not accepted ({exc.verify_message or exc.reason})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed ({exc.reason or exc})"
    if isinstance(exc, ConnectionResetError):
        return "the server closed the connection"
    if isinstance(exc, builtins.TimeoutError) and not str(exc):
        return "timed out"
    if isinstance(exc, OSError) and not isinstance(exc, NatsError):
        return (exc.strerror or str(exc) or type(exc).__name__).lower()
    return str(exc) or type(exc).__name__


__all__ = [
    "AuthorizationError",
    "BadSubjectError",
    "BadSubscriptionError",
    "ConnectionClosedError",
    "ConnectionDrainingError",
    "DrainTimeoutError",
    "HeaderError",
    "MaxPayloadError",
    "NatsError",
    "NoRespondersError",
    "NoServersError",
    "OutboundBufferLimitError",
    "PermissionsViolationError",
    "ProtocolError",
    "SlowConsumerError",
    "StaleConnectionError",
    "TimeoutError",
    "why_not_connected",
]
