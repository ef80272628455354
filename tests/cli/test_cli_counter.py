"""``counter incr | get | view | ls`` (the nats CLI's verbs) against both targets."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def make_counter_stream(cli: Cli, name: str = "CTR", subjects: str = "ctr.>") -> None:
    config = {"name": name, "subjects": [subjects], "allow_msg_counter": True, "allow_direct": True}
    reply = cli("req", f"$JS.API.STREAM.CREATE.{name}", json.dumps(config), "--raw").ok().out
    assert '"error"' not in reply, reply


def test_counter_verbs(cli: Cli) -> None:
    make_counter_stream(cli)
    assert cli("counter", "incr", "ctr.a", "5").ok().out.strip() == "5"
    assert cli("counter", "incr", "ctr.a", "-2").ok().out.strip() == "3"
    assert cli("counter", "incr", "ctr.b").ok().out.strip() == "1"  # default increment 1
    big = "123456789012345678901234567890"
    assert cli("counter", "incr", "ctr.big", big).ok().out.strip() == big  # arbitrary precision
    assert cli("counter", "get", "ctr.a").ok().out.strip() == "3"
    view = cli("counter", "view", "ctr.a").ok().out
    assert "Value: 3" in view and "Increment: -2" in view
    assert cli("counter", "view", "ctr.a", "--json").json()["increment"] == "-2"
    assert cli("counter", "ls", "--stream", "CTR", "--json").json() == ["ctr.a", "ctr.b", "ctr.big"]
    assert cli("ctr", "ls", "ctr.a").ok().out.split() == ["ctr.a"]

    cli("counter", "incr", "ctr.a", "lots").fails("invalid value", rc=2)
    cli("counter", "ls").fails("no stream or subject", rc=2)
    cli("counter", "get", "nowhere.x").fails("no stream matches")
    cli("stream", "add", "PLAIN", "--subjects", "plain.>", "--defaults").ok()
    cli("counter", "incr", "plain.x", "1").fails("not a valid counter stream")
