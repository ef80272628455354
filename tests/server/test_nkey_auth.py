"""NKey authentication at the wire level: the INFO nonce, a valid signature, a forged one (both targets)."""

from __future__ import annotations

import base64
import json
import socket

import nkeys


def _user() -> tuple[nkeys.KeyPair, str]:
    import os

    kp = nkeys.from_seed(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))
    return kp, kp.public_key.decode()


def _handshake(port: int, connect: dict) -> tuple[dict, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        buf = b""
        while b"\r\n" not in buf:
            buf += sock.recv(4096)
        info = json.loads(buf.split(b"\r\n", 1)[0][5:])
        sig = connect.pop("_sign", None)
        if sig is not None:
            connect["sig"] = base64.urlsafe_b64encode(sig.sign(info["nonce"].encode())).rstrip(b"=").decode()
        sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        return info, reply


def test_nonce_and_signatures(start_server) -> None:
    kp, public = _user()
    other, _ = _user()
    target = start_server(jetstream=False, authorization={"users": [{"nkey": public}]})

    info, reply = _handshake(target.port, {"verbose": False, "nkey": public, "_sign": kp})
    assert isinstance(info["nonce"], str) and len(info["nonce"]) >= 11
    assert reply.startswith(b"PONG"), reply

    _, reply = _handshake(target.port, {"verbose": False, "nkey": public, "_sign": other})
    assert reply.startswith(b"-ERR 'Authorization Violation'"), reply

    _, reply = _handshake(target.port, {"verbose": False, "nkey": public})
    assert reply.startswith(b"-ERR 'Authorization Violation'"), reply

    first, _ = _handshake(target.port, {"verbose": False, "nkey": public, "_sign": kp})
    second, _ = _handshake(target.port, {"verbose": False, "nkey": public, "_sign": kp})
    assert first["nonce"] != second["nonce"]
