"""``pub``, ``sub``, ``req``, ``reply`` and ``server`` against both targets, as subprocesses."""

from __future__ import annotations

import base64

from tests.cli.conftest import Cli


def test_pub_sub_wildcard_headers_templates_json(cli: Cli) -> None:
    sub = cli.spawn("sub", "orders.>", "--count", "3", "--json", ready="Subscribing on orders.>")
    cli("pub", "orders.new", "order {{Count}}", "--count", "2", "-H", "Trace:{{Count}}", "-H", "X:y").ok()
    cli("pub", "orders.eu.paid", "--force-stdin", input=b"from stdin").ok()
    msgs = sub.finish().ok().json_lines()
    assert [m["subject"] for m in msgs] == ["orders.new", "orders.new", "orders.eu.paid"]
    assert [m["data"] for m in msgs] == ["order 1", "order 2", "from stdin"]
    assert msgs[0]["headers"] == {"Trace": ["1"], "X": ["y"]}
    assert msgs[1]["headers"]["Trace"] == ["2"]
    assert "headers" not in msgs[2]


def test_sub_readable_and_raw_output(cli: Cli) -> None:
    sub = cli.spawn("sub", "greet.*", "--count", "1", ready="Subscribing")
    cli("pub", "greet.bob", "hello", "-H", "Who:bob", "--reply", "back.here").ok()
    out = sub.finish().ok().out
    assert '[#1] Received on "greet.bob" with reply "back.here"' in out
    assert "Who: bob" in out
    assert "hello" in out

    raw = cli.spawn("sub", "bin", "--count", "1", "--raw", ready="Subscribing")
    cli("pub", "bin", "--no-templates", "{{Count}} literal").ok()
    assert raw.finish().ok().out == "{{Count}} literal\n"


def test_binary_body_is_base64_in_json(cli: Cli) -> None:
    sub = cli.spawn("sub", "bin", "--count", "1", "--json", ready="Subscribing")
    cli("pub", "bin", "--force-stdin", input=b"\xff\x00\xfe").ok()
    (msg,) = sub.finish().ok().json_lines()
    assert base64.b64decode(msg["data_base64"]) == b"\xff\x00\xfe"


def test_queue_group_shares_messages(cli: Cli) -> None:
    # The subscribers stop after --wait: time for the other one and the publisher to start and
    # connect, which took more than 3 s on a loaded 2-core machine (both got nothing). They start
    # side by side, so neither window also pays for the other's start.
    a = cli.spawn("sub", "work", "--queue", "q", "--json", "--wait", "6s")
    b = cli.spawn("sub", "work", "--queue", "q", "--json", "--wait", "6s")
    a.wait_for_stderr("Subscribing")
    b.wait_for_stderr("Subscribing")
    cli("pub", "work", "job {{Count}}", "--count", "20").ok()
    got_a = a.finish().ok().json_lines()
    got_b = b.finish().ok().json_lines()
    assert len(got_a) + len(got_b) == 20
    assert sorted(m["data"] for m in got_a + got_b) == sorted(f"job {i}" for i in range(1, 21))


def test_sub_wait_without_count_reached_is_an_error(cli: Cli) -> None:
    cli("sub", "quiet", "--count", "2", "--wait", "300ms").fails("received 0 of 2")


def test_req_reply_templates_and_json(cli: Cli) -> None:
    rep = cli.spawn(
        "reply",
        "svc",
        "answer {{Count}} to {{Request}}",
        "--count",
        "2",
        "-H",
        "Via:cli",
        ready="Listening on svc",
    )
    first = cli("req", "svc", "q1", "--json").json()
    assert first["data"] == "answer 1 to q1"
    assert first["headers"] == {"Via": ["cli"]}
    assert first["rtt_ms"] >= 0
    second = cli("req", "svc", "q2", "--raw").ok()
    assert second.out == "answer 2 to q2\n"
    assert rep.finish().ok().rc == 0


def test_reply_echo_and_command(cli: Cli) -> None:
    echo = cli.spawn("reply", "echo", "--echo", "--count", "1", ready="Listening")
    got = cli("req", "echo", "ping", "-H", "K:V", "--json").json()
    assert got["data"] == "ping" and got["headers"] == {"K": ["V"]}
    echo.finish().ok()

    cmd = cli.spawn("reply", "upper", "--command", "tr a-z A-Z", "--count", "1", ready="Listening")
    assert cli("req", "upper", "shout", "--raw").ok().out == "SHOUT\n"
    cmd.finish().ok()


def test_req_multiple_requests_and_replies(cli: Cli) -> None:
    r1 = cli.spawn("reply", "many", "one", "--queue", "", "--count", "1", ready="Listening")
    r2 = cli.spawn("reply", "many", "two", "--queue", "", "--count", "1", ready="Listening")
    replies = cli("req", "many", "x", "--replies", "2", "--json").json()
    assert sorted(r["data"] for r in replies) == ["one", "two"]
    r1.finish().ok()
    r2.finish().ok()

    counted = cli.spawn("reply", "count", "{{Request}}", "--count", "3", ready="Listening")
    out = cli("req", "count", "n{{Count}}", "--count", "3", "--json").json()
    assert [r["data"] for r in out] == ["n1", "n2", "n3"]
    counted.finish().ok()


def test_req_no_responders_and_timeout(cli: Cli) -> None:
    cli("req", "nobody.home", "hi").fails("no responders")
    silent = cli.spawn("sub", "silent", "--count", "1", ready="Subscribing")
    cli("req", "silent", "hi", "--timeout", "300ms").fails("timeout")
    silent.finish().ok()


def test_server_info_and_ping(cli: Cli) -> None:
    info = cli("server", "info", "--json").json()
    assert info["info"]["jetstream"] is True
    assert info["info"]["max_payload"] > 0
    assert info["url"] == cli.url
    text = cli("server", "info").ok().out
    assert "JetStream: yes" in text and "Max Payload" in text

    ping = cli("server", "ping", "--count", "3", "--interval", "10ms", "--json").json()
    assert ping["count"] == 3 and len(ping["rtt_ms"]) == 3
    assert ping["min_ms"] <= ping["avg_ms"] <= ping["max_ms"]
    assert "ping statistics" in cli("server", "ping", "--count", "1").ok().out


def test_connection_and_usage_errors(cli: Cli) -> None:
    cli("pub", "x", "y", "-s", "nats://127.0.0.1:1").fails("could not connect", rc=1)
    cli("pub", "x", "y", "--count", "0").fails("--count", rc=2)
    cli("pub", "x", "y", "-H", "novalue").fails("Name:Value", rc=2)
    cli("pub", "bad subject", "y").fails("invalid subject")
    cli("pub", "x", "{{Nope}}").fails("unknown template function")
    cli("sub", "a..b", "--count", "1").fails("invalid subject")
    cli("server", "ping", "--interval", "fast").fails("invalid --interval", rc=2)
    cli("pub", "x", "y", "--timeout", "nope").fails("--timeout", rc=2)
    cli("pub").fails("subject", rc=2)
    cli("nonsense").fails("unknown command", rc=2)


def test_contexts_supply_the_server(cli: Cli) -> None:
    ctx_dir = cli.home / "nats" / "context"
    ctx_dir.mkdir(parents=True)
    (ctx_dir / "local.json").write_text(f'{{"url": "{cli.url}"}}')
    env = cli.env()
    del env["NATS_URL"]
    cli("server", "ping", "--count", "1", "--context", "local", env=env).ok()
    cli("server", "ping", "--count", "1", "--context", "missing", env=env).fails("unknown context")
    (cli.home / "nats" / "context.txt").write_text("local\n")
    cli("server", "ping", "--count", "1", env=env).ok()
    # a flag beats the context
    cli("server", "ping", "--count", "1", "-s", "nats://127.0.0.1:1", env=env).fails("could not connect")


def test_credentials_flags_and_environment(cli: Cli, start_server) -> None:  # type: ignore[no-untyped-def]
    secured = start_server(authorization={"user": "alice", "password": "s3cret"})
    env = {**cli.env(), "NATS_URL": secured.url}
    cli("server", "ping", "--count", "1", env=env).fails("authorization", rc=1)
    cli("server", "ping", "--count", "1", "--user", "alice", "--password", "nope", env=env).fails(
        "authorization"
    )
    cli("server", "ping", "--count", "1", "--user", "alice", "--password", "s3cret", env=env).ok()
    cli("server", "ping", "--count", "1", env={**env, "NATS_USER": "alice", "NATS_PASSWORD": "s3cret"}).ok()
    in_url = secured.url.replace("nats://", "nats://alice:s3cret@")
    cli("server", "ping", "--count", "1", "-s", in_url, env=env).ok()

    tokened = start_server(authorization={"token": "t0ken"})
    env = {**cli.env(), "NATS_URL": tokened.url}
    cli("server", "ping", "--count", "1", "--token", "t0ken", env=env).ok()
    cli("server", "ping", "--count", "1", "--user", "t0ken", env=env).ok()  # a lone --user is a token
    cli("server", "ping", "--count", "1", "--token", "wrong", env=env).fails("authorization")
