"""Message bodies in and out: the nats CLI's ``{{Count}}`` templates and how messages are printed.

Templates (applied to bodies and header values, as ``nats pub``): ``{{Count}}`` (1-based message
number), ``{{ID}}`` (a unique id), ``{{TimeStamp}}`` (RFC3339), ``{{Time}}`` (``3:04PM``),
``{{Unix}}``, ``{{UnixNano}}``, ``{{Random 5 10}}`` (random letters, 5 to 10 of them) and, for
``reply``, ``{{Request}}`` (the request body).
"""

from __future__ import annotations

import base64
import random
import re
import string
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pyjetstream.cli.errors import UsageError

__all__ = ["Template", "message_json", "print_message"]

_TAG = re.compile(r"\{\{\s*(\w+)((?:\s+-?\d+)*)\s*\}\}")
_FUNCS = {"Count", "ID", "TimeStamp", "Time", "Unix", "UnixNano", "Random", "Request"}


class Template:
    """A body or header value with ``{{…}}`` tags, checked once and rendered per message."""

    def __init__(self, text: str, *, enabled: bool = True, allow_request: bool = False) -> None:
        self.text = text
        self.static = not enabled or "{{" not in text
        if not self.static:
            for m in _TAG.finditer(text):
                name, argv = m.group(1), m.group(2).split()
                if name not in _FUNCS or (name == "Request" and not allow_request):
                    raise UsageError(f"unknown template function {name!r} in {text!r}")
                if name == "Random" and len(argv) != 2:
                    raise UsageError("template function Random takes two numbers: {{Random min max}}")

    def render(self, count: int, request: bytes = b"") -> str:
        if self.static:
            return self.text

        def sub(m: re.Match[str]) -> str:
            name, argv = m.group(1), [int(a) for a in m.group(2).split()]
            if name == "Count":
                return str(count)
            if name == "ID":
                # Deferred: CLI start-up speed (loaded only when this command runs).
                from pyjetstream.client import next_nuid

                return next_nuid()
            if name == "TimeStamp":
                return datetime.now(UTC).isoformat()
            if name == "Time":
                return datetime.now().strftime("%-I:%M%p")
            if name == "Unix":
                return str(int(time.time()))
            if name == "UnixNano":
                return str(time.time_ns())
            if name == "Random":
                low, high = sorted((max(argv[0], 0), max(argv[1], 0)))
                return "".join(random.choices(string.ascii_letters, k=random.randint(low, high)))
            return request.decode("utf-8", "replace")  # Request

        return _TAG.sub(sub, self.text)


def render_headers(
    templates: Mapping[str, Sequence[Template]], count: int, request: bytes = b""
) -> dict[str, list[str]] | None:
    if not templates:
        return None
    return {name: [t.render(count, request) for t in values] for name, values in templates.items()}


def header_templates(
    headers: Mapping[str, Sequence[str]], *, enabled: bool = True
) -> dict[str, list[Template]]:
    return {name: [Template(v, enabled=enabled) for v in values] for name, values in headers.items()}


def _data_fields(data: bytes) -> dict[str, str]:
    try:
        return {"data": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"data_base64": base64.b64encode(data).decode()}


def message_json(
    subject: str,
    data: bytes,
    headers: Mapping[str, Sequence[str]] | None = None,
    reply: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """A message as one JSON object: subject, reply, headers (name → values), data (or data_base64)."""
    out: dict[str, Any] = {"subject": subject}
    if reply:
        out["reply"] = reply
    out.update({k: v for k, v in extra.items() if v is not None})
    if headers:
        out["headers"] = {k: list(v) for k, v in headers.items()}
    out.update(_data_fields(data))
    return out


def print_message(
    title: str,
    data: bytes,
    headers: Mapping[str, Sequence[str]] | None = None,
    *,
    raw: bool = False,
    headers_only: bool = False,
) -> None:
    """``[#n] Received on "subj"`` then headers, a blank line and the body (``raw``: the body only)."""
    out = sys.stdout
    if raw:
        _write_bytes(data + b"\n")
        return
    lines = [title]
    for name, values in (headers or {}).items():
        lines.extend(f"{name}: {value}" for value in values)
    out.write("\n".join(lines) + "\n")
    if not headers_only:
        out.write("\n")
        _write_bytes(data + b"\n")
    out.write("\n")
    out.flush()


def _write_bytes(data: bytes) -> None:
    """Bodies go out as the bytes they are (binary-safe), in order with the text around them."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8", "replace"))
    else:
        buffer.write(data)
        buffer.flush()


# Headers a direct get adds to describe the stored message (not part of the message itself).
DIRECT_GET_HEADERS = frozenset(
    {
        "nats-stream",
        "nats-subject",
        "nats-sequence",
        "nats-time-stamp",
        "nats-num-pending",
        "nats-last-sequence",
    }
)


def headers_of(msg: Any, *, drop: frozenset[str] = frozenset()) -> dict[str, list[str]] | None:
    """All header values of a core or JetStream message (status lines and ``drop`` names excluded)."""
    block = getattr(msg, "header_block", None)
    if block is not None:
        return {k: list(v) for k, v in block.headers.items() if k.lower() not in drop} or None
    headers = getattr(msg, "headers", None)
    if not headers:
        return None
    return {k: (list(v) if isinstance(v, list | tuple) else [v]) for k, v in headers.items()}
