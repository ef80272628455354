"""Ingest limits (2.11+): ``jetstream { max_buffered_size, max_buffered_msgs }``, 429 / 10167.

A publish that does not fit the stream's ingest queue is refused before any of the stream's own
checks; with a reply subject it is answered ``429 Too Many Requests`` and error 10167.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target

TOO_MANY = b"NATS/1.0 429 Too Many Requests\r\n\r\n"
ERROR_BODY = {
    "error": {"code": 429, "err_code": 10167, "description": "too many requests"},
    "stream": "S",
    "seq": 0,
}


async def _stream(c: RawNats, **cfg: object) -> None:
    body = {"name": "S", "subjects": ["s.>"], **cfg}
    reply = (await c.request("$JS.API.STREAM.CREATE.S", json.dumps(body).encode())).json()
    assert "error" not in reply, reply


async def test_message_over_max_buffered_size_is_refused(start_server: Callable[..., Target]) -> None:
    target = start_server(jetstream_settings={"max_buffered_size": 100, "max_buffered_msgs": 5})
    c = await RawNats.connect(target.url)
    try:
        await _stream(c)
        ok = await c.request("s.a", b"x" * 10)
        assert ok.hdr is None and json.loads(ok.data)["seq"] == 1
        # subject + reply + headers + payload > 100 bytes: refused whatever the stream says.
        for data, hdr in ((b"x" * 100, None), (b"x" * 60, headers(("A", "b" * 40)))):
            msg = await c.request("s.a", data, hdr=hdr)
            assert msg.hdr == TOO_MANY
            assert json.loads(msg.data) == ERROR_BODY
        # Refused before the stream's own checks (here: a wrong expected stream).
        msg = await c.request("s.a", b"y" * 100, hdr=headers(("Nats-Expected-Stream", "OTHER")))
        assert msg.hdr == TOO_MANY
        # Without a reply subject it is dropped silently; the stream still takes small messages.
        c.publish("s.a", b"z" * 200)
        assert json.loads((await c.request("s.b", b"small")).data)["seq"] == 2
        info = (await c.request("$JS.API.STREAM.INFO.S", b"")).json()
        assert info["state"]["messages"] == 2
    finally:
        await c.close()


async def test_default_limits_take_large_messages(server: Target) -> None:
    """The defaults (128 MiB, 100,000 messages) let any message the server accepts through."""
    c = await RawNats.connect(server.url)
    try:
        await _stream(c, storage="memory")
        msg = await c.request("s.big", b"x" * 900_000)
        assert msg.hdr is None and json.loads(msg.data)["seq"] == 1
    finally:
        await c.close()


async def test_limits_survive_a_restart(start_server: Callable[..., Target]) -> None:
    target = start_server(jetstream_settings={"max_buffered_size": "1K"})
    c = await RawNats.connect(target.url)
    try:
        await _stream(c)
        assert (await c.request("s.a", b"x" * 2000)).hdr == TOO_MANY
    finally:
        await c.close()
    target.restart()
    c = await RawNats.connect(target.url)
    try:
        assert (await c.request("s.a", b"x" * 2000)).hdr == TOO_MANY
        assert (await c.request("s.a", b"x" * 500)).hdr is None
    finally:
        await c.close()
