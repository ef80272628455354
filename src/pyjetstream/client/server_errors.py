"""What the server's ``-ERR`` texts mean to the client: which exception, and whether the connection survives."""

from __future__ import annotations

from pyjetstream.client.errors import (
    AuthorizationError,
    NatsError,
    PermissionsViolationError,
    ProtocolError,
    StaleConnectionError,
)

# -ERR texts (lowercased) that mean "your credentials are not accepted" (nats.go's set).
_AUTH_ERRORS = (
    "authorization violation",
    "authentication timeout",
    "user authentication expired",
    "user authentication revoked",
    "account authentication expired",
)
# -ERR texts after which the server keeps the connection open.
_NON_FATAL_ERRORS = (
    "permissions violation",
    "invalid subject",
    "invalid publish subject",
    "maximum subscriptions",
)


def error_from_server(text: str) -> NatsError:
    """The exception an ``-ERR`` text stands for."""
    low = text.lower()
    if any(s in low for s in _AUTH_ERRORS):
        return AuthorizationError(text)
    if "permissions violation" in low:
        return PermissionsViolationError(text)
    if "stale connection" in low:
        return StaleConnectionError(text)
    return ProtocolError(text)


def server_keeps_connection(text: str) -> bool:
    """Whether the server keeps the connection open after this ``-ERR`` (else it closes it)."""
    low = text.lower()
    return any(s in low for s in _NON_FATAL_ERRORS)
