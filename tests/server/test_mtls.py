"""Mutual TLS on both targets: ``verify``, ``verify_and_map``, pinned certificates, ``handshake_first``,
``allow_non_tls`` and a burst of concurrent TLS connects, with certificates made by the tests."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from tests.support.certs import Cert, CertFactory, have_openssl
from tests.support.natspy import subscriptions_live
from tests.support.targets import Target

StartServer = Callable[..., Target]
TIMEOUT = 10.0

pytestmark = pytest.mark.skipif(not have_openssl(), reason="needs the openssl command")


class Certs:
    def __init__(self, folder: Path) -> None:
        factory = CertFactory(folder)
        self.ca = factory.ca
        self.server = factory.server()
        self.alice = factory.issue("alice", "/CN=alice/O=Acme", "email:alice@example.com")
        self.bob = factory.issue("bob", "/CN=bob/O=Acme")
        self.carol = factory.issue("carol", "/CN=carol/O=Acme", "DNS:carol.example.com")
        self.mallory = factory.self_signed("mallory", "/CN=alice/O=Acme")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("mtls"))


def _tls_block(certs: Certs, **extra: Any) -> dict[str, Any]:
    return {
        "cert_file": certs.server.cert,
        "key_file": certs.server.key,
        "ca_file": certs.ca.cert,
        "timeout": 10,
        **extra,
    }


def _client_ctx(certs: Certs, cert: Cert | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=certs.ca.cert)
    if cert is not None:
        ctx.load_cert_chain(cert.cert, cert.key)
    return ctx


async def _connect(target: Target, ctx: ssl.SSLContext, **kwargs: Any) -> nats.NATS:
    return await nats.connect(
        f"tls://127.0.0.1:{target.port}",
        tls=ctx,
        tls_hostname="127.0.0.1",
        allow_reconnect=False,
        max_reconnect_attempts=0,
        connect_timeout=TIMEOUT,
        **kwargs,
    )


async def _round_trip(nc: nats.NATS) -> None:
    sub = await nc.subscribe("rt")
    await nc.publish("rt", b"ok")
    msg = await sub.next_msg(timeout=TIMEOUT)
    assert msg.data == b"ok"


async def _refused(target: Target, ctx: ssl.SSLContext, **kwargs: Any) -> str:
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    try:
        nc = await _connect(target, ctx, error_cb=on_error, **kwargs)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc} {errors}"
    try:
        await nc.flush(timeout=2)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc} {errors}"
    finally:
        await nc.close()
    raise AssertionError(f"connected: {errors}")


# ------------------------------------------------------------------------------------ verify


async def test_verify_accepts_a_proper_client_certificate(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs, verify=True))
    nc = await _connect(target, _client_ctx(certs, certs.alice))
    try:
        await _round_trip(nc)
        assert nc._server_info.get("tls_verify") is True
    finally:
        await nc.close()


async def test_verify_refuses_missing_or_foreign_certificates(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs, verify=True))
    assert await _refused(target, _client_ctx(certs, None))
    assert await _refused(target, _client_ctx(certs, certs.mallory))  # not signed by the CA
    nc = await _connect(target, _client_ctx(certs, certs.bob))  # the server still serves others
    await _round_trip(nc)
    await nc.close()


# ---------------------------------------------------------------------------- verify_and_map


async def test_verify_and_map_picks_the_user(start_server: StartServer, certs: Certs) -> None:
    users = [
        {"user": "alice@example.com", "permissions": {"publish": "alice.>", "subscribe": ["alice.>", "_INBOX.>"]}},
        {"user": "CN=bob,O=Acme"},
    ]
    target = start_server(
        jetstream=False, tls=_tls_block(certs, verify_and_map=True), authorization={"users": users}
    )
    alice = await _connect(target, _client_ctx(certs, certs.alice))
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    alice._error_cb = on_error
    try:
        sub = await alice.subscribe("alice.x")
        await alice.publish("alice.x", b"mine")
        assert (await sub.next_msg(timeout=TIMEOUT)).data == b"mine"
        await alice.publish("bob.x", b"not mine")  # alice's permissions apply
        await alice.flush()
        for _ in range(100):
            if errors:
                break
            await asyncio.sleep(0.05)
        assert any("permissions violation for publish" in str(e).lower() for e in errors), errors
    finally:
        await alice.close()
    bob = await _connect(target, _client_ctx(certs, certs.bob))  # mapped by its subject DN
    await _round_trip(bob)
    await bob.close()
    # carol's certificate is valid but maps to no user
    assert "Authorization Violation" in await _refused(target, _client_ctx(certs, certs.carol))


async def test_verify_and_map_into_accounts(start_server: StartServer, certs: Certs) -> None:
    accounts = {
        "A": {"users": [{"user": "alice@example.com"}]},
        "B": {"users": [{"user": "CN=bob,O=Acme"}]},
    }
    target = start_server(jetstream=False, tls=_tls_block(certs, verify_and_map=True), accounts=accounts)
    alice = await _connect(target, _client_ctx(certs, certs.alice))
    bob = await _connect(target, _client_ctx(certs, certs.bob))
    try:
        sub = await bob.subscribe(">")
        await subscriptions_live(bob)
        await alice.publish("hello", b"from A")
        await alice.flush()
        with pytest.raises(nats.errors.TimeoutError):
            await sub.next_msg(timeout=0.5)
    finally:
        await alice.close()
        await bob.close()


# --------------------------------------------------------------------------- pinned certs


async def test_pinned_certs(start_server: StartServer, certs: Certs) -> None:
    target = start_server(
        jetstream=False, tls=_tls_block(certs, verify=True, pinned_certs=[certs.alice.spki_sha256()])
    )
    nc = await _connect(target, _client_ctx(certs, certs.alice))
    await _round_trip(nc)
    await nc.close()
    assert await _refused(target, _client_ctx(certs, certs.bob))


# -------------------------------------------------------------- handshake_first, allow_non_tls


async def test_handshake_first(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs, handshake_first=True))
    nc = await _connect(target, _client_ctx(certs, None), tls_handshake_first=True)
    await _round_trip(nc)
    await nc.close()
    # A client waiting for INFO in the clear gets nothing before the handshake timeout.
    with socket.create_connection(("127.0.0.1", target.port), timeout=TIMEOUT) as sock:
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            sock.recv(100)


async def test_handshake_first_timeout(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs, handshake_first=True, timeout=0.5))
    with socket.create_connection(("127.0.0.1", target.port), timeout=TIMEOUT) as sock:
        sock.settimeout(TIMEOUT)
        assert sock.recv(100) == b""  # closed, without an INFO or -ERR


async def test_allow_non_tls(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs), allow_non_tls=True)
    with socket.create_connection(("127.0.0.1", target.port), timeout=TIMEOUT) as sock:
        info = json.loads(sock.recv(4096).split(b" ", 1)[1])
        assert info.get("tls_available") is True and not info.get("tls_required")
    plain = await nats.connect(target.url, allow_reconnect=False)
    await _round_trip(plain)
    secure = await _connect(target, _client_ctx(certs, None))
    await _round_trip(secure)
    await plain.close()
    await secure.close()


# ------------------------------------------------------------------------------- many at once


async def test_a_hundred_concurrent_tls_connects(start_server: StartServer, certs: Certs) -> None:
    target = start_server(jetstream=False, tls=_tls_block(certs, verify=True, timeout=30))
    ctx = _client_ctx(certs, certs.alice)
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(f"{type(exc).__name__}: {exc}")

    async def one() -> nats.NATS:
        return await nats.connect(
            f"tls://127.0.0.1:{target.port}",
            tls=ctx,
            tls_hostname="127.0.0.1",
            allow_reconnect=False,
            connect_timeout=60,
            error_cb=on_error,
        )

    clients = await asyncio.gather(*(one() for _ in range(100)))
    try:
        bad = [(nc._status, repr(nc.last_error)) for nc in clients if not nc.is_connected]
        assert not bad, (bad[:3], len(bad), errors)
        await asyncio.gather(*(nc.flush(timeout=30) for nc in clients))
    finally:
        await asyncio.gather(*(nc.close() for nc in clients))
