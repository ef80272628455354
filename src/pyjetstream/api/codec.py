"""The one JSON codec for API models: msgspec plus the Go details that matter on the wire.

- `NanoTime` fields go through hooks (RFC3339Nano strings), and so do the Python API's
  `Seconds` (`pyjetstream.api.durations`: integer nanoseconds on the wire).
- `encode` writes like Go's ``json.Marshal``: compact, struct field order, map keys
  sorted, and ``<`` ``>`` ``&`` U+2028 U+2029 escaped as ``\\u003c`` … (HTML-safe escaping).
- Decoding ignores unknown fields (clients send fields newer than the server knows), and
  like Go treats ``"field": null`` as "leave the zero value" (msgspec rejects null for a
  non-optional field; `decode` then retries with the nulls removed). Go also matches
  keys case-insensitively; msgspec does not — accepted deviation, no client relies on it.
- PubAcks are hand-formatted by nats-server (with spaces); `encode_pub_ack` reproduces
  those bytes exactly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import msgspec

from .durations import Seconds
from .errors import JetStreamApiError
from .gojson import quote_char
from .models_common import ApiError
from .models_consumer import PullRequest
from .models_msg import PubAckResponse
from .responses import ApiResponse
from .timefmt import ZERO_TIME, NanoTime, format_time

__all__ = [
    "DecodeError",
    "PullRequestError",
    "convert",
    "decode",
    "decode_pub_ack",
    "decode_pull_request",
    "decode_request",
    "decode_response",
    "encode",
    "encode_pub_ack",
    "encode_pub_ack_error",
    "finish_batch_pub_ack",
    "finish_pub_ack",
    "go_json_error",
    "loads_go",
    "presorted",
    "pub_ack_prefix",
    "pub_acks",
    "raise_for_error",
    "to_builtins",
]

T = TypeVar("T")

DecodeError = msgspec.DecodeError
"""Raised for invalid JSON *and* for well-formed JSON of the wrong shape (msgspec.ValidationError
is a subclass). The server answers both with 10025 ``invalid JSON``, as Go's Unmarshal fails on both."""


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, NanoTime):
        return format_time(obj)  # (`NanoTime.isoformat`, without its frame: two a stream's state)
    if isinstance(obj, Seconds):  # the Python API's durations: integer ns on the wire
        return obj.ns
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def _dec_hook(tp: type, obj: Any) -> Any:
    if isinstance(tp, type) and issubclass(tp, Seconds):
        if obj is None:  # Go: a JSON null leaves a Duration at zero
            return tp.from_ns(0)
        if isinstance(obj, int) and not isinstance(obj, bool):
            return tp.from_ns(obj)
        raise ValueError(f"expected a duration in integer nanoseconds, got {type(obj).__name__}")
    if isinstance(tp, type) and issubclass(tp, NanoTime):
        if obj is None:  # Go: a JSON null leaves a time.Time at its zero value
            return tp(ZERO_TIME)
        if isinstance(obj, str):
            return tp.parse(obj)
        raise ValueError(f"expected an RFC3339 time string, got {type(obj).__name__}")
    raise NotImplementedError(f"cannot decode {tp}")


# Go's encoding/json HTML-escapes these inside strings; they never occur outside strings.
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))
_LINE_SEPS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))

_encoder = msgspec.json.Encoder(enc_hook=_enc_hook, order="deterministic")


def encode(obj: Any, *, go_escape: bool = True) -> bytes:
    """Encode a model (or any msgspec-encodable value) as nats-server would marshal it."""
    out = _encoder.encode(obj)
    if go_escape:
        for raw, esc in _GO_ESCAPES:
            if out.find(raw) >= 0:
                out = out.replace(raw, esc)
        if out.find(b"\xe2\x80") >= 0:
            for raw, esc in _LINE_SEPS:
                out = out.replace(raw, esc)
    return out


#: Writes maps in their own order (`presorted`).
_as_is = msgspec.json.Encoder()


def presorted(mapping: dict[str, int]) -> msgspec.Raw:
    """A map whose keys are already in Go's order (sorted), written as is, for a model's map field:
    `encode`'s deterministic encoder would sort it again, ~0.2 µs a key at 100,000 keys scattered
    in memory (STREAM.INFO's ``subjects_filter`` page, which the store gives in name order). `encode`
    then escapes it as the rest (``<`` ``>`` ``&``, U+2028 U+2029)."""
    return msgspec.Raw(_as_is.encode(mapping))


def to_builtins(obj: Any) -> Any:
    """Model → plain dicts/lists/str (times as RFC3339 strings), e.g. for display."""
    return msgspec.to_builtins(obj, enc_hook=_enc_hook, order="deterministic")


@functools.cache
def _decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp, dec_hook=_dec_hook)


def decode(data: bytes | str, tp: type[T]) -> T:
    """Decode JSON into ``tp``; unknown fields are ignored, ``null`` means "zero value" as in Go.

    Raises `DecodeError`.
    """
    try:
        result: T = _decoder(tp).decode(data)  # type: ignore[arg-type]  # (a class is hashable; no `cast`: a call a request)
        return result
    except msgspec.ValidationError as exc:
        if "got `null`" not in str(exc):
            raise
    # Slow path, only for payloads with nulls where we model a non-optional field.
    retried: T = _decoder(cast(Any, tp)).decode(msgspec.json.encode(_drop_nulls(msgspec.json.decode(data))))
    return retried


def convert(obj: Any, tp: type[T]) -> T:
    """Builtins (dicts, lists, str, int …; times as RFC3339 strings) → a model."""
    return msgspec.convert(obj, tp, dec_hook=_dec_hook)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def decode_request(data: bytes | str, tp: type[T]) -> T:
    """Decode an API request body; an empty (or whitespace, or ``null``) body is the zero request."""
    if not data.strip() or data.strip() in (b"null", "null"):
        return tp()
    return decode(data, tp)


def decode_response(data: bytes | str, tp: type[T]) -> T:
    """Decode an API response into its wrapper class (check ``.error``, or `raise_for_error`)."""
    return decode(data, tp)


def raise_for_error(response: ApiResponse | PubAckResponse) -> None:
    """Raise `JetStreamApiError` if the response carries an error."""
    if response.error is not None:
        raise JetStreamApiError(response.error)


# --- pull requests ----------------------------------------------------------------------------


class PullRequestError(ValueError):
    """An unusable pull request; ``str()`` is Go's reason, sent as ``400 Bad Request - <reason>``."""


def decode_pull_request(data: bytes) -> PullRequest:
    """A ``CONSUMER.MSG.NEXT`` body, read as nats-server's ``nextReqFromMsg`` reads it.

    Empty ⇒ batch 1; a JSON object (keys matched case-insensitively, as Go's decoder does); a
    bare integer ⇒ batch N; anything else ⇒ batch 1. ``batch`` below 1 becomes 1. Raises
    `PullRequestError` with Go's text for bad JSON, a wrongly typed field, or an
    ``idle_heartbeat`` more than half of ``expires`` (``heartbeat value too large``).
    """
    req = data.strip()
    if not req:
        return PullRequest(batch=1)
    if req[:1] != b"{":
        try:
            return PullRequest(batch=max(int(req), 1))
        except ValueError:
            return PullRequest(batch=1)
    try:
        # msgspec in C where it gives what ``json.loads`` gives (it refuses what it reads
        # otherwise: NaN, a lone surrogate, invalid UTF-8, an infinite float), else the
        # ``json`` module, whose errors carry what Go's text needs.
        doc = msgspec.json.decode(req)
    except (msgspec.DecodeError, UnicodeDecodeError):
        try:
            doc = loads_go(req)
        except json.JSONDecodeError as exc:
            raise PullRequestError(go_json_error(exc)) from None
        except ValueError:
            raise PullRequestError("invalid JSON") from None
    if not isinstance(doc, dict):
        raise PullRequestError("json: cannot unmarshal request")
    out = _plain_pull_request(doc)
    if out is None:
        out = _read_pull_request(doc)
    if out.idle_heartbeat > 0 and out.idle_heartbeat * 2 > out.expires:
        raise PullRequestError("heartbeat value too large")
    return out


def _read_pull_request(doc: dict[Any, Any]) -> PullRequest:
    """A pull request's fields read one by one from its JSON object, keys case-folded as Go's
    decoder matches them; a wrongly typed field raises `PullRequestError`."""
    doc = {str(k).lower(): v for k, v in doc.items()}
    return PullRequest(
        batch=max(_int_field(doc, "batch"), 1),
        expires=_int_field(doc, "expires"),
        max_bytes=_int_field(doc, "max_bytes"),
        no_wait=doc.get("no_wait") is True,
        idle_heartbeat=_int_field(doc, "idle_heartbeat"),
        group=_str_field(doc, "group"),
        min_pending=_int_field(doc, "min_pending"),
        min_ack_pending=_int_field(doc, "min_ack_pending"),
        id=_str_field(doc, "id"),
        priority=_int_field(doc, "priority"),
    )


_PULL_FIELD_TYPES = {
    "batch": int,
    "expires": int,
    "max_bytes": int,
    "idle_heartbeat": int,
    "min_pending": int,
    "min_ack_pending": int,
    "priority": int,
    "group": str,
    "id": str,
    "no_wait": bool,
}


def _plain_pull_request(doc: dict[str, Any]) -> PullRequest | None:
    """`decode_pull_request`'s request when every key is a field's own (lower-case) name with a
    value of its type — what the field-by-field reading would give, built in one call; None for
    anything else (case-folded or unknown keys, nulls, other types: read field by field)."""
    types = _PULL_FIELD_TYPES
    for key, value in doc.items():
        if types.get(key) is not type(value):
            return None
    out = PullRequest(**doc)
    if out.batch < 1:
        out.batch = 1
    return out


def _int_field(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise PullRequestError(f"json: cannot unmarshal {type(value).__name__} into Go struct field")
    return value


def _str_field(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PullRequestError(f"json: cannot unmarshal {type(value).__name__} into Go struct field")
    return value


_GO_JSON_CONTEXT = {
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting value": "looking for beginning of value",
    "Expecting ':' delimiter": "after object key",
    "Expecting ',' delimiter": "after object key:value pair",
    "Extra data": "after top-level value",
}


def loads_go(body: bytes) -> Any:
    """``json.loads`` of a request body as Go reads it: invalid UTF-8 is not an error (Go takes it
    as U+FFFD); its bytes stay as surrogate escapes, so `go_json_error` can name the byte."""
    return json.loads(body.decode("utf-8", "surrogateescape"))


def go_json_error(exc: json.JSONDecodeError) -> str:
    """The text Go's ``encoding/json`` gives for the same syntax error (common cases)."""
    if exc.pos >= len(exc.doc):
        return "unexpected end of JSON input"
    context = _GO_JSON_CONTEXT.get(exc.msg)
    if context is None:
        return exc.msg
    return f"invalid character {quote_char(exc.doc[exc.pos])} {context}"


# --- PubAck ---------------------------------------------------------------------------------


def pub_ack_prefix(stream: str, domain: str | None = None) -> bytes:
    """The constant head of a stream's PubAcks, up to and including ``"seq":`` (nats-server
    precomputes the same template per stream); finish with `finish_pub_ack`."""
    name = json.dumps(stream, ensure_ascii=False)
    if domain:
        return f'{{"stream":{name},"domain":{json.dumps(domain, ensure_ascii=False)},"seq":'.encode()
    return f'{{"stream":{name},"seq":'.encode()


def finish_pub_ack(prefix: bytes, seq: int, duplicate: bool = False) -> bytes:
    return b"%s%d%s" % (prefix, seq, b',"duplicate": true}' if duplicate else b"}")


def pub_acks(prefix: bytes, first: int, count: int) -> list[bytes]:
    """`finish_pub_ack` of sequences ``first`` … ``first + count - 1`` (a run of stored
    messages, in order)."""
    # One text format for the whole run (the prefix is JSON: no raw newline in it), then split.
    template = prefix.decode().replace("%", "%%") + "%d}\n"
    return (template * count % tuple(range(first, first + count))).encode().split(b"\n")[:-1]


def duplicate_pub_acks(prefix: bytes, seqs: Sequence[int]) -> list[bytes]:
    """`finish_pub_ack` of each of ``seqs`` as a duplicate's (a run of duplicates, in order), in
    one text format as `pub_acks`."""
    template = prefix.decode().replace("%", "%%") + '%d,"duplicate": true}\n'
    return (template * len(seqs) % tuple(seqs)).encode().split(b"\n")[:-1]


def finish_batch_pub_ack(prefix: bytes, seq: int, batch_id: str, count: int, duplicate: bool = False) -> bytes:
    """⟨2.12+⟩ the PubAck of a committed batch: the stream's PubAck with ``"batch"`` and ``"count"``
    appended, e.g. ``{"stream":"S","seq":3,"batch":"A","count":3}`` (nats-server appends
    ``,"batch":%q,"count":%d}`` to its template; a fast batch whose only message was a duplicate
    gets ``,"duplicate": true`` before them)."""
    quoted = json.dumps(batch_id, ensure_ascii=False).encode()
    dup = b',"duplicate": true' if duplicate else b""
    return b"%s%d%s,\"batch\":%s,\"count\":%d}" % (prefix, seq, dup, quoted, count)


def encode_pub_ack(stream: str, seq: int, duplicate: bool = False, domain: str | None = None) -> bytes:
    """nats-server's hand-formatted PubAck bytes (stream.go ``pubAck`` template), e.g.
    ``{"stream":"ORDERS","seq":22}``, ``{"stream":"S","domain":"D","seq":1}``,
    ``{"stream":"S","seq":2,"duplicate": true}`` (2.9.10 put a space after each comma of the
    template; 2.11+ does not)."""
    return finish_pub_ack(pub_ack_prefix(stream, domain), seq, duplicate)


def encode_pub_ack_error(stream: str, error: ApiError) -> bytes:
    """PubAck error reply: ``{"error":{…},"stream":"S","seq":0}`` (Go marshal of JSPubAckResponse)."""
    return encode(PubAckResponse(error=error, stream=stream))


def decode_pub_ack(data: bytes | str) -> PubAckResponse:
    return decode(data, PubAckResponse)
