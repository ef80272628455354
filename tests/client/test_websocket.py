"""``ws://`` and ``wss://`` servers: the client over a server's WebSocket listener (``websocket {}``),
against both targets — the same core connection as over TCP (pub/sub, requests, headers, big
payloads, JetStream), TLS from the first byte for ``wss://``, reconnect to the same listener, and
refusals (a plain TCP port, an upgrade refused by the origin check) as one clear error."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Callable

import pytest
from tests.support.targets import Target

from pyjetstream.api import StreamConfig
from pyjetstream.client import NoServersError, connect
from pyjetstream.client.jetstream import JetStream
from pyjetstream.client.options import parse_server_url


def _ws(**extra: object) -> dict[str, object]:
    return {"websocket": {"host": "127.0.0.1", "port": -1, "no_tls": True, **extra}}


def test_ws_urls_parse() -> None:
    a = parse_server_url("ws://u:p@example.com/nats")
    assert (a.websocket, a.tls, a.port, a.path, a.user, a.password) == (True, False, 80, "/nats", "u", "p")
    assert a.url == "ws://example.com:80/nats"
    b = parse_server_url("wss://example.com")
    assert (b.websocket, b.tls, b.port, b.path) == (True, True, 443, "/")
    assert b.url == "wss://example.com:443"
    assert parse_server_url("wss://h:8443").port == 8443
    with pytest.raises(ValueError, match=r"use nats://, tls://, ws:// or wss://"):
        parse_server_url("http://h:1")


async def test_core_and_jetstream_over_ws(start_server: Callable[..., Target]) -> None:
    target = start_server(**_ws())
    assert target.ws_url.startswith("ws://")
    nc = await connect(target.ws_url)
    tcp = await connect(target.url)
    try:
        assert nc.connected_url == target.ws_url
        sub = await nc.subscribe("greet.*")
        await nc.flush()
        big = bytes(range(256)) * 2000  # 512 KB: many WebSocket frames each way
        await tcp.publish("greet.a", b"hello", headers={"X-From": "tcp"})
        await tcp.publish("greet.b", big)
        first = await sub.next_msg(10)
        assert (first.subject, first.data, first.headers) == ("greet.a", b"hello", {"X-From": "tcp"})
        assert (await sub.next_msg(10)).data == big

        async def echo(msg: object) -> None:
            await msg.respond(msg.data[::-1])  # type: ignore[attr-defined]

        await tcp.subscribe("rev", cb=echo)
        await tcp.flush()
        assert (await nc.request("rev", b"abc", timeout=10)).data == b"cba"
        assert await nc.rtt(10) >= 0

        js = JetStream(nc, timeout=10)
        await js.create_stream(StreamConfig(name="WS", subjects=["ws.>"]))
        acks = [await js.publish(f"ws.{i}", f"m{i}".encode()) for i in range(3)]
        assert [a.seq for a in acks] == [1, 2, 3]
        stream = await js.stream("WS")
        assert (await stream.get_msg(2)).data == b"m1"
    finally:
        await nc.close()
        await tcp.close()


async def test_ws_client_reconnects_to_the_listener(start_server: Callable[..., Target]) -> None:
    target = start_server(**_ws(port=_free_port()))
    reconnected = asyncio.Event()
    nc = await connect(
        target.ws_url, reconnect_time_wait=0.2, max_reconnect_attempts=-1, reconnected_cb=reconnected.set
    )
    try:
        sub = await nc.subscribe("after")
        await nc.flush()
        target.restart()
        await asyncio.wait_for(reconnected.wait(), 30)
        await nc.flush(10)
        tcp = await connect(target.url)
        await tcp.publish("after", b"back")
        await tcp.close()
        assert (await sub.next_msg(10)).data == b"back"
    finally:
        await nc.close()


async def test_wss(start_server: Callable[..., Target], cert: tuple[str, str]) -> None:
    """``wss://``: TLS from the first byte, the server's certificate checked against our CA (and no
    second TLS upgrade although its INFO says ``tls_required``)."""
    crt, key = cert
    target = start_server(websocket={"host": "127.0.0.1", "port": -1, "tls": {"cert_file": crt, "key_file": key}})
    assert target.ws_url.startswith("wss://")
    ctx = ssl.create_default_context(cafile=crt)
    nc = await connect(target.ws_url, tls=ctx)
    try:
        sub = await nc.subscribe("s")
        await nc.publish("s", b"secure")
        assert (await sub.next_msg(10)).data == b"secure"
    finally:
        await nc.close()
    # Not trusting the certificate is a clear refusal, not a hang.
    with pytest.raises(NoServersError, match=r"TLS: the server's certificate was not accepted"):
        await connect(target.ws_url, connect_timeout=5, reconnect=False)


async def test_refusals_are_one_clear_error(start_server: Callable[..., Target]) -> None:
    target = start_server(**_ws(allowed_origins=["https://good.example"]))
    # A ws:// URL at the plain NATS port: no HTTP upgrade answer comes (the server sent INFO).
    tcp_port = target.url.rsplit(":", 1)[1]
    with pytest.raises(NoServersError, match=rf"could not connect to ws://127.0.0.1:{tcp_port}"):
        await connect(f"ws://127.0.0.1:{tcp_port}", connect_timeout=2, reconnect=False)
    # Nothing listening.
    with pytest.raises(NoServersError, match=r"connection refused"):
        await connect(f"ws://127.0.0.1:{_free_port()}", connect_timeout=2, reconnect=False)


async def test_nothing_listening_says_so() -> None:
    with pytest.raises(NoServersError) as info:
        await connect(f"nats://127.0.0.1:{_free_port()}", connect_timeout=2)
    text = str(info.value)
    assert text.startswith("could not connect to nats://127.0.0.1:")
    assert "connection refused" in text
    assert "ConnectionRefusedError" not in text and "111" not in text


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (and its key)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("wss")
    key, crt = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
         "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return str(crt), str(key)
