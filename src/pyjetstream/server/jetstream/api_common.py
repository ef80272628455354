"""Helpers shared by the API handlers: request decoding and error replies."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.gojson import GoJsonError, decode_go

T = TypeVar("T")

_EMPTY_OBJECTS = (b"", b"{}")


def is_empty_request(payload: bytes) -> bool:
    """nats-server ``isEmptyRequest``: no bytes, ``{}``, or a JSON object without keys."""
    stripped = payload.strip()
    if stripped in _EMPTY_OBJECTS:
        return True
    try:
        value = msgspec.json.decode(stripped)
    except msgspec.DecodeError:
        return False
    return isinstance(value, dict) and not value


def decode_request(payload: bytes, kind: type[T], strict: bool = True) -> T:
    """Decode a request body as nats-server's ``unmarshalRequest``: an empty body is the zero
    request; anything Go's decoder refuses is 10025 ``invalid JSON: <Go's error>``; with
    ``strict`` (the default, ``jetstream { strict }``) an unknown field is refused too."""
    try:
        return decode_go(payload, kind, strict)
    except GoJsonError as exc:
        raise JetStreamApiError(E.JSInvalidJSONErr(err=str(exc))) from exc


def encode_response(response: msgspec.Struct) -> bytes:
    """JSON as Go's encoder writes it: compact, with ``<``, ``>`` and ``&`` escaped (every API reply
    and advisory goes through here)."""
    return codec.encode(response)
