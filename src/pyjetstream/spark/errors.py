"""Errors the ``jetstream`` data source raises (their text reaches the user through Spark)."""

from __future__ import annotations

__all__ = ["JetStreamSparkError", "PublishError", "StreamNotFoundError"]


class JetStreamSparkError(RuntimeError):
    """A JetStream read or write failed; the message says what and where."""


class StreamNotFoundError(JetStreamSparkError):
    """The stream named by the ``stream`` option does not exist on the server."""

    def __init__(self, stream: str, servers: str) -> None:
        super().__init__(f"JetStream stream {stream!r} not found on {servers}")
        self.stream = stream


class PublishError(JetStreamSparkError):
    """The server refused a publish (its error text is kept), or no ack came after every retry."""
