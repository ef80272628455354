"""The server's version, in its own module so that the monitor, the server and the CLI can all read it
without importing one another. The value itself is set in `pyjetstream.api.versioning`, with
the JetStream API level that goes with it (one place for both)."""

from pyjetstream.api.versioning import JS_API_LEVEL, SERVER_VERSION

__all__ = ["JS_API_LEVEL", "SERVER_VERSION"]
