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
    value = decode_json_value(stripped)
    return isinstance(value, dict) and not value


_NOT_JSON = object()


def decode_json_value(payload: bytes) -> object:
    """``payload`` as Go's ``json.Unmarshal`` into ``any`` sees it, or ``_NOT_JSON`` when Go refuses it.

    Go takes invalid UTF-8 inside a string as U+FFFD rather than refusing the document (msgspec
    raises ``UnicodeDecodeError``, which must not escape a handler: the request would go unanswered).
    """
    try:
        return msgspec.json.decode(payload)
    except UnicodeDecodeError:
        pass
    except msgspec.DecodeError:
        return _NOT_JSON
    try:
        return msgspec.json.decode(payload.decode("utf-8", "replace").encode())
    except msgspec.DecodeError:
        return _NOT_JSON


def has_json_body(payload: bytes) -> bool:
    """nats-server's ``isJSONObjectOrArray``: the INFO, NAMES and LIST requests read a body only
    when it starts (after white space) with ``{`` or ``[``; any other body is no body."""
    return payload.lstrip(b" \t\r\n")[:1] in (b"{", b"[")


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
