"""Identifiers the server hands out: its server id (an nkey-style public key, like nats-server's)."""

from __future__ import annotations

import base64
import os

# nkeys prefix byte for a server public key: 13 << 3, which base32-encodes to a leading "N".
_PREFIX_SERVER = 13 << 3


def _crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021), the checksum nkeys appends."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def new_server_id() -> str:
    """A fresh 56-character id ``N…``: an encoded random server public key, as nats-server uses."""
    raw = bytes([_PREFIX_SERVER]) + os.urandom(32)
    raw += _crc16(raw).to_bytes(2, "little")
    return base64.b32encode(raw).decode().rstrip("=")
