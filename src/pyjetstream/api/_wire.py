"""The base every API model shares, and the Go-``omitempty`` mapping.

Go emits a field unless its tag says ``omitempty`` *and* it holds the zero value. The
models mirror that with msgspec's ``omit_defaults``: an ``omitempty`` field gets its Go
zero value as default (omitted when equal), and a field Go always emits is declared with
`always`, whose ``default_factory`` makes msgspec emit it whatever its value.

A few fields newer than 2.9.10 that 2.10+ always emits (``compression``,
``consumer_limits``, ``ts``) are typed ``X | None = None``: absent on decode (a 2.9
payload) stays absent on encode, so 2.9 payloads round-trip byte for byte, and the server
emits the 2.10 shape by setting them.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["WireStruct", "always", "always_new"]


class WireStruct(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Base of all API models: keyword-only, Go-``omitempty`` aware."""


def always(default: Any) -> Any:
    """Field default for a Go field *without* ``omitempty``: encoded even when default.

    msgspec only recognises defaults it can compare; a value produced by a custom
    ``default_factory`` is never treated as "the default", so it is always written.
    """
    return msgspec.field(default_factory=lambda: default)


def always_new(factory: Any) -> Any:
    """Like `always` for a mutable default (e.g. a nested struct): a fresh one each time."""
    return msgspec.field(default_factory=factory)
