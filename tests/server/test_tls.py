"""TLS on the client port, nats-style (INFO in the clear, then the handshake), on both targets."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import nats
import pytest
from tests.server.rawclient import RawClient
from tests.support.targets import Target

StartServer = Callable[..., Target]

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (and its key)."""
    folder = tmp_path_factory.mktemp("tls")
    key, crt = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(crt),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return str(crt), str(key)


@pytest.fixture
def tls_server(start_server: StartServer, cert: tuple[str, str]) -> Target:
    # A generous handshake timeout: on a loaded 2-core machine a short one can expire mid-handshake.
    crt, key = cert
    return start_server(jetstream=False, tls={"cert_file": crt, "key_file": key, "timeout": 10})


@pytest.fixture
def short_timeout_tls_server(start_server: StartServer, cert: tuple[str, str]) -> Target:
    crt, key = cert
    return start_server(jetstream=False, tls={"cert_file": crt, "key_file": key, "timeout": 0.5})


async def test_tls_client(tls_server: Target, cert: tuple[str, str]) -> None:
    ctx = ssl.create_default_context(cafile=cert[0])
    nc = await nats.connect(f"tls://127.0.0.1:{tls_server.port}", tls=ctx, allow_reconnect=False)
    try:
        sub = await nc.subscribe("secure")
        await nc.flush()
        await nc.flush()
        await nc.publish("secure", b"payload" * 1000, headers={"A": "b"})
        msg = await sub.next_msg(timeout=10)
        assert msg.data == b"payload" * 1000 and msg.headers == {"A": "b"}
        sizes = [16, 65536, 16384, 100, 200_000]  # large frames are written as parts: TLS takes them too
        for size in sizes:
            await nc.publish("secure", b"%d" % (size % 10) * size)
        for size in sizes:
            assert (await sub.next_msg(timeout=10)).data == b"%d" % (size % 10) * size
    finally:
        await nc.close()


def test_info_says_tls_required(tls_server: Target) -> None:
    with RawClient(tls_server.port) as client:
        assert client.info["tls_required"] is True
        assert "tls_verify" not in client.info


def test_plaintext_client_is_closed_without_error(short_timeout_tls_server: Target) -> None:
    # The embedded server's TLS layer may wait for the handshake timeout before it gives up on
    # plaintext bytes (nats-server rejects the first record at once): keep that timeout short here.
    with RawClient(short_timeout_tls_server.port) as client:
        out, closed = client.exchange(b'CONNECT {"verbose":false}\r\n')
    assert (out, closed) == (b"", True)


def test_handshake_timeout(short_timeout_tls_server: Target) -> None:
    with RawClient(short_timeout_tls_server.port) as client:
        assert client.read_until_closed(timeout=10) == b""


def test_bad_certificate_fails_start(tmp_path: Path, server_kind: str) -> None:
    from tests.support.targets import make_target

    missing = str(tmp_path / "missing.pem")
    with pytest.raises(RuntimeError, match="did not start"):
        make_target(
            server_kind, tmp_path / "srv", jetstream=False, tls={"cert_file": missing, "key_file": missing}
        )
