"""The websocket listener, against both targets: a real JS client (nats.js over WebSocket, from npm) and
the HTTP upgrade's origin checks, compared with nats-server 2.15.1's websocket."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.targets import Target

WS_DIR = Path(__file__).parents[1] / "ws"

# What tests/ws/client.mjs sees: the same on both servers.
EXPECTED = {
    "connected": True,
    "core": {"subject": "greet.js", "data": "hello", "header": "yes"},
    "bigEcho": True,
    "stream": {"name": "WS", "subjects": ["ws.>"]},
    "acks": [
        {"stream": "WS", "seq": 1, "duplicate": False},
        {"stream": "WS", "seq": 2, "duplicate": False},
        {"stream": "WS", "seq": 2, "duplicate": True},
    ],
    "fetched": [{"subject": "ws.a", "data": "msg-1", "seq": 1}, {"subject": "ws.b", "data": "msg-2", "seq": 2}],
    "consumer": {"delivered": 2, "pending": 0},
}


def _ws(**extra: object) -> dict[str, object]:
    return {"websocket": {"host": "127.0.0.1", "port": -1, "no_tls": True, **extra}}


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JS WebSocket client tests need Node.js 20+")
    if not (WS_DIR / "node_modules" / "@nats-io" / "nats-core").exists():
        pytest.skip("tests/ws/node_modules is missing: scripts/setup.sh installs it with npm ci")
    return node


@pytest.mark.parametrize("compression", [False, True], ids=["plain", "deflate"])
def test_nats_js_client_over_websocket(start_server: Callable[..., Target], compression: bool) -> None:
    node = _node()
    target = start_server(**_ws(compression=compression))
    assert target.ws_url.startswith("ws://127.0.0.1:")
    proc = subprocess.run(
        [node, str(WS_DIR / "client.mjs"), target.ws_url], capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == EXPECTED


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


def test_nats_js_client_over_wss(start_server: Callable[..., Target], cert: tuple[str, str]) -> None:
    """``websocket { tls {} }``: the listener speaks TLS (wss://), and the client trusts its certificate."""
    node = _node()
    crt, key = cert
    target = start_server(websocket={"host": "127.0.0.1", "port": -1, "tls": {"cert_file": crt, "key_file": key}})
    assert target.ws_url.startswith("wss://127.0.0.1:")
    proc = subprocess.run(
        [node, str(WS_DIR / "client.mjs"), target.ws_url],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "NODE_EXTRA_CA_CERTS": crt},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == EXPECTED


def test_connz_type_websocket(start_server: Callable[..., Target]) -> None:
    """A websocket client shows in /connz with ``"type": "websocket"``, as in nats-server."""
    import time
    import urllib.request

    target = start_server(jetstream=False, http_port=-1, **_ws())
    hostport = target.ws_url.split("://", 1)[1]
    h, p = hostport.rsplit(":", 1)
    with socket.create_connection((h, int(p)), timeout=10) as sock:
        sock.sendall(
            (
                f"GET / HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 101 ")
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{target.http_port}/connz", timeout=5) as resp:
                conns = json.loads(resp.read())["connections"]
            if conns or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert [(c["kind"], c["type"]) for c in conns] == [("Client", "websocket")]


def _upgrade(url: str, origin: str | None, host: str | None = None) -> str:
    """Send a WebSocket upgrade by hand; the HTTP status line of the answer."""
    hostport = url.split("://", 1)[1]
    h, p = hostport.rsplit(":", 1)
    lines = [
        "GET / HTTP/1.1",
        f"Host: {host or hostport}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection((h, int(p)), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0].decode()


def test_allowed_origins(start_server: Callable[..., Target]) -> None:
    target = start_server(**_ws(allowed_origins=["http://good.example", "https://other.example:8443"]))
    url = target.ws_url
    assert _upgrade(url, None) == "HTTP/1.1 101 Switching Protocols"  # no Origin: accepted
    assert _upgrade(url, "http://good.example") == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade(url, "http://GOOD.example:80") == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade(url, "https://other.example:8443") == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade(url, "https://good.example") == "HTTP/1.1 403 Forbidden"  # scheme differs
    assert _upgrade(url, "http://evil.example") == "HTTP/1.1 403 Forbidden"
    assert _upgrade(url, "http://good.example:8080") == "HTTP/1.1 403 Forbidden"


def test_same_origin(start_server: Callable[..., Target]) -> None:
    target = start_server(**_ws(same_origin=True))
    url = target.ws_url
    hostport = url.split("://", 1)[1]
    assert _upgrade(url, f"http://{hostport}") == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade(url, None) == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade(url, "http://elsewhere.example") == "HTTP/1.1 403 Forbidden"
    assert _upgrade(url, f"http://{hostport}", host="other:1234") == "HTTP/1.1 403 Forbidden"


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("post", "HTTP/1.1 405 Method Not Allowed"),
        ("no-upgrade", "HTTP/1.1 400 Bad Request"),
        ("no-connection", "HTTP/1.1 400 Bad Request"),
        ("no-key", "HTTP/1.1 400 Bad Request"),
        ("version-12", "HTTP/1.1 400 Bad Request"),
        ("any-path", "HTTP/1.1 101 Switching Protocols"),
    ],
)
def test_bad_upgrades(start_server: Callable[..., Target], case: str, status: str) -> None:
    """nats-server ``wsUpgrade``'s answers to a request that is not a proper WebSocket upgrade."""
    target = start_server(jetstream=False, **_ws())
    hostport = target.ws_url.split("://", 1)[1]
    lines = [
        "GET / HTTP/1.1",
        f"Host: {hostport}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    if case == "post":
        lines[0] = "POST / HTTP/1.1"
    elif case == "any-path":
        lines[0] = "GET /some/path?x=1 HTTP/1.1"
    elif case == "version-12":
        lines[5] = "Sec-WebSocket-Version: 12"
    else:
        drop = {"no-upgrade": "Upgrade:", "no-connection": "Connection:", "no-key": "Sec-WebSocket-Key:"}[case]
        lines = [line for line in lines if not line.startswith(drop)]
    h, p = hostport.rsplit(":", 1)
    with socket.create_connection((h, int(p)), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    assert head[0] == status
    if status != "HTTP/1.1 101 Switching Protocols":
        headers = {line.split(":", 1)[0].lower() for line in head[1:]}
        assert {"content-type", "sec-websocket-version", "x-content-type-options", "date"} <= headers


def test_websocket_requires_tls_or_no_tls(start_server: Callable[..., Target]) -> None:
    with pytest.raises(RuntimeError, match="websocket requires TLS configuration"):
        start_server(websocket={"host": "127.0.0.1", "port": -1})


def test_websocket_config_block() -> None:
    from pyjetstream.server.conf import ConfigError, config_to_options, parse

    opts = config_to_options(
        parse(
            'ws { listen: "127.0.0.1:-1", no_tls: true, same_origin: true,'
            ' allowed_origins: ["http://a.example"], compression: true, handshake_timeout: "5s" }'
        )
    )
    ws = opts.websocket
    assert ws is not None and not opts.warnings
    assert (ws.host, ws.port, ws.no_tls, ws.same_origin, ws.compression) == ("127.0.0.1", -1, True, True, True)
    assert ws.allowed_origins == ["http://a.example"] and ws.handshake_timeout == 5.0
    # a per-listener credential cannot be silently ignored
    with pytest.raises(ConfigError, match="per-listener authentication"):
        config_to_options(parse("websocket { port: -1, no_tls: true, token: s3cret }"))
