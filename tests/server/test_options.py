"""ServerOptions: nats-server's defaults, derived values, validation and password checks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from tests.support.targets import nats_server_binary

from pyjetstream.server.options import (
    DEFAULT_HTTP_PORT,
    RANDOM_PORT,
    NkeyUser,
    OptionsError,
    ServerOptions,
    TLSOptions,
    User,
    is_bcrypt_hash,
    password_matches,
)

NATS_SERVER = nats_server_binary()


def test_defaults_are_nats_servers() -> None:
    o = ServerOptions()
    assert (o.host, o.port, o.server_name) == ("0.0.0.0", 4222, "")
    assert (o.http_host, o.http_port, o.https_port) == ("", 0, 0)
    assert (o.max_payload, o.max_control_line, o.max_pending) == (1024 * 1024, 4096, 64 * 1024 * 1024)
    assert (o.max_connections, o.max_subscriptions) == (64 * 1024, 0)
    assert (o.ping_interval, o.ping_max, o.write_deadline, o.auth_timeout) == (120.0, 2, 10.0, 2.0)
    assert (o.lame_duck_duration, o.lame_duck_grace_period) == (120.0, 10.0)
    assert (o.jetstream, o.store_dir, o.max_memory_store, o.max_file_store) == (False, "", -1, -1)
    assert (o.sync_interval, o.sync_always) == (120.0, False)
    assert (o.logtime, o.debug, o.trace) == (True, False, False)
    assert o.tls is None and o.users == [] and o.warnings == [] and o.unsupported == {}
    assert o.problems() == []


def test_default_instances_do_not_share_lists() -> None:
    a, b = ServerOptions(), ServerOptions()
    a.users.append(User(username="x"))
    a.jetstream_limits.max_ha_assets = 3
    assert b.users == [] and b.jetstream_limits.max_ha_assets == 0


@pytest.mark.parametrize(("port", "bind"), [(4222, 4222), (RANDOM_PORT, 0), (0, 0), (5000, 5000)])
def test_bind_port(port: int, bind: int) -> None:
    assert ServerOptions(port=port).bind_port == bind


@pytest.mark.parametrize(
    ("http_port", "bind"), [(0, None), (RANDOM_PORT, 0), (DEFAULT_HTTP_PORT, DEFAULT_HTTP_PORT)]
)
def test_monitor_bind_port(http_port: int, bind: int | None) -> None:
    assert ServerOptions(http_port=http_port).monitor_bind_port == bind


def test_monitor_host_defaults_to_host() -> None:
    assert ServerOptions(host="127.0.0.1").monitor_host == "127.0.0.1"
    assert ServerOptions(host="127.0.0.1", http_host="0.0.0.0").monitor_host == "0.0.0.0"


def test_jetstream_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert ServerOptions(store_dir="/data").jetstream_dir == "/data/jetstream"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert ServerOptions().jetstream_dir == str(tmp_path / "nats" / "jetstream")


def test_auth_required() -> None:
    assert not ServerOptions().auth_required
    assert ServerOptions(username="a", password="b").auth_required
    assert ServerOptions(token="t").auth_required
    assert ServerOptions(users=[User(username="a")]).auth_required
    assert ServerOptions(nkeys=[NkeyUser(nkey="U" * 56)]).auth_required


def test_copy_is_deep() -> None:
    o = ServerOptions(users=[User(username="a")], tls=TLSOptions(cert_file="c"))
    c = o.copy()
    c.users[0].username = "b"
    assert c.tls is not None
    c.tls.cert_file = "d"
    assert (o.users[0].username, o.tls is not None and o.tls.cert_file) == ("a", "c")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"port": 70000}, "port 70000 is out of range"),
        ({"port": -2}, "port -2 is out of range"),
        ({"http_port": 65536}, "http_port 65536 is out of range"),
        ({"max_payload": 0}, "max_payload (0) must be positive"),
        ({"max_payload": 100, "max_pending": 99}, "max_payload (100) cannot be higher than max_pending (99)"),
        ({"max_control_line": 0}, "max_control_line (0) must be positive"),
        ({"ping_interval": 0.0}, "ping_interval must be positive"),
        ({"ping_max": 0}, "ping_max must be positive"),
        ({"write_deadline": -1.0}, "write_deadline must be positive"),
        ({"sync_interval": 0.0}, "sync_interval must be positive"),
        ({"token": "t", "username": "u"}, "Cannot have a user/pass and token"),
        ({"jetstream_domain": "a.b"}, "invalid domain name: 'a.b' may not contain ., *, > or whitespace"),
        ({"no_auth_user": "x"}, 'no_auth_user: "x" present, but users/nkeys are not defined'),
        ({"tls": TLSOptions(cert_file="c")}, "TLS requires both a certificate (cert_file) and a private key"),
    ],
)
def test_problems(changes: dict[str, Any], problem: str) -> None:
    o = ServerOptions(**changes)
    assert any(p.startswith(problem) for p in o.problems()), o.problems()
    with pytest.raises(OptionsError) as info:
        o.validate()
    assert problem in str(info.value)


def test_no_auth_user_must_name_a_user_or_nkey() -> None:
    assert ServerOptions(no_auth_user="a", users=[User(username="a")]).problems() == []
    assert ServerOptions(no_auth_user="UK", nkeys=[NkeyUser(nkey="UK")]).problems() == []
    assert ServerOptions(no_auth_user="b", users=[User(username="a")]).problems() == [
        'no_auth_user: "b" not present as user or nkey in authorization block or account configuration'
    ]


def test_max_payload_unbounded_pending() -> None:
    assert ServerOptions(max_payload=10 * 1024 * 1024, max_pending=0).problems() == []


# ----------------------------------------------------------------- passwords


@pytest.mark.parametrize("prefix", [b"2a", b"2b"])
def test_bcrypt_passwords(prefix: bytes) -> None:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4, prefix=prefix)).decode()
    assert is_bcrypt_hash(hashed)
    assert password_matches(hashed, "s3cret")
    assert not password_matches(hashed, "s3cret!")
    assert User(username="u", password=hashed).password_matches("s3cret")


def test_plain_passwords() -> None:
    assert not is_bcrypt_hash("plain") and not is_bcrypt_hash("$2a$")
    assert password_matches("plain", "plain")
    assert not password_matches("plain", "Plain")
    assert not password_matches("plain", "")
    assert password_matches("", "")


def test_malformed_bcrypt_hash_never_matches() -> None:
    assert is_bcrypt_hash("$2a$11$short")
    assert not password_matches("$2a$11$short", "anything")


# ---------------------------------------------------------------------- TLS


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls_server_context(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost".split()
    subprocess.run([*openssl, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    plain = TLSOptions(cert_file=str(cert), key_file=str(key)).server_context()
    assert plain.verify_mode == ssl.CERT_NONE
    assert plain.minimum_version == ssl.TLSVersion.TLSv1_2
    verifying = TLSOptions(cert_file=str(cert), key_file=str(key), ca_file=str(cert), verify=True)
    assert verifying.server_context().verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(OSError):
        TLSOptions(cert_file=str(tmp_path / "missing.pem"), key_file=str(key)).server_context()


# ------------------------------------------------------ against nats-server


def varz_of_nats_server(args: list[str], workdir: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    assert NATS_SERVER is not None
    ports_dir = workdir / "ports"
    ports_dir.mkdir()
    cmd = [NATS_SERVER, "-a", "127.0.0.1", "-p", "-1", "-m", "-1", "--ports_file_dir", str(ports_dir), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            files = list(ports_dir.glob("*.ports"))
            if files:
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    url = json.loads(files[0].read_text())["monitoring"][0]
                    with urllib.request.urlopen(f"{url}/varz", timeout=10) as response:
                        return json.load(response)
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        raise AssertionError("nats-server did not start")
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.skipif(NATS_SERVER is None, reason="nats-server is not installed")
def test_defaults_match_a_default_nats_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = dict(os.environ, TMPDIR=str(tmp_path))  # where a default store_dir goes
    varz = varz_of_nats_server(["-js"], tmp_path, env)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    o = ServerOptions()
    assert varz["max_payload"] == o.max_payload
    assert varz["max_pending"] == o.max_pending
    assert varz["max_control_line"] == o.max_control_line
    assert varz["max_connections"] == o.max_connections
    assert varz["ping_interval"] == int(o.ping_interval * 1e9)
    assert varz["ping_max"] == o.ping_max
    assert varz["write_deadline"] == int(o.write_deadline * 1e9)
    assert varz["auth_timeout"] == o.auth_timeout
    assert varz["tls_timeout"] == TLSOptions().timeout
    assert varz["jetstream"]["config"]["store_dir"] == o.jetstream_dir
