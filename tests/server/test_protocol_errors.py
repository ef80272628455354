"""Raw-socket protocol behaviour, byte for byte, against both targets.

Each case sends bytes after INFO and compares what comes back and whether the server closed the
connection: an open connection must answer a trailing PING, a closed one must reach end of stream.
"""

from __future__ import annotations

import pytest
from tests.server.rawclient import QUIET_CONNECT, RawClient
from tests.support.targets import Target

VERBOSE = b'CONNECT {"verbose":true,"pedantic":false}\r\n'
PEDANTIC = b'CONNECT {"verbose":false,"pedantic":true}\r\n'
NO_HEADERS = b'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\n'
# nats-server 2.11+ names the subject nobody answered (Nats-Subject).
HMSG_503 = b"NATS/1.0 503\r\nNats-Subject: foo\r\n\r\n"

# (id, CONNECT line or None for none at all, bytes sent, expected reply, closed)
CASES = [
    ("unknown-op", QUIET_CONNECT, b"FOO\r\n", b"-ERR 'Unknown Protocol Operation'\r\n", True),
    ("empty-line", QUIET_CONNECT, b"\r\n", b"-ERR 'Unknown Protocol Operation'\r\n", True),
    ("indented-op", QUIET_CONNECT, b" PING\r\n", b"-ERR 'Unknown Protocol Operation'\r\n", True),
    ("bare-pub", QUIET_CONNECT, b"PUB\r\n", b"-ERR 'Unknown Protocol Operation'\r\n", True),
    ("bare-unsub", QUIET_CONNECT, b"UNSUB\r\n", b"-ERR 'Unknown Protocol Operation'\r\n", True),
    (
        "payload-no-crlf",
        QUIET_CONNECT,
        b"PUB foo 2\r\nhiX\r\n",
        b"-ERR 'Unknown Protocol Operation'\r\n",
        True,
    ),
    ("max-payload", QUIET_CONNECT, b"PUB foo 2000000\r\n", b"-ERR 'Maximum Payload Violation'\r\n", True),
    (
        "max-control-line",
        QUIET_CONNECT,
        b"SUB " + b"a" * 5000 + b" 1\r\n",
        b"-ERR 'maximum control line exceeded'\r\n",
        True,
    ),
    ("pub-missing-size", QUIET_CONNECT, b"PUB foo\r\n", b"", True),
    ("pub-bad-size", QUIET_CONNECT, b"PUB foo x\r\n", b"", True),
    ("pub-too-many-args", QUIET_CONNECT, b"PUB a b c 1\r\n", b"", True),
    ("sub-missing-sid", QUIET_CONNECT, b"SUB foo\r\n", b"", True),
    ("sub-too-many-args", QUIET_CONNECT, b"SUB foo bar baz 1\r\n", b"", True),
    ("hpub-hdr-gt-total", QUIET_CONNECT, b"HPUB foo 20 14\r\n", b"", True),
    ("connect-bad-json", None, b"CONNECT {bad json\r\n", b"", True),
    ("connect-not-object", None, b'CONNECT ["a"]\r\n', b"", True),
    ("connect-bad-type", None, b'CONNECT {"verbose":"yes"}\r\n', b"", True),
    ("invalid-subject", QUIET_CONNECT, b"SUB foo..bar 1\r\n", b"-ERR 'Invalid Subject'\r\nPONG\r\n", False),
    ("fwc-not-last", QUIET_CONNECT, b"SUB foo.>.bar 1\r\n", b"-ERR 'Invalid Subject'\r\nPONG\r\n", False),
    ("leading-dot", QUIET_CONNECT, b"SUB .foo 1\r\n", b"-ERR 'Invalid Subject'\r\nPONG\r\n", False),
    (
        "pedantic-wildcard-pub",
        PEDANTIC,
        b"PUB foo.* 2\r\nhi\r\n",
        b"-ERR 'Invalid Publish Subject'\r\nPONG\r\n",
        False,
    ),
    (
        "pedantic-empty-token",
        PEDANTIC,
        b"PUB foo.. 2\r\nhi\r\n",
        b"-ERR 'Invalid Publish Subject'\r\nPONG\r\n",
        False,
    ),
    # Without pedantic a wildcard publish is routed literally: to foo.* but not to foo.bar.
    (
        "wildcard-pub-literal",
        QUIET_CONNECT,
        b"SUB foo.bar 1\r\nSUB foo.* 2\r\nPUB foo.* 2\r\nhi\r\n",
        b"MSG foo.* 2 2\r\nhi\r\nPONG\r\n",
        False,
    ),
    ("bad-protocol", None, b'CONNECT {"protocol":2}\r\n', b"-ERR 'invalid client protocol'\r\n", True),
    ("negative-protocol", None, b'CONNECT {"protocol":-1}\r\n', b"-ERR 'invalid client protocol'\r\n", True),
    (
        "no-responders-needs-headers",
        None,
        b'CONNECT {"no_responders":true}\r\n',
        b"-ERR 'no responders requires headers support'\r\n",
        True,
    ),
    ("hpub-without-headers", NO_HEADERS, b"HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", b"", True),
    ("account-in-connect", None, b'CONNECT {"account":"x"}\r\n', b"-ERR 'Authorization Violation'\r\n", True),
    # Verbose: +OK for CONNECT, SUB, PUB (before the delivery) and UNSUB; none for a failed SUB.
    (
        "verbose",
        None,
        VERBOSE + b"SUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\nSUB a..b 2\r\n",
        b"+OK\r\n+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\n+OK\r\n-ERR 'Invalid Subject'\r\nPONG\r\n",
        False,
    ),
    # CONNECT defaults are verbose and pedantic until a CONNECT says otherwise.
    (
        "defaults-before-connect",
        None,
        b"PUB foo.* 2\r\nhi\r\n",
        b"-ERR 'Invalid Publish Subject'\r\n+OK\r\nPONG\r\n",
        False,
    ),
    ("connect-defaults", None, b"CONNECT {}\r\n", b"+OK\r\nPONG\r\n", False),
    (
        "ops-case-insensitive",
        QUIET_CONNECT,
        b"sub foo 1\r\npub foo 2\r\nhi\r\n",
        b"MSG foo 1 2\r\nhi\r\nPONG\r\n",
        False,
    ),
    (
        "runs-of-spaces",
        QUIET_CONNECT,
        b"SUB  foo  1\r\nPUB\tfoo  2 \r\nhi\r\n",
        b"MSG foo 1 2\r\nhi\r\nPONG\r\n",
        False,
    ),
    ("lf-only-line", QUIET_CONNECT, b"SUB foo 1\nPUB foo 2\nhi\r\n", b"MSG foo 1 2\r\nhi\r\nPONG\r\n", False),
    (
        "empty-payload",
        QUIET_CONNECT,
        b"SUB foo 1\r\nPUB foo 0\r\n\r\n",
        b"MSG foo 1 0\r\n\r\nPONG\r\n",
        False,
    ),
    ("unsub-unknown-sid", QUIET_CONNECT, b"UNSUB 99\r\n", b"PONG\r\n", False),
    (
        "unsub-bad-max-is-now",
        QUIET_CONNECT,
        b"SUB foo 1\r\nUNSUB 1 x\r\nPUB foo 1\r\na\r\n",
        b"PONG\r\n",
        False,
    ),
    ("pong-ignored", QUIET_CONNECT, b"PONG\r\n", b"PONG\r\n", False),
    (
        "sid-reuse-is-noop",
        QUIET_CONNECT,
        b"SUB foo 1\r\nSUB foo 1\r\nPUB foo 1\r\na\r\n",
        b"MSG foo 1 1\r\na\r\nPONG\r\n",
        False,
    ),
    (
        "unsub-max",
        QUIET_CONNECT,
        b"SUB foo 1\r\nUNSUB 1 2\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nPUB foo 1\r\nc\r\n",
        b"MSG foo 1 1\r\na\r\nMSG foo 1 1\r\nb\r\nPONG\r\n",
        False,
    ),
    (
        "unsub-max-already-reached",
        QUIET_CONNECT,
        b"SUB foo 1\r\nPUB foo 1\r\na\r\nUNSUB 1 1\r\nPUB foo 1\r\nb\r\n",
        b"MSG foo 1 1\r\na\r\nPONG\r\n",
        False,
    ),
    (
        "overlapping-subs-two-copies",
        QUIET_CONNECT,
        b"SUB foo 1\r\nSUB > 2\r\nPUB foo 1\r\na\r\n",
        None,  # order between the two copies is not defined; checked below
        False,
    ),
    (
        "headers-delivered",
        QUIET_CONNECT,
        b"SUB foo 1\r\nHPUB foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
        b"HMSG foo 1 r 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPONG\r\n",
        False,
    ),
    (
        "no-responders",
        QUIET_CONNECT,
        b"SUB rep.* 1\r\nPUB foo rep.x 2\r\nhi\r\n",
        b"HMSG rep.x 1 35 35\r\n" + HMSG_503 + b"\r\nPONG\r\n",
        False,
    ),
    (
        "no-responders-echo-off-self-only",
        b'CONNECT {"verbose":false,"pedantic":false,"echo":false,"headers":true,"no_responders":true}\r\n',
        b"SUB foo 1\r\nSUB rep 2\r\nPUB foo rep 2\r\nhi\r\n",
        b"HMSG rep 2 35 35\r\n" + HMSG_503 + b"\r\nPONG\r\n",
        False,
    ),
    (
        "no-responders-not-requested",
        b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n',
        b"SUB rep 1\r\nPUB foo rep 2\r\nhi\r\n",
        b"PONG\r\n",
        False,
    ),
    (
        "no-responders-without-reply-sub",
        QUIET_CONNECT,
        b"PUB foo rep 2\r\nhi\r\n",
        b"PONG\r\n",
        False,
    ),
    (
        "echo-off",
        b'CONNECT {"verbose":false,"pedantic":false,"echo":false}\r\n',
        b"SUB foo 1\r\nPUB foo 2\r\nhi\r\n",
        b"PONG\r\n",
        False,
    ),
]


@pytest.mark.parametrize(
    ("connect", "data", "expected", "closed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_protocol_bytes(
    core_server: Target, connect: bytes | None, data: bytes, expected: bytes | None, closed: bool
) -> None:
    with RawClient(core_server.port) as client:
        out, was_closed = client.exchange((connect or b"") + data)
    assert was_closed is closed, out
    if expected is None:
        assert sorted(out.split(b"MSG ")) == sorted(
            [b"", b"foo 1 1\r\na\r\n", b"foo 2 1\r\na\r\nPONG\r\n"]
        ) or sorted(out.split(b"MSG ")) == sorted([b"", b"foo 2 1\r\na\r\n", b"foo 1 1\r\na\r\nPONG\r\n"])
    else:
        assert out == expected


def test_info_fields(core_server: Target) -> None:
    with RawClient(core_server.port) as client:
        info = client.info
    for key in (
        "server_id",
        "server_name",
        "version",
        "proto",
        "go",
        "host",
        "port",
        "headers",
        "max_payload",
        "client_id",
        "client_ip",
    ):
        assert key in info, key
    assert info["proto"] == 1
    assert info["headers"] is True
    assert info["max_payload"] == 1024 * 1024
    assert info["port"] == core_server.port
    assert info["client_ip"] == "127.0.0.1"
    assert len(info["server_id"]) == 56 and info["server_id"].startswith("N")
    assert "auth_required" not in info
    assert "connect_urls" not in info
    assert "jetstream" not in info


def test_info_line_format(core_server: Target) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", core_server.port), timeout=5) as sock:
        data = b""
        while not data.endswith(b"\r\n"):
            data += sock.recv(4096)
    assert data.startswith(b"INFO {") and data.endswith(b"} \r\n")


def test_client_ids_increase(core_server: Target) -> None:
    with RawClient(core_server.port) as a, RawClient(core_server.port) as b:
        assert b.info["client_id"] > a.info["client_id"]
