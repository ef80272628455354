"""``sub`` with natscli's JetStream flags (issue 26, item 7), on both targets: ``--stream``,
``--all``, ``--new``, ``--last``, ``--since``, ``--start-sequence``, ``--last-per-subject``,
``-T``, ``--durable`` and ``--ack``, direct gets on work-queue streams, and the output modes
``--raw``, ``--headers-only``, ``--subjects-only`` and ``--dump``."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.cli.conftest import Cli


def _orders(cli: Cli) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    for subject, body in (("orders.a", "a1"), ("orders.a", "a2"), ("orders.b", "b1"), ("orders.a", "a3")):
        cli("pub", subject, body, "-J", "-q", "-H", f"Body:{body}").ok()


def _bodies(cli: Cli, *args: str) -> list[str]:
    return [m["data"] for m in cli("sub", *args, "--json").ok().json_lines()]


def test_start_positions(cli: Cli) -> None:
    _orders(cli)
    assert _bodies(cli, "orders.>", "--all", "-T") == ["a1", "a2", "b1", "a3"]
    assert _bodies(cli, "orders.a", "--all", "-T") == ["a1", "a2", "a3"]
    assert _bodies(cli, "--stream", "ORDERS", "-T") == ["a1", "a2", "b1", "a3"]  # --stream alone: all
    assert _bodies(cli, "orders.>", "--start-sequence", "3", "-T") == ["b1", "a3"]
    assert _bodies(cli, "orders.>", "--start-seq", "2", "--count", "1") == ["a2"]
    assert _bodies(cli, "orders.>", "--last", "-T") == ["a3"]
    assert _bodies(cli, "--stream", "ORDERS", "--last-per-subject", "-T") == ["b1", "a3"]
    assert _bodies(cli, "orders.>", "--since", "1h", "-T") == ["a1", "a2", "b1", "a3"]
    first = cli("sub", "orders.a", "--all", "--count", "1", "--json").ok().json_lines()[0]
    assert (first["stream"], first["seq"], first["pending"], first["headers"]) == ("ORDERS", 1, 2, {"Body": ["a1"]})


def test_new_waits_for_new_messages(cli: Cli) -> None:
    _orders(cli)
    sub = cli.spawn("sub", "orders.>", "--new", "--count", "1", "--json", ready="for new messages")
    cli("pub", "orders.c", "fresh", "-J", "-q").ok()
    (msg,) = sub.finish().ok().json_lines()
    assert (msg["data"], msg["seq"]) == ("fresh", 5)


def test_readable_output_and_modes(cli: Cli, tmp_path: Path) -> None:
    _orders(cli)
    out = cli("sub", "orders.b", "--all", "-T").ok().out
    assert "[#1] Received JetStream message: stream: ORDERS seq: 3 / pending: 0 / subject: orders.b" in out
    assert "Body: b1" in out and "\nb1\n" in out
    assert cli("sub", "orders.a", "--all", "-T", "--raw").ok().out == "a1\na2\na3\n"
    headers_only = cli("sub", "orders.b", "--all", "-T", "--headers-only").ok().out
    assert "Body: b1" in headers_only and "\nb1\n" not in headers_only
    subjects = cli("sub", "orders.>", "--all", "-T", "--subjects-only").ok().out.splitlines()
    assert [line.rsplit("subject: ", 1)[1].split(" /")[0] for line in subjects] == ["orders.a", "orders.a", "orders.b", "orders.a"]
    dump = tmp_path / "dump"
    cli("sub", "orders.a", "--all", "-T", "--dump", str(dump)).ok()
    assert sorted(p.name for p in dump.iterdir()) == ["1.json", "2.json", "4.json"]  # by stream sequence
    doc = json.loads((dump / "4.json").read_text())
    assert doc == {"Subject": "orders.a", "Reply": "", "Header": {"Body": ["a3"]}, "Data": base64.b64encode(b"a3").decode(), "Sub": None}
    docs = [json.loads(d) for d in cli("sub", "orders.b", "--all", "-T", "--dump", "-").ok().out.split("\0") if d]
    assert [base64.b64decode(d["Data"]) for d in docs] == [b"b1"]


def test_core_dump_and_ignore(cli: Cli, tmp_path: Path) -> None:
    sub = cli.spawn("sub", "news.>", "--count", "2", "--dump", "-", "-I", "news.skip", ready="Subscribing")
    for subject in ("news.a", "news.skip", "news.b"):
        cli("pub", subject, f"x-{subject}").ok()
    docs = [json.loads(d) for d in sub.finish().ok().out.split("\0") if d]
    assert [d["Subject"] for d in docs] == ["news.a", "news.b"]


def test_durable_consumer_acks(cli: Cli) -> None:
    _orders(cli)
    cli("consumer", "add", "ORDERS", "WORK", "--pull", "--ack", "explicit", "--defaults").ok()
    assert _bodies(cli, "--stream", "ORDERS", "--durable", "WORK", "-T") == ["a1", "a2", "b1", "a3"]
    info = cli("consumer", "info", "ORDERS", "WORK", "--json").json()
    assert info["ack_floor"]["stream_seq"] == 4 and info["num_ack_pending"] == 0
    # A durable that does not exist is made (no acks) and kept.
    assert _bodies(cli, "--stream", "ORDERS", "--durable", "NEWD", "--start-seq", "4", "-T") == ["a3"]
    assert "NEWD" in cli("consumer", "ls", "ORDERS", "--names").ok().out.split()


def test_work_queue_streams_are_read_with_direct_gets(cli: Cli) -> None:
    """A consumer on a work-queue stream would take its messages: ``sub`` reads them with direct
    gets (natscli ``directSubscribe``), and they are still there afterwards."""
    cli("stream", "add", "JOBS", "--subjects", "jobs.>", "--retention", "work", "--defaults").ok()
    for i in range(3):
        cli("pub", f"jobs.{i}", f"job{i}", "-J", "-q").ok()
    out = cli("sub", "jobs.>", "--all", "-T").ok().out
    assert "Received JetStream message (direct): stream: JOBS seq 1 / subject: jobs.0" in out
    assert _bodies(cli, "jobs.>", "--start-seq", "2", "-T") == ["job1", "job2"]
    assert cli("stream", "info", "JOBS", "--json").json()["state"]["messages"] == 3


def test_jetstream_flag_mistakes(cli: Cli) -> None:
    _orders(cli)
    cli("sub", "nowhere.x", "--all").fails("no stream found with subject: nowhere.x", rc=1)
    cli("sub", "a", "b", "--all").fails("streams subscribe support only 1 subject", rc=2)
    cli("sub", "orders.a", "--queue", "q", "--all").fails("queue group subscriptions are not supported", rc=2)
    cli("sub", "orders.a", "-T").fails("--terminate-at-end is only supported for JetStream", rc=2)
    cli("sub", "orders.a", "--all", "--new").fails("exclude each other", rc=2)
    cli("sub", "orders.a", "--start-seq", "0").fails("stream sequences start at 1", rc=2)


def test_core_sub_acks_a_push_consumers_deliveries(cli: Cli) -> None:
    """``sub DELIVER_SUBJECT --ack``: natscli acknowledges messages that carry JetStream metadata."""
    _orders(cli)
    cli("consumer", "add", "ORDERS", "PUSH", "--target", "deliver.push", "--ack", "explicit", "--defaults").ok()
    got = cli("sub", "deliver.push", "--ack", "--count", "4", "--json").ok().json_lines()
    assert [m["data"] for m in got] == ["a1", "a2", "b1", "a3"]
    info = cli("consumer", "info", "ORDERS", "PUSH", "--json").json()
    assert info["num_ack_pending"] == 0 and info["ack_floor"]["stream_seq"] == 4
