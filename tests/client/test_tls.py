"""TLS: the server requires TLS, the client upgrades after INFO and verifies a self-signed cert."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.client.conftest import read_info, require_embedded_support, wait_until
from tests.support.targets import Target

from pyjetstream.client import NoRespondersError, NoServersError, connect

StartServer = Callable[..., Target]

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate valid for 127.0.0.1 and localhost."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(start_server: StartServer, certs: tuple[Path, Path]) -> Target:
    cert, key = certs
    # A generous handshake timeout: on a loaded 2-core machine a 2 s TLS handshake can time out,
    # which is not what these tests are about.
    target = start_server(tls={"cert_file": str(cert), "key_file": str(key), "timeout": 10})
    require_embedded_support(target, "TLS", bool(read_info(target).get("tls_required")))
    return target


def client_context(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


async def test_tls_with_context(tls_server: Target, certs: tuple[Path, Path]) -> None:
    nc = await connect(tls_server.url, tls=client_context(certs[0]), connect_timeout=10)
    try:
        assert nc.server_info.get("tls_required") is True
        sub = await nc.subscribe("secure")
        await nc.flush()
        payload = b"s" * 200_000
        await nc.publish("secure", payload, headers={"K": "v"})
        msg = await sub.next_msg(timeout=5)
        assert msg.data == payload and msg.headers == {"K": "v"}
        with pytest.raises(NoRespondersError):
            await nc.request("secure.none", b"", timeout=2)
    finally:
        await nc.close()


async def test_tls_url_scheme_and_hostname(tls_server: Target, certs: tuple[Path, Path]) -> None:
    url = f"tls://localhost:{tls_server.port}"
    nc = await connect(url, tls=client_context(certs[0]), connect_timeout=10)
    try:
        await nc.flush()
        assert nc.connected_url == url
    finally:
        await nc.close()
    # The certificate names 127.0.0.1 and localhost only.
    with pytest.raises(NoServersError):
        await connect(
            tls_server.url, tls=client_context(certs[0]), connect_timeout=10, tls_hostname="example.com"
        )


async def test_untrusted_certificate_is_refused(tls_server: Target) -> None:
    with pytest.raises(NoServersError, match=r"TLS: the server.s certificate was not accepted"):
        await connect(tls_server.url)  # default context: the self-signed cert is not trusted


async def test_tls_reconnect(tls_server: Target, certs: tuple[Path, Path]) -> None:
    nc = await connect(
        tls_server.url,
        tls=client_context(certs[0]),
        connect_timeout=10,
        reconnect_time_wait=0.05,
        max_reconnect_attempts=-1,  # a loaded machine can take longer than 60 x 0.05 s to restart
    )
    try:
        sub = await nc.subscribe("tls.re")
        await nc.flush()
        await asyncio.to_thread(tls_server.restart)
        await wait_until(lambda: nc.is_connected and nc.stats["reconnects"] == 1, timeout=15)
        await nc.publish("tls.re", b"back")
        assert (await sub.next_msg(timeout=5)).data == b"back"
    finally:
        await nc.close()


def test_tls_on_uvloop(tls_server: Target, certs: tuple[Path, Path]) -> None:
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> None:
        nc = await connect(tls_server.url, tls=client_context(certs[0]), connect_timeout=10)
        try:
            sub = await nc.subscribe("uv.tls")
            await nc.flush()
            await nc.publish("uv.tls", b"over tls")
            assert (await sub.next_msg(timeout=5)).data == b"over tls"
        finally:
            await nc.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
