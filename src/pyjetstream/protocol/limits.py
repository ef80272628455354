"""Protocol limits and fixed frames, as nats-server defines them (server/const.go)."""

from __future__ import annotations

from typing import Final

# (Final: the compiled modules use these as constants, not as globals looked up at each use.)

# Longest control line (op + arguments) a client may send: nats-server's MAX_CONTROL_LINE_SIZE.
MAX_CONTROL_LINE = 4096
# Largest payload (headers + data) a client may publish: nats-server's MAX_PAYLOAD_SIZE (1 MiB).
MAX_PAYLOAD = 1024 * 1024
# Payload lengths are decimal ASCII; nats-server refuses more than 10 digits rather than overflow.
MAX_SIZE_DIGITS: Final = 10

CRLF: Final = b"\r\n"
PING = b"PING\r\n"
PONG = b"PONG\r\n"
OK = b"+OK\r\n"

HEADER_VERSION = "NATS/1.0"
HEADER_VERSION_BYTES: Final = b"NATS/1.0"
EMPTY_HEADER: Final = b"NATS/1.0\r\n\r\n"
