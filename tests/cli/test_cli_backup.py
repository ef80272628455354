"""``stream backup`` / ``stream restore`` with the nats CLI's directory format, against both targets."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli
from tests.support.targets import Target


def test_backup_and_restore_with_consumers(cli: Cli, server: Target, tmp_path: Path) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.*", "--defaults").ok()
    cli("pub", "-J", "orders.new", "o{{Count}}", "--count", "50", "-q").ok()
    cli("consumer", "add", "ORDERS", "C", "--pull", "--defaults").ok()
    cli("consumer", "next", "ORDERS", "C", "--count", "10").ok()  # ack floor 10

    target = tmp_path / "backup"
    out = cli("stream", "backup", "ORDERS", str(target)).ok().out
    assert "for stream 'ORDERS'" in out
    meta = json.loads((target / "backup.json").read_text())
    assert meta["config"]["name"] == "ORDERS" and meta["state"]["messages"] == 50
    assert (target / "stream.tar.s2").stat().st_size > 0

    cli("stream", "restore", str(target)).fails("already in use")
    cli("stream", "rm", "ORDERS", "-f").ok()
    info = cli("stream", "restore", str(target), "--json").json()
    assert info["config"]["name"] == "ORDERS"
    assert info["state"]["messages"] == 50 and info["state"]["last_seq"] == 50
    consumer = cli("consumer", "info", "ORDERS", "C", "--json").json()
    assert consumer["ack_floor"]["stream_seq"] == 10 and consumer["num_pending"] == 40
    got = cli("consumer", "next", "ORDERS", "C", "--json").json_lines()
    assert got[0]["seq"] == 11 and got[0]["data"] == "o11"


def test_backup_errors(cli: Cli, server: Target, tmp_path: Path) -> None:
    cli("stream", "backup", "NOPE", str(tmp_path / "b")).fails("stream not found")
    cli("stream", "restore", str(tmp_path / "missing")).fails("not a stream backup")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "backup.json").write_text("{}")
    cli("stream", "restore", str(tmp_path / "bad")).fails("no stream config")
