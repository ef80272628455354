"""Helpers shared by the API handlers: request decoding and error replies."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api.errors import JetStreamApiError

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


def decode_config(payload: bytes, kind: type[T]) -> T:
    """Decode a create/update body as Go's ``json.Unmarshal``: an empty body is invalid JSON."""
    body = payload.strip()
    if body == b"null":
        return kind()
    try:
        return codec.decode(body, kind)
    except (msgspec.DecodeError, ValueError) as exc:
        raise JetStreamApiError(E.JSInvalidJSONErr()) from exc


def decode_request(payload: bytes, kind: type[T]) -> T:
    """Decode a request body; an empty body is the type's zero value; bad JSON is error 10025."""
    try:
        return codec.decode_request(payload, kind)
    except (msgspec.DecodeError, ValueError) as exc:
        raise JetStreamApiError(E.JSInvalidJSONErr()) from exc


def encode_response(response: msgspec.Struct) -> bytes:
    """JSON as Go's encoder writes it: compact, with ``<``, ``>`` and ``&`` escaped (every API reply
    and advisory goes through here)."""
    return codec.encode(response)
