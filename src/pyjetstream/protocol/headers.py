"""NATS header blocks (ADR-4): ``NATS/1.0[ <status>[ <description>]]\\r\\n`` + ``Name: value`` lines.

Header names keep their case and may repeat, so headers are a ``dict[str, list[str]]``.
An inline status (``503``, ``404 No Messages``, ``100 Idle Heartbeat`` …) lives on the first line and is
returned beside the headers rather than mixed into them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyjetstream.protocol.limits import CRLF, EMPTY_HEADER, HEADER_VERSION_BYTES

HeaderValues = Mapping[str, str | Iterable[str]]


#: Message tracing (ADR-41) as the server's hot path tests it: the header that asks for a trace, the
#: W3C one an account may sample (any case), and the shortest header block that can hold either
#: (``NATS/1.0␍␊Nats-Trace-Dest:x␍␊␍␊``; a ``traceparent`` line is longer): shorter blocks are not
#: searched at all. ``server/msgtrace.py`` reads the headers of a block that may be traced.
TRACE_DEST = b"Nats-Trace-Dest"
TRACE_PARENT = b"traceparent"
MIN_TRACED_HDR = 31


def has_trace_parent(hdr: bytes) -> bool:
    """A ``traceparent`` header, in any case (asked only where the account has ``msg_trace``)."""
    return hdr.lower().find(TRACE_PARENT) >= 0


def may_be_traced(hdr: bytes, sampled: bool) -> bool:
    """Could this header block start a trace? ``sampled``: the publisher's account traces
    ``traceparent`` headers (``msg_trace``)."""
    return len(hdr) >= MIN_TRACED_HDR and (hdr.find(TRACE_DEST) >= 0 or (sampled and has_trace_parent(hdr)))


class HeaderError(ValueError):
    """A header block that does not follow ``NATS/1.0`` framing."""


class HeaderBlock:
    """A parsed header block: ``status`` (0 when absent), ``description`` and the headers."""

    __slots__ = ("description", "headers", "status")

    def __init__(self, headers: dict[str, list[str]], status: int = 0, description: str = "") -> None:
        self.headers = headers
        self.status = status
        self.description = description

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of ``name`` (exact case first, then case-insensitively)."""
        values = self.headers.get(name)
        if values is None:
            lowered = name.lower()
            for key, vals in self.headers.items():
                if key.lower() == lowered:
                    values = vals
                    break
        return values[0] if values else default

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HeaderBlock):
            return NotImplemented
        return (self.headers, self.status, self.description) == (
            other.headers,
            other.status,
            other.description,
        )

    def __repr__(self) -> str:
        return f"HeaderBlock(status={self.status}, description={self.description!r}, headers={self.headers})"


def encode_headers(headers: HeaderValues | None = None, status: int = 0, description: str = "") -> bytes:
    """Encode a header block, including the blank line that ends it."""
    if not headers and not status:
        return EMPTY_HEADER
    first = "NATS/1.0"
    if status:
        first = f"NATS/1.0 {status:03d}"
        if description:
            first += " " + description
    parts = [first]
    if headers:
        for name, value in headers.items():
            _check_name(name)
            if isinstance(value, str):
                parts.append(f"{name}: {_check_value(value)}")
            else:
                parts.extend(f"{name}: {_check_value(v)}" for v in value)
    parts.append("")
    parts.append("")
    return "\r\n".join(parts).encode()


def _check_name(name: str) -> None:
    if not name or any(c in name for c in ":\r\n "):
        raise HeaderError(f"invalid header name {name!r}")


def _check_value(value: str) -> str:
    if "\r" in value or "\n" in value:
        raise HeaderError(f"invalid header value {value!r}")
    return value


def parse_headers(raw: bytes | bytearray | memoryview) -> HeaderBlock:
    """Parse a complete header block (as carried by HPUB/HMSG)."""
    data = bytes(raw)
    if not data.startswith(HEADER_VERSION_BYTES):
        raise HeaderError("header block does not start with NATS/1.0")
    end = data.find(CRLF)
    if end < 0:
        raise HeaderError("header block has no line ending")
    status, description = _parse_status_line(data[len(HEADER_VERSION_BYTES) : end])
    headers: dict[str, list[str]] = {}
    for line in data[end + 2 :].split(CRLF):
        if not line:
            continue
        colon = line.find(b":")
        if colon <= 0:
            # Go's textproto (used by nats.go and nats-server) rejects such lines; skip, never crash.
            continue
        name = line[:colon].decode("utf-8", "replace").strip()
        value = line[colon + 1 :].decode("utf-8", "replace").strip()
        headers.setdefault(name, []).append(value)
    return HeaderBlock(headers, status, description)


def _parse_status_line(rest: bytes) -> tuple[int, str]:
    # Clients only treat the line as carrying a status when a space follows NATS/1.0 (nats.py, nats.go).
    if not rest.startswith(b" "):
        return 0, ""
    text = rest.decode("utf-8", "replace").strip()
    if len(text) < 3 or not text[:3].isdigit():
        return 0, ""
    return int(text[:3]), text[3:].strip()


def get_header(raw: bytes | bytearray, name: bytes) -> bytes | None:
    """Fast lookup as nats-server's ``getHeader``/``sliceHeader``: the first line starting with
    the case-sensitive name and ``:``; its value with leading spaces skipped and everything else
    up to the CRLF kept — a trailing space or a tab is part of the value, so ``Nats-Msg-Id: a ``
    is another id than ``a`` and ``Nats-Expected-Last-Sequence: 5 `` is no number.

    Used on the server's hot path so that JetStream headers are found without a full parse.
    """
    key = CRLF + name + b":"
    idx = raw.find(key)
    if idx < 0:
        return None
    start = idx + len(key)
    end = raw.find(CRLF, start)
    if end < 0:
        return None
    return bytes(raw[start:end]).lstrip(b" ")


def remove_header(raw: bytes, name: bytes) -> bytes:
    """Remove every ``name:`` line from an encoded block (returns the block unchanged when absent)."""
    key = CRLF + name + b":"
    while True:
        idx = raw.find(key)
        if idx < 0:
            return raw
        end = raw.find(CRLF, idx + len(key))
        raw = raw[:idx] + raw[end:]


def append_headers(raw: bytes | None, extra: Iterable[tuple[str, str]]) -> bytes:
    """Append ``Name: value`` lines before the block's final blank line (creating a block if needed)."""
    base = bytes(raw) if raw else EMPTY_HEADER
    lines = b"".join(f"{k}: {v}\r\n".encode() for k, v in extra)
    return base[:-2] + lines + CRLF


def set_header(raw: bytes, name: bytes, value: bytes) -> bytes:
    """Replace the value of the first ``name:`` line in place, or append the line when absent
    (nats-server ``setHeader``: the line keeps its position, a single space after the colon
    is kept)."""
    key = CRLF + name + b":"
    idx = raw.find(key)
    if idx < 0:
        base = raw if raw else EMPTY_HEADER
        return base[:-2] + name + b": " + value + CRLF + CRLF
    start = idx + len(key)
    if raw[start : start + 1] == b" ":
        start += 1
    end = raw.find(b"\r", start)
    if end < 0:
        return raw
    return raw[:start] + value + raw[end:]
