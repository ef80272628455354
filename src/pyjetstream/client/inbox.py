"""NUID (NATS unique identifiers) and inbox subjects.

A NUID is 22 base-62 characters: a 12-character random prefix plus a 10-character sequence that
advances by a random increment (nats.go ``nuid``). Generating one costs a few integer operations,
so unique inboxes and request tokens are cheap.
"""

from __future__ import annotations

import random
import secrets

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BASE = 62
PREFIX_LEN = 12
SEQ_LEN = 10
TOTAL_LEN = PREFIX_LEN + SEQ_LEN
MAX_SEQ = BASE**SEQ_LEN
# Random increments keep successive NUIDs from being guessable from one another (nats.go values).
MIN_INC = 33
MAX_INC = 333


def _base62(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        value, rem = divmod(value, BASE)
        out.append(DIGITS[rem])
    return "".join(reversed(out))


class NUID:
    """Generator of NUIDs; not thread-safe (use one per thread or event loop)."""

    __slots__ = ("_inc", "_prefix", "_rng", "_seq")

    def __init__(self) -> None:
        # The sequence and increment need not be cryptographically random, only the prefix.
        self._rng = random.Random(secrets.randbits(64))
        self._prefix = ""
        self._seq = 0
        self._inc = 0
        self._reset()

    def _reset(self) -> None:
        self._prefix = "".join(secrets.choice(DIGITS) for _ in range(PREFIX_LEN))
        self._seq = self._rng.randrange(MAX_SEQ)
        self._inc = self._rng.randrange(MIN_INC, MAX_INC)

    def next(self) -> str:
        """The next unique 22-character id (a random prefix and a sequence, as nats.go's nuid)."""
        self._seq += self._inc
        if self._seq >= MAX_SEQ:
            self._reset()
        return self._prefix + _base62(self._seq, SEQ_LEN)


_nuid = NUID()


def next_nuid() -> str:
    """A fresh 22-character NUID from the module's generator."""
    return _nuid.next()


def new_inbox(prefix: str = "_INBOX") -> str:
    """``<prefix>.<nuid>``: a subject nobody else will use."""
    return f"{prefix}.{_nuid.next()}"
