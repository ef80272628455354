"""Decode a JetStream API request as nats-server 2.11+ does, with Go's error texts.

nats-server reads a request with a ``json.Decoder`` that disallows unknown fields (the strict
API, ``unmarshalRequest`` in jetstream_api.go) and answers a failure with 10025
``invalid JSON: <Go's error>``. Clients show that text, so it is reproduced here:

- the body is a sequence of JSON values decoded one after the other into the same struct (so
  ``{"name":"A"} {"name":"B"}`` means ``B``; an empty body is the zero request);
- a syntax error is the Go scanner's message plus ``at offset N`` (bytes read, counted from the
  start of the body); a body that ends inside a value is ``unexpected EOF``;
- then the first of: an unknown field (``json: unknown field "x"``), a value of the wrong type
  (``json: cannot unmarshal string into Go struct field StreamConfigRequest.max_age of type
  time.Duration``) or an enum the server's ``UnmarshalJSON`` refuses, in document order;
- keys match struct fields case-insensitively, as in Go; ``null`` leaves a field unchanged.

With ``strict=False`` (``jetstream { strict: false }``) unknown fields are ignored.

The Go names and types of every request's fields are data here (`GO_TYPES`); a field not
listed there gets the obvious Go type of its Python annotation.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from .timefmt import NanoTime

__all__ = ["GoJsonError", "decode_go", "go_error"]

T = TypeVar("T")


class GoJsonError(ValueError):
    """The request does not decode; ``str()`` is Go's error text (without ``invalid JSON: ``)."""


# --- the scanner ----------------------------------------------------------------------------------

_WS = b" \t\r\n"


def quote_char(ch: str) -> str:
    """Go's ``quoteChar`` of the character its scanner stopped at (``ch``: one character, an
    invalid UTF-8 byte as a surrogate escape). nats-server 2.15.1's Go decodes the whole rune:
    ``'é'`` for a valid one, ``'\\xd1'`` for an invalid byte."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    c = ord(ch)
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the invalid byte c - 0xDC00
        return f"'\\x{c - 0xDC00:02x}'"
    if ch.isprintable():
        return f"'{ch}'"
    escapes = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
    if c in escapes:
        return f"'{escapes[c]}'"
    if c < 0x80:
        return f"'\\x{c:02x}'"
    return f"'\\u{c:04x}'" if c < 0x10000 else f"'\\U{c:08x}'"


def rune_at(data: bytes, pos: int) -> tuple[str, int]:
    """The character at ``data[pos]`` as Go's ``utf8.DecodeRune`` reads it, and its width in bytes
    (an invalid byte: its surrogate escape, width 1)."""
    for width in (1, 2, 3, 4):
        chunk = data[pos : pos + width]
        try:
            return chunk.decode(), width
        except UnicodeDecodeError as exc:
            if exc.reason != "unexpected end of data" or len(chunk) < width:
                break
    return chr(0xDC00 + data[pos]), 1


class _Syntax(Exception):
    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message if offset is None else f"{message} at offset {offset}")


class _Scanner:
    """Go's encoding/json scanner over one body, value by value (``Decoder.readValue``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _err(self, what: str) -> _Syntax:
        ch, width = rune_at(self.data, self.pos)
        return _Syntax(f"invalid character {quote_char(ch)} {what}", self.pos + width)

    def _eof(self) -> _Syntax:
        return _Syntax("unexpected EOF", None)

    def _peek(self) -> int:
        if self.pos >= len(self.data):
            raise self._eof()
        return self.data[self.pos]

    def _skip_ws(self) -> None:
        data = self.data
        while self.pos < len(data) and data[self.pos] in _WS:
            self.pos += 1

    def next_value(self) -> tuple[int, int] | None:
        """The span of the next top-level value, or None at the end of the body."""
        self._skip_ws()
        if self.pos >= len(self.data):
            return None
        start = self.pos
        self._value("looking for beginning of value")
        return start, self.pos

    def _value(self, context: str) -> None:
        self._skip_ws()
        c = self._peek()
        if c == 0x7B:  # {
            self.pos += 1
            self._object()
        elif c == 0x5B:  # [
            self.pos += 1
            self._array()
        elif c == 0x22:
            self.pos += 1
            self._string()
        elif c == 0x2D or 0x30 <= c <= 0x39:
            self._number()
        elif c == 0x74:
            self._literal(b"true")
        elif c == 0x66:
            self._literal(b"false")
        elif c == 0x6E:
            self._literal(b"null")
        else:
            raise self._err(context)

    def _object(self) -> None:
        self._elements(0x7D, self._member, "after object key:value pair")

    def _member(self) -> None:
        self._skip_ws()
        if self._peek() != 0x22:
            raise self._err("looking for beginning of object key string")
        self.pos += 1
        self._string()
        self._skip_ws()
        if self._peek() != 0x3A:
            raise self._err("after object key")
        self.pos += 1
        self._value("looking for beginning of value")

    def _array(self) -> None:
        self._elements(0x5D, self._element, "after array element")

    def _element(self) -> None:
        self._value("looking for beginning of value")

    def _elements(self, close: int, element: Callable[[], None], after: str) -> None:
        """The comma-separated elements of an object (key:value pairs) or an array, up to
        ``close``; ``after`` is Go's scanner context for anything else after an element."""
        self._skip_ws()
        if self._peek() == close:
            self.pos += 1
            return
        while True:
            element()
            self._skip_ws()
            c = self._peek()
            if c == 0x2C:
                self.pos += 1
                continue
            if c == close:
                self.pos += 1
                return
            raise self._err(after)

    def _string(self) -> None:
        data = self.data
        while True:
            c = self._peek()
            if c == 0x22:
                self.pos += 1
                return
            if c == 0x5C:
                self.pos += 1
                e = self._peek()
                if e in b'bfnrt\\/"':
                    self.pos += 1
                elif e == 0x75:
                    self.pos += 1
                    for _ in range(4):
                        h = self._peek()
                        if h not in b"0123456789abcdefABCDEF":
                            raise self._err("in \\u hexadecimal character escape")
                        self.pos += 1
                else:
                    raise self._err("in string escape code")
            elif c < 0x20:
                raise self._err("in string literal")
            else:
                end = data.find(b'"', self.pos)
                bs = data.find(b"\\", self.pos)
                stop = min(x for x in (end, bs, len(data)) if x >= 0)
                chunk = data[self.pos : stop]
                bad = next((i for i, b in enumerate(chunk) if b < 0x20), None)
                if bad is not None:
                    self.pos += bad
                    raise self._err("in string literal")
                self.pos = stop

    def _digits(self) -> int:
        n = 0
        while self.pos < len(self.data) and 0x30 <= self.data[self.pos] <= 0x39:
            self.pos += 1
            n += 1
        return n

    def _number(self) -> None:
        if self._peek() == 0x2D:
            self.pos += 1
            if not 0x30 <= self._peek() <= 0x39:
                raise self._err("in numeric literal")
        if self._peek() == 0x30:
            self.pos += 1
        else:
            self._digits()
        if self.pos < len(self.data) and self.data[self.pos] == 0x2E:
            self.pos += 1
            if not 0x30 <= self._peek() <= 0x39:
                raise self._err("after decimal point in numeric literal")
            self._digits()
        if self.pos < len(self.data) and self.data[self.pos] in b"eE":
            self.pos += 1
            if self._peek() in b"+-":
                self.pos += 1
            if not 0x30 <= self._peek() <= 0x39:
                raise self._err("in exponent of numeric literal")
            self._digits()

    def _literal(self, word: bytes) -> None:
        self.pos += 1
        for expect in word[1:]:
            if self._peek() != expect:
                raise self._err(f"in literal {word.decode()} (expecting {quote_char(chr(expect))})")
            self.pos += 1


# --- Go types -------------------------------------------------------------------------------------

#: Go struct names of the request models (the ``Struct`` of Go's type errors).
GO_STRUCTS: dict[str, str] = {
    "StreamConfigRequest": "StreamConfigRequest",
    "CreateConsumerRequest": "CreateConsumerRequest",
    "MsgGetRequest": "JSApiMsgGetRequest",
    "MsgDeleteRequest": "JSApiMsgDeleteRequest",
    "StreamPurgeRequest": "JSApiStreamPurgeRequest",
    "StreamInfoRequest": "JSApiStreamInfoRequest",
    "StreamNamesRequest": "JSApiStreamNamesRequest",
    "StreamListRequest": "JSApiStreamListRequest",
    "ConsumerNamesRequest": "JSApiConsumersRequest",
    "ConsumerListRequest": "JSApiConsumersRequest",
    "PullRequest": "JSApiConsumerGetNextRequest",
    "StreamSnapshotRequest": "JSApiStreamSnapshotRequest",
    "StreamRestoreRequest": "JSApiStreamRestoreRequest",
    "StreamRemovePeerRequest": "JSApiStreamRemovePeerRequest",
    "ConsumerPauseRequest": "JSApiConsumerPauseRequest",
    "ConsumerUnpinRequest": "JSApiConsumerUnpinRequest",
    "StreamConfig": "StreamConfig",
    "ConsumerConfig": "ConsumerConfig",
}

_DURATION = "time.Duration"
#: Go types of integer fields that are not Go ``int`` (by model, then field).
GO_TYPES: dict[str, dict[str, str]] = {
    "StreamConfig": {
        "max_msgs": "int64",
        "max_bytes": "int64",
        "max_age": _DURATION,
        "max_msgs_per_subject": "int64",
        "max_msg_size": "int32",
        "duplicate_window": _DURATION,
        "first_seq": "uint64",
        "subject_delete_marker_ttl": _DURATION,
    },
    "StreamConsumerLimits": {"inactive_threshold": _DURATION},
    "StreamSource": {"opt_start_seq": "uint64"},
    "ConsumerConfig": {
        "opt_start_seq": "uint64",
        "ack_wait": _DURATION,
        "backoff": "[]time.Duration",
        "rate_limit_bps": "uint64",
        "max_expires": _DURATION,
        "idle_heartbeat": _DURATION,
        "inactive_threshold": _DURATION,
        "priority_timeout": _DURATION,
    },
    "MsgGetRequest": {"seq": "uint64", "up_to_seq": "uint64"},
    "MsgDeleteRequest": {"seq": "uint64"},
    "StreamPurgeRequest": {"seq": "uint64", "keep": "uint64"},
    "PullRequest": {"expires": _DURATION, "idle_heartbeat": _DURATION, "min_pending": "int64", "min_ack_pending": "int64"},
}

#: Enums whose ``UnmarshalJSON`` has its own message (``{raw}`` = the JSON text as Go's %q, ``{text}``
#: = the string value as %q); the others say ``can not unmarshal {raw}``.
ENUM_ERRORS: dict[str, str] = {
    "StoreCompression": "unknown compression algorithm",
    "PriorityPolicy": "unknown priority policy: {text}",
    "ConsumerAction": "unknown consumer action: {text}",
}

_INT_RANGES = {
    "int": (-(1 << 63), (1 << 63) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    _DURATION: (-(1 << 63), (1 << 63) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint64": (0, (1 << 64) - 1),
}
_INT_LITERAL = re.compile(rb"-?(0|[1-9][0-9]*)")


def go_quote(text: str) -> str:
    """Go's ``%q``: error texts that format a value with it (JSON field names, rollup values, subjects)."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable():
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)



class _Field(msgspec.Struct, frozen=True):
    """One field of a model as the Go-JSON checks see it: its JSON key, annotation and Go type name."""

    name: str  # JSON key
    kind: Any  # annotation
    go_type: str


@functools.cache
def _struct_fields(cls: type) -> dict[str, _Field]:
    """JSON key → field, with the Go type from `GO_TYPES` of the class that declares it."""
    hints = typing.get_type_hints(cls)
    go_types: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        go_types.update(GO_TYPES.get(klass.__name__, {}))
    return {
        name: _Field(name, hints[name], go_types.get(name) or _go_type_name(hints[name]))
        for name in cls.__struct_fields__  # type: ignore[attr-defined]
    }


def _strip_optional(kind: Any) -> Any:
    args = typing.get_args(kind)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return kind


def _go_type_name(kind: Any) -> str:
    kind = _strip_optional(kind)
    origin = typing.get_origin(kind)
    if origin is list:
        (item,) = typing.get_args(kind)
        inner = _go_type_name(item)
        if isinstance(item, type) and issubclass(item, msgspec.Struct) and item.__name__ == "StreamSource":
            inner = "*" + inner
        return "[]" + inner
    if origin is dict:
        return "map[string]string"
    if kind is str:
        return "string"
    if kind is bool:
        return "bool"
    if kind is int:
        return "int"
    if kind is bytes:
        return "[]uint8"
    if isinstance(kind, type) and issubclass(kind, NanoTime):
        return "time.Time"
    if isinstance(kind, type):
        return f"server.{GO_STRUCTS.get(kind.__name__, kind.__name__)}"
    return "interface {}"


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "number"


class _Checker:
    """Walks decoded JSON against a model, Go's decoder semantics: first error in document order."""

    def __init__(self, root: str, strict: bool) -> None:
        self.root = root
        self.strict = strict

    def type_error(self, value: str, path: list[str], go_type: str) -> GoJsonError:
        where = ".".join([self.root, *path])
        if path and path[-1].isdigit():
            return GoJsonError(f"json: cannot unmarshal {value} into {where} of type {go_type}")
        return GoJsonError(f"json: cannot unmarshal {value} into Go struct field {where} of type {go_type}")

    def struct(self, cls: type, obj: Any, path: list[str], go_type: str) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise self.type_error(_kind_of(obj), path, go_type)
        fields = _struct_fields(cls)
        folded = {name.lower(): name for name in fields}
        out: dict[str, Any] = {}
        for key, value in obj.items():
            name = key if key in fields else folded.get(key.lower())
            if name is None:
                if self.strict:
                    raise GoJsonError(f"json: unknown field {go_quote(key)}")
                continue
            field = fields[name]
            checked = self.value(field.kind, value, [*path, name], field.go_type)
            if checked is not _UNSET:
                out[name] = checked
        return out

    def value(self, kind: Any, value: Any, path: list[str], go_type: str) -> Any:
        kind = _strip_optional(kind)
        origin = typing.get_origin(kind)
        if isinstance(kind, type) and issubclass(kind, str) and kind is not str:  # an enum
            return self.enum(kind, value)
        if value is None:
            return _UNSET
        if origin is list:
            if not isinstance(value, list):
                raise self.type_error(_kind_of(value), path, go_type)
            (item,) = typing.get_args(kind)
            item_type = go_type[2:].lstrip("*") if go_type.startswith("[]") else _go_type_name(item)
            out = []
            for i, element in enumerate(value):
                checked = self.value(item, element, [*path, str(i)], item_type)
                out.append(None if checked is _UNSET else checked)
            return out
        if origin is dict:
            if not isinstance(value, dict):
                raise self.type_error(_kind_of(value), path, go_type)
            for key, element in value.items():
                if element is not None and not isinstance(element, str):
                    raise self.type_error(_kind_of(element), [*path, key], "string")
            return {k: v for k, v in value.items() if v is not None}
        if kind is str:
            if not isinstance(value, str):
                raise self.type_error(_kind_of(value), path, go_type)
            return value
        if kind is bool:
            if not isinstance(value, bool):
                raise self.type_error(_kind_of(value), path, go_type)
            return value
        if kind is int:
            if isinstance(value, _Number):
                low, high = _INT_RANGES.get(go_type, _INT_RANGES["int64"])
                if not _INT_LITERAL.fullmatch(value.raw) or not low <= int(value.raw) <= high:
                    raise self.type_error(f"number {value.raw.decode()}", path, go_type)
                return int(value.raw)
            raise self.type_error(_kind_of(value), path, go_type)
        if isinstance(kind, type) and issubclass(kind, NanoTime):
            if not isinstance(value, str):
                raise self.type_error(_kind_of(value), path, go_type)
            return value
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            return self.struct(kind, value, path, go_type)
        return _plain(value)

    def enum(self, kind: type, value: Any) -> Any:
        if isinstance(value, str):
            try:
                kind(value)  # the members, and aliases its _missing_ accepts
            except ValueError:
                pass
            else:
                return value
        raw = "null" if value is None else msgspec.json.encode(_plain(value)).decode()
        text = value if isinstance(value, str) else raw
        template = ENUM_ERRORS.get(kind.__name__, "can not unmarshal {raw}")
        raise GoJsonError(template.format(raw=go_quote(raw), text=go_quote(text)))


class _Unset:
    pass


_UNSET = _Unset()


class _Number:
    """A JSON number kept as written (Go reports the literal in its errors)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def _plain(value: Any) -> Any:
    if isinstance(value, _Number):
        return float(value.raw) if not _INT_LITERAL.fullmatch(value.raw) else int(value.raw)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parse(span: bytes) -> Any:
    """A syntactically valid JSON value, numbers kept as `_Number`."""
    import json

    return json.loads(span.decode(errors="replace"), parse_int=lambda s: _Number(s.encode()), parse_float=lambda s: _Number(s.encode()))


def _enum_safe(kind: Any) -> bool:
    kind = _strip_optional(kind)
    return isinstance(kind, type) and issubclass(kind, str) and kind is not str


def _merge(target: dict[str, Any], update: dict[str, Any], cls: type) -> None:
    """Go decodes successive values into the same struct: fields are overwritten, nested structs
    merged."""
    fields = _struct_fields(cls)
    for key, value in update.items():
        kind = _strip_optional(fields[key].kind)
        if isinstance(value, dict) and isinstance(target.get(key), dict) and isinstance(kind, type) and issubclass(
            kind, msgspec.Struct
        ):
            _merge(target[key], value, kind)
        else:
            target[key] = value


def go_error(data: bytes, cls: type, strict: bool = True) -> str | None:
    """Go's error for decoding ``data`` into ``cls`` (None if it decodes)."""
    try:
        decode_go(data, cls, strict)
    except GoJsonError as exc:
        return str(exc)
    return None


def decode_go(data: bytes, cls: type[T], strict: bool = True, fast: bool = True) -> T:
    """Decode an API request body into ``cls`` as nats-server does; raises `GoJsonError`.

    ``fast`` first tries `_decode_simple` (a flat object of plain fields, the common request:
    a get, a pull's next, a purge), the scanner and checker in Python only when that declines."""
    from . import codec

    if fast:
        simple = _decode_simple(data, cls)
        if simple is not None:
            return simple
    scanner = _Scanner(data)
    root = GO_STRUCTS.get(cls.__name__, cls.__name__)
    checker = _Checker(root, strict)
    merged: dict[str, Any] = {}
    spans: list[tuple[int, int]] = []
    while True:
        try:
            span = scanner.next_value()
        except _Syntax as exc:
            # Go reports a value's syntax error only when it gets to that value.
            for start, end in spans:
                _decode_one(checker, data[start:end], cls, merged)
            raise GoJsonError(str(exc)) from None
        if span is None:
            break
        spans.append(span)
    for start, end in spans:
        _decode_one(checker, data[start:end], cls, merged)
    try:
        return codec.convert(merged, cls)
    except (msgspec.ValidationError, ValueError) as exc:
        raise GoJsonError(str(exc)) from None


# What `_decode_simple` checks a field's value as: a plain value (str, bool, an int in its Go
# range), an enum's wire string, a time's text, a nested struct's object, a list of strings, a map
# of strings to strings.
_PLAIN, _ENUM, _TIME, _STRUCT, _STRINGS, _STRING_MAP = range(6)


@functools.cache
def _simple_fields(cls: type) -> dict[str, tuple[Any, int, int, int]]:
    """JSON key → (Python type, lowest, highest, what it is) of ``cls``'s fields whose value the
    checker takes as is: strings, booleans and integers (with their Go type's range), enums (a
    member's string), times (their text, parsed by the conversion), nested structs (the same
    rules, field by field), lists of strings (``filter_subjects``) and maps of strings to strings
    (``metadata``: a mirror's or source's consumer create names its stream there); not lists of
    anything else, nor anything else."""
    out: dict[str, tuple[Any, int, int, int]] = {}
    for name, field in _struct_fields(cls).items():
        kind = _strip_optional(field.kind)
        args = typing.get_args(kind)
        if typing.get_origin(kind) is list and args == (str,):
            out[name] = (list, 0, 0, _STRINGS)
        elif typing.get_origin(kind) is dict and args == (str, str):
            out[name] = (dict, 0, 0, _STRING_MAP)
        elif kind is str or kind is bool:
            out[name] = (kind, 0, 0, _PLAIN)
        elif kind is int:
            low, high = _INT_RANGES.get(field.go_type, _INT_RANGES["int64"])
            out[name] = (int, low, high, _PLAIN)
        elif _enum_safe(kind):
            out[name] = (kind, 0, 0, _ENUM)
        elif isinstance(kind, type) and issubclass(kind, NanoTime):
            out[name] = (kind, 0, 0, _TIME)
        elif isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            out[name] = (kind, 0, 0, _STRUCT)
    return out


def _decode_simple(data: bytes, cls: type[T]) -> T | None:
    """`decode_go`'s result for a body that is one JSON object whose every key is exactly a
    field of `_simple_fields` with a value of its type and range (`_simple_object`), decoded by
    msgspec in C; None for anything else (the scanner and checker decide: Go's errors,
    case-folded keys, nulls, several values, escapes, a negative zero). Such a body is what the
    checker would build its dict from, value for value (duplicate keys: the last, as both do),
    so the model is the same. The Python scanner cost ~15 µs of a ~30 µs STREAM.MSG.GET, and
    ~40% of the instructions of a consumer create's request (its nested config); a source's
    consumer create (its ``metadata`` a map) took it until session 14: a quarter of the CPU of a
    stream sourcing 1,000 streams catching up."""
    from . import codec

    if data.find(b"\\u") >= 0:  # (a lone surrogate: json and msgspec may differ; rare)
        return None
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):  # (invalid UTF-8: Go reads U+FFFD)
        return None
    if type(obj) is not dict or not _simple_object(obj, cls, data.find(b"-") >= 0):
        return None
    try:
        return codec.convert(obj, cls)
    except (msgspec.ValidationError, ValueError):
        return None


def _simple_object(obj: dict[str, Any], cls: type, minus: bool) -> bool:
    """Every key of ``obj`` exactly a simple field of ``cls`` with a value the checker takes as
    is (`_Checker.value`: an enum the enum accepts — its members and the aliases its
    ``_missing_`` takes —, a time as text, a nested object by the same rules). ``minus``: the
    body has a ``-`` somewhere (a ``-0`` may hide in it, which Go's ParseUint refuses)."""
    fields = _simple_fields(cls)
    for key, value in obj.items():
        spec = fields.get(key)
        if spec is None:
            return False
        kind, low, high, what = spec
        if what == _PLAIN:
            if type(value) is not kind:
                return False
            if type(value) is int and (not low <= value <= high or (value == 0 and low == 0 and minus)):
                return False  # (out of range; "-0")
        elif what == _ENUM:
            if type(value) is not str:
                return False
            try:
                kind(value)
            except ValueError:
                return False
        elif what == _TIME:
            if type(value) is not str:
                return False
        elif what == _STRINGS:  # (the checker's list: each element a string, a null kept as None)
            if type(value) is not list or not all(type(item) is str for item in value):
                return False
        elif what == _STRING_MAP:  # (the checker's map: string values, nulls dropped)
            if type(value) is not dict or not all(type(item) is str for item in value.values()):
                return False
        elif type(value) is not dict or not _simple_object(value, kind, minus):
            return False
    return True


def _decode_one(checker: _Checker, span: bytes, cls: type, merged: dict[str, Any]) -> None:
    value = _parse(span)
    if value is None:
        return
    if not isinstance(value, dict):
        raise GoJsonError(f"json: cannot unmarshal {_kind_of(value)} into Go value of type server.{checker.root}")
    _merge(merged, checker.struct(cls, value, [], f"server.{checker.root}"), cls)
