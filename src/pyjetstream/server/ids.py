"""Identifiers the server hands out: its server id (an nkey-style public key, like nats-server's)."""

from __future__ import annotations

import base64
import os

from pyjetstream.api.jwt import nkey_crc16

# nkeys prefix byte for a server public key: 13 << 3, which base32-encodes to a leading "N".
_PREFIX_SERVER = 13 << 3


def new_server_id() -> str:
    """A fresh 56-character id ``N…``: an encoded random server public key, as nats-server uses."""
    raw = bytes([_PREFIX_SERVER]) + os.urandom(32)
    raw += nkey_crc16(raw).to_bytes(2, "little")
    return base64.b32encode(raw).decode().rstrip("=")
