"""``-s ws://…`` and ``wss://…`` in the CLI (issue 26, item 7: it was refused), against each server's
WebSocket listener (``websocket {}``), both targets."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.cli.conftest import Cli
from tests.support.targets import Target


def test_cli_over_ws(start_server: Callable[..., Target], tmp_path: Path) -> None:
    target = start_server(websocket={"host": "127.0.0.1", "port": -1, "no_tls": True})
    cli = Cli(target.url, tmp_path / "config")
    ws = ["-s", target.ws_url]
    try:
        assert cli(*ws, "server", "info", "--json").json()["url"] == target.ws_url
        cli(*ws, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
        sub = cli.spawn(*ws, "sub", "orders.>", "--count", "2", "--json", ready="Subscribing")
        cli(*ws, "pub", "orders.a", "one", "-J").ok()
        cli("pub", "orders.b", "two", "-J").ok()  # over TCP: both reach the ws subscriber
        assert [m["data"] for m in sub.finish().ok().json_lines()] == ["one", "two"]
        assert cli("--server", target.ws_url, "stream", "ls", "--names").ok().out.split() == ["ORDERS"]
        cli(*ws, "kv", "add", "CFG").ok()
        cli(*ws, "kv", "put", "CFG", "k", "v").ok()
        assert cli(*ws, "kv", "get", "CFG", "k", "--raw").ok().out == "v\n"
        # Thresholds a loaded CI machine cannot cross: the nats CLI's defaults (0.5 s) are for servers.
        generous = ("--connect-warn", "30s", "--connect-critical", "60s")
        text = cli(*ws, "server", "check", "connection", *generous).out
        assert text.startswith(f"OK Connection OK:connected to {target.ws_url} in ")
    finally:
        cli.close()


def test_cli_over_wss(start_server: Callable[..., Target], tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    key, crt = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
         "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    target = start_server(websocket={"host": "127.0.0.1", "port": -1, "tls": {"cert_file": str(crt), "key_file": str(key)}})
    cli = Cli(target.url, tmp_path / "config")
    assert target.ws_url.startswith("wss://")
    assert cli("-s", target.ws_url, "--tlsca", str(crt), "server", "info", "--json").json()["url"] == target.ws_url
    cli("-s", target.ws_url, "--tlsca", str(crt), "pub", "x", "y").ok()
    err = cli("-s", target.ws_url, "server", "info").fails(rc=1).err
    assert f"could not connect to {target.ws_url}: TLS: the server's certificate was not accepted" in err
