"""``pub`` with 2.11+ headers and atomic batches (the nats CLI's flags), against both targets."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def test_pub_atomic_batch_from_stdin_lines(cli: Cli) -> None:
    config = {"name": "B", "subjects": ["b.>"], "allow_atomic": True}
    assert '"error"' not in cli("req", "$JS.API.STREAM.CREATE.B", json.dumps(config), "--raw").ok().out
    out = cli(
        "pub", "b.x", "--atomic", "--send-on", "newline", "--force-stdin", input=b"one\ntwo\nthree\n"
    ).ok().out
    assert "Stream: B Sequence: 3" in out and "Messages: 3" in out
    msgs = cli("stream", "view", "B", "--json").json_lines()
    assert [m["data"] for m in msgs] == ["one", "two", "three"]
    ack = cli("pub", "b.y", "x{{Count}}", "--count", "2", "--atomic", "--json").json()["ack"]
    assert ack["count"] == 2 and ack["seq"] == 5

    # a stream without allow_atomic refuses the whole batch: nothing is stored
    cli("stream", "add", "PLAIN", "--subjects", "p.>", "--defaults").ok()
    cli("pub", "p.x", "--atomic", "--send-on", "newline", "--force-stdin", input=b"a\nb\n").fails("atomic")
    assert cli("stream", "info", "PLAIN", "--json").json()["state"]["messages"] == 0


def test_pub_lines_and_ttl_header(cli: Cli) -> None:
    config = {"name": "T", "subjects": ["t.>"], "allow_msg_ttl": True}
    assert '"error"' not in cli("req", "$JS.API.STREAM.CREATE.T", json.dumps(config), "--raw").ok().out
    cli("pub", "-J", "t.a", "-H", "Nats-TTL:1h", "--send-on", "newline", "--force-stdin", input=b"l1\nl2\n").ok()
    msgs = cli("stream", "view", "T", "--json").json_lines()
    assert [m["data"] for m in msgs] == ["l1", "l2"]
    assert msgs[0]["headers"]["Nats-TTL"] == ["1h"]
    cli("pub", "-J", "t.a", "x", "-H", "Nats-TTL:soon").fails("invalid per-message TTL")
