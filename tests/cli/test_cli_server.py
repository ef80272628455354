"""``server list``, ``server report``, ``server request`` and ``server check`` (issue 26, item 7), on
both targets.

``list``/``report``/``request`` are the system account's ``$SYS.REQ.SERVER.PING.*`` requests: both
servers answer them for a user of the system account (and ``CONNZ`` for any account, scoped to it);
another account gets one clear line. The checks: Nagios output (``STATUS name Crit:… OK:… |
perfdata``) and exit codes 0/1/2, as natscli's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.cli.conftest import Cli, Result
from tests.support.targets import Target

ACCOUNTS = {
    "server_name": "N1",
    "accounts": {
        "SYS": {"users": [{"user": "sys", "password": "sys"}]},
        "APP": {"jetstream": "enabled", "users": [{"user": "app", "password": "app"}]},
    },
    "system_account": "SYS",
}


@pytest.fixture
def accounts_cli(start_server: Callable[..., Target], tmp_path: Path) -> Iterator[Cli]:
    """A server with a system account (SYS, user sys) and an application account (APP, user app)."""
    target = start_server(**ACCOUNTS)
    runner = Cli(target.url, tmp_path / "config")
    yield runner
    runner.close()


def _as(cli: Cli, user: str) -> list[str]:
    return ["-s", cli.url.replace("nats://", f"nats://{user}:{user}@")]


def _no_system(result: Result, subject: str) -> None:
    err = result.fails(rc=1).err.strip()
    assert err.startswith(f"pyjetstream: error: {result_url(err)} answered no {subject} request: "), err
    assert "ensure the account used has system privileges" in err


def result_url(err: str) -> str:
    m = re.search(r"error: (nats://\S+) answered", err)
    assert m, err
    return m.group(1)


# --------------------------------------------------------------------------- list / report / request


def test_server_list_and_report_jetstream(accounts_cli: Cli) -> None:
    cli = accounts_cli
    sys_, app = _as(cli, "sys"), _as(cli, "app")
    cli(*app, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    cli(*app, "pub", "orders.a", "one", "-J").ok()
    listed = cli(*sys_, "server", "list")
    reported = cli(*sys_, "server", "report", "jetstream", "1")
    out = listed.ok().out
    assert "Server Overview" in out and "N1" in out and "2.15.1" in out
    (stats,) = cli(*sys_, "server", "list", "--json").json()
    assert stats["server"]["name"] == "N1" and stats["statsz"]["connections"] >= 1
    out = reported.ok().out
    assert "JetStream Summary" in out
    row = next(line for line in out.splitlines() if "N1" in line)
    assert [c.strip() for c in row.strip("│ ").split("│")][1:4] == ["1", "0", "1"]  # streams, consumers, messages
    (jsz,) = cli(*sys_, "server", "report", "jetstream", "--json").json()
    assert jsz["data"]["streams"] == 1 and jsz["data"]["messages"] == 1
    # Not the system account: the clear error, not an empty table; a filter nobody matches, said so.
    _no_system(cli(*app, "server", "list"), "$SYS.REQ.SERVER.PING")
    err = cli(*sys_, "server", "request", "varz", "--name", "nope").fails(rc=1).err
    assert "no server answered $SYS.REQ.SERVER.PING.VARZ: none has server_name nope" in err


def test_report_connections_and_accounts(accounts_cli: Cli) -> None:
    cli = accounts_cli
    sys_, app = _as(cli, "sys"), _as(cli, "app")
    sub = cli.spawn(*app, "sub", "watch.>", ready="Subscribing")
    try:
        conns = cli(*sys_, "server", "report", "connections", "--json").json()
        app_conns = [c for c in conns if c.get("account") == "APP"]
        assert any("watch.>" in (c.get("subscriptions_list") or []) for c in app_conns), conns
        assert all(c["server"]["name"] == "N1" for c in conns)
        accounts = {a["account"]: a for a in cli(*sys_, "server", "report", "accounts", "--json").json()}
        assert accounts["APP"]["connections"] >= 1 and accounts["APP"]["subscriptions"] >= 1
        assert "SYS" in accounts
        text = cli(*sys_, "server", "report", "connections").ok().out
        assert "Connections per server" in text and "APP" in text
        assert "Accounts Overview" in cli(*sys_, "server", "report", "accounts").ok().out
        assert [a["account"] for a in cli(*sys_, "server", "report", "accounts", "APP", "--json").json()["connection_info"]
                ] == ["APP"]  # fmt: skip
        # Any account: nats-server's system imports answer CONNZ for the asking account only.
        assert {c["account"] for c in cli(*app, "server", "report", "connections", "--json").json()} == {"APP"}
    finally:
        sub.stop()


@pytest.mark.parametrize(
    ("verb", "_kind", "check"),
    [
        (["variables"], "VARZ", lambda d: d["server_name"] == "N1"),
        (["varz"], "VARZ", lambda d: d["server_name"] == "N1"),
        (["jetstream", "--all"], "JSZ", lambda d: d["streams"] == 0 or "account_details" in d),
        (["connections", "--subscriptions"], "CONNZ", lambda d: d["num_connections"] >= 1),
        (["subscriptions"], "SUBSZ", lambda d: d["num_subscriptions"] >= 1),
        (["accounts"], "ACCOUNTZ", lambda d: "APP" in d["accounts"]),
        (["jetstream-health"], "HEALTHZ", lambda d: d["status"] == "ok"),
        (["routes"], "ROUTEZ", lambda d: d["num_routes"] == 0),
    ],
)
def test_server_request(accounts_cli: Cli, verb: list[str], _kind: str, check: Callable[[dict], bool]) -> None:
    cli = accounts_cli
    result = cli(*_as(cli, "sys"), "server", "request", *verb)
    (answer,) = [json.loads(line) for line in result.ok().out.splitlines()]
    assert answer["server"]["name"] == "N1"
    assert check(answer["data"]), answer["data"]


# --------------------------------------------------------------------------- checks (both targets)


def _nagios(result: Result, status: str, rc: int) -> tuple[str, str]:
    """``STATUS name …`` and its perfdata; the exit code is Nagios's."""
    assert result.rc == rc, result.describe()
    line = result.out.strip()
    assert line.startswith(status + " "), result.describe()
    text, _, perf = line.partition(" | ")
    return text, perf


# Thresholds no loaded machine reaches (a CLI's connect and round trip took over 0.5 s on a loaded
# 2-core run, which natscli's defaults call WARNING), and a wait for the PONG and the message as long
# (the default --timeout, 5 s, would make a slow round trip a CRITICAL without request_time).
GENEROUS = ["--connect-warn", "30s", "--connect-critical", "60s", "--rtt-warn", "30s", "--rtt-critical", "60s",
            "--req-warn", "30s", "--req-critical", "60s", "--timeout", "60s"]  # fmt: skip


def test_check_connection(cli: Cli) -> None:
    text, perf = _nagios(cli("server", "check", "connection", *GENEROUS), "OK", 0)
    # Any Go duration (``1m2.5s`` too: the time is the run's, whatever the load).
    assert re.match(r"OK Connection OK:connected to nats://127\.0\.0\.1:\d+ in [\dhmsµn.]+ OK:rtt time ", text), text
    assert re.search(r"OK:round trip took \d+\.\d{6}s$", text), text
    assert re.fullmatch(r"connect_time=\d+\.\d{4}s;30\.0000;60\.0000 rtt=\d+\.\d{4}s;30\.0000;60\.0000 "
                        r"request_time=\d+\.\d{4}s;30\.0000;60\.0000", perf), perf  # fmt: skip
    # natscli's default thresholds (500 ms, 1 s) in the perfdata, whatever this run's timings say.
    defaults = cli("server", "check", "connection", "--timeout", "60s")
    assert defaults.rc in (0, 1, 2), defaults.describe()
    assert re.fullmatch(r"connect_time=\d+\.\d{4}s;0\.5000;1\.0000 rtt=\d+\.\d{4}s;0\.5000;1\.0000 "
                        r"request_time=\d+\.\d{4}s;0\.5000;1\.0000", defaults.out.strip().partition(" | ")[2])  # fmt: skip
    text, _ = _nagios(cli("server", "check", "conn", *GENEROUS, "--rtt-warn", "1ns", "--rtt-critical", "1h"), "WARNING", 1)
    assert "Warn:rtt time exceeded 1e-09" in text
    text, perf = _nagios(cli("server", "check", "connection", "-s", "nats://127.0.0.1:1"), "CRITICAL", 2)
    assert text == (
        "CRITICAL Connection Crit:connection failed: could not connect to nats://127.0.0.1:1: connection refused "
        "(is a server listening there?)"
    )
    assert perf == ""


def test_check_stream(cli: Cli) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    for i in range(3):
        cli("pub", f"orders.{i}", "x", "-J").ok()
    assert _nagios(cli("server", "check", "stream", "--stream", "ORDERS"), "OK", 0) == ("OK ORDERS OK:0 sources", "sources=0")
    text, perf = _nagios(cli("server", "check", "stream", "--stream", "ORDERS", "--msgs-warn", "5", "--msgs-critical", "1"), "WARNING", 1)
    assert (text, perf) == ("WARNING ORDERS Warn:3 messages OK:0 sources", "messages=3;5;1 sources=0")
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "ORDERS", "--msgs-critical", "3"), "CRITICAL", 2)
    assert text == "CRITICAL ORDERS Crit:3 messages OK:0 sources"
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "ORDERS", "--subjects-warn", "2", "--subjects-critical", "5"), "WARNING", 1)
    assert "Warn:3 subjects" in text
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "ORDERS", "--peer-expect", "3"), "CRITICAL", 2)
    assert "Crit:Stream is not clustered" in text
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "ORDERS", "--lag-critical", "10"), "CRITICAL", 2)
    assert "Crit:not mirrored" in text
    # Thresholds from the stream's metadata (a flag would win).
    cli("stream", "add", "META", "--subjects", "meta", "--defaults", "--metadata", "io.nats.monitor.msgs-critical=5").ok()
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "META"), "CRITICAL", 2)
    assert text == "CRITICAL META Crit:0 messages OK:0 sources"
    text, _ = _nagios(cli("server", "check", "stream", "--stream", "NOPE"), "CRITICAL", 2)
    assert text.startswith("CRITICAL NOPE Crit:could not load info: stream not found")


def test_check_consumer_kv_message_jetstream(cli: Cli, tmp_path: Path) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    for i in range(4):
        cli("pub", "orders.new", f"{1_700_000_000 + i}", "-J").ok()
    cli("consumer", "add", "ORDERS", "C", "--pull", "--ack", "explicit", "--defaults").ok()
    cli("consumer", "next", "ORDERS", "C", "--count", "2", "--no-ack").ok()
    text, perf = _nagios(cli("server", "check", "consumer", "--stream", "ORDERS", "--consumer", "C",
                             "--outstanding-ack-critical", "2", "--unprocessed-critical", "10"), "CRITICAL", 2)  # fmt: skip
    assert text == "CRITICAL ORDERS_C Crit:Ack Pending: 2 OK:Unprocessed Messages: 2"
    assert perf.startswith("ack_pending=2;;2 pull_waiting=0 pending=2;;10 redelivered=0 last_delivery=")
    text, _ = _nagios(cli("server", "check", "consumer", "--stream", "ORDERS", "--consumer", "C",
                          "--last-ack-critical", "1h"), "CRITICAL", 2)  # fmt: skip
    assert text == "CRITICAL ORDERS_C Crit:No acks"

    cli("kv", "add", "CFG").ok()
    cli("kv", "put", "CFG", "color", "blue").ok()
    text, perf = _nagios(cli("server", "check", "kv", "--bucket", "CFG", "--key", "color", "--values-warn", "5",
                             "--values-critical", "10"), "OK", 0)  # fmt: skip
    assert (text, perf.split(" bytes=")[0]) == ("OK CFG OK:bucket CFG OK:key color found OK:1 values", "values=1;5;10")
    cli("kv", "del", "CFG", "color", "-f").ok()
    text, _ = _nagios(cli("server", "check", "kv", "--bucket", "CFG", "--key", "color"), "CRITICAL", 2)
    assert text == "CRITICAL CFG Crit:key color is deleted OK:bucket CFG"
    text, _ = _nagios(cli("server", "check", "kv", "--bucket", "NOPE"), "CRITICAL", 2)
    assert text == "CRITICAL NOPE Crit:bucket NOPE not found"

    text, perf = _nagios(cli("server", "check", "message", "--stream", "ORDERS", "--subject", "orders.new",
                             "--content", "^17"), "OK", 0)  # fmt: skip
    assert text == "OK Stream Message OK:Valid message on ORDERS > orders.new"
    assert re.fullmatch(r"age=\d+\.\d{4}s size=10B", perf), perf
    text, _ = _nagios(cli("server", "check", "message", "--stream", "ORDERS", "--subject", "orders.new",
                          "--body-timestamp", "--age-critical", "1h"), "CRITICAL", 2)  # fmt: skip
    assert re.fullmatch(r"CRITICAL Stream Message Crit:\d+h\d+m[\d.]+s old", text), text
    text, _ = _nagios(cli("server", "check", "message", "--stream", "ORDERS", "--subject", "orders.none"), "CRITICAL", 2)
    assert text == "CRITICAL Stream Message Crit:no message found"

    text, perf = _nagios(cli("server", "check", "jetstream"), "OK", 0)
    assert text == "OK JetStream"
    assert "streams=2 streams_pct=0% consumers=1 consumers_pct=0%" in perf and "replicas_ok=2" in perf  # + the KV stream
    text, _ = _nagios(cli("server", "check", "jetstream", "--streams-warn", "90", "--streams-critical", "50"), "CRITICAL", 2)
    assert "Crit:streams: invalid thresholds" in text

    # The other formats, and --outfile.
    doc = json.loads(cli("server", "check", "kv", "--bucket", "CFG", "--format", "json").out)
    assert (doc["status"], doc["check_suite"], doc["check_name"], doc["ok"]) == ("OK", "kv", "CFG", ["bucket CFG"])
    assert doc["perf_data"][0] == {"name": "values", "value": 1, "warning": 0, "critical": 0}  # the delete marker
    prom = cli("server", "check", "kv", "--bucket", "NOPE", "--format", "prometheus")
    assert prom.rc == 0  # prometheus: always 0, the status is a gauge
    assert 'nats_server_check_kv_status_code{item="NOPE",status="CRITICAL"} 2' in prom.out
    out = tmp_path / "check.txt"
    result = cli("server", "check", "stream", "--stream", "ORDERS", "--outfile", str(out))
    assert (result.rc, result.out) == (0, "")
    assert out.read_text() == "OK ORDERS OK:0 sources | sources=0\n"
