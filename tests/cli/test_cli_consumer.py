"""``consumer`` commands against both targets, as subprocesses: flags, --json, next/ack, errors."""

from __future__ import annotations

from tests.cli.conftest import Cli


def setup_stream(cli: Cli, messages: int = 0) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.*", "--defaults").ok()
    if messages:
        cli("pub", "-J", "orders.new", "o{{Count}}", "--count", str(messages), "-q").ok()


def test_add_pull_consumer_with_flags(cli: Cli) -> None:
    setup_stream(cli, 5)
    info = cli(
        "consumer", "add", "ORDERS", "PULL",
        "--filter", "orders.new",
        "--ack", "explicit",
        "--wait", "10s",
        "--max-deliver", "5",
        "--max-pending", "50",
        "--max-waiting", "20",
        "--deliver", "3",
        "--replay", "instant",
        "--description", "test puller",
        "--max-pull-batch", "100",
        "--backoff", "1s,2s",
        "--sample", "50",
        "--json",
    ).json()  # fmt: skip
    cfg = info["config"]
    assert info["name"] == "PULL" and cfg["durable_name"] == "PULL"
    assert cfg["filter_subject"] == "orders.new"
    assert cfg["ack_policy"] == "explicit"
    assert cfg["ack_wait"] == 10**9  # the server sets ack_wait to the first backoff step
    assert (cfg["max_deliver"], cfg["max_ack_pending"], cfg["max_waiting"]) == (5, 50, 20)
    assert cfg["deliver_policy"] == "by_start_sequence" and cfg["opt_start_seq"] == 3
    assert cfg["description"] == "test puller" and cfg["max_batch"] == 100
    assert cfg["backoff"] == [10**9, 2 * 10**9] and cfg["sample_freq"] == "50%"
    assert info["num_pending"] == 3  # messages 3..5
    text = cli("consumer", "info", "ORDERS", "PULL").ok().out
    assert "Information for Consumer ORDERS > PULL" in text and "Pull Mode: true" in text


def test_add_push_and_ephemeral_consumers(cli: Cli) -> None:
    setup_stream(cli)
    push = cli(
        "consumer", "add", "ORDERS", "PUSH", "--target", "deliver.here", "--deliver-group", "workers",
        "--heartbeat", "5s", "--flow-control", "--deliver", "new", "--defaults", "--json",
    ).json()["config"]  # fmt: skip
    assert push["deliver_subject"] == "deliver.here" and push["deliver_group"] == "workers"
    assert push["idle_heartbeat"] == 5 * 10**9 and push["flow_control"] is True
    assert push["deliver_policy"] == "new"
    eph = cli(
        "consumer", "add", "ORDERS", "--ephemeral", "--inactive-threshold", "1m", "--defaults", "--json"
    ).json()
    assert eph["name"] and "durable_name" not in eph["config"]
    assert eph["config"]["inactive_threshold"] == 60 * 10**9
    cli("consumer", "add", "ORDERS", "BOTH", "--pull", "--target", "x", "--defaults").fails(
        "exclude each other", rc=2
    )
    cli("consumer", "next", "ORDERS", "PUSH").fails("push based", rc=1)


def test_add_errors(cli: Cli) -> None:
    setup_stream(cli)
    cli("consumer", "add", "MISSING", "C", "--defaults").fails("stream not found", rc=1)
    cli("consumer", "add", "ORDERS", "C", "--deliver", "someday", "--defaults").fails(
        "invalid --deliver", rc=2
    )
    cli("consumer", "add", "ORDERS", "C", "--ack", "maybe").fails("invalid choice", rc=2)
    # 2.10+ takes a filter outside the stream's subjects (10093 is gone: transforms make it wrong)
    cli("consumer", "add", "ORDERS", "ELSEWHERE", "--filter", "elsewhere.>", "--defaults").ok()
    cli("consumer", "add", "ORDERS", "--defaults").fails("a consumer name is required", rc=2)
    cli("consumer", "add", "ORDERS", "C", "--pause-until", "soon", "--defaults").fails("RFC3339", rc=2)
    cli("consumer", "add", "ORDERS", "C", "--sample", "150", "--defaults").fails("percentage", rc=2)


def test_next_acks_and_reports_state(cli: Cli) -> None:
    setup_stream(cli, 4)
    cli("consumer", "add", "ORDERS", "C1", "--defaults").ok()
    got = cli("consumer", "next", "ORDERS", "C1", "--count", "2", "--json").json_lines()
    assert [m["data"] for m in got] == ["o1", "o2"]
    assert [m["seq"] for m in got] == [1, 2] and got[1]["pending"] == 2
    info = cli("consumer", "info", "ORDERS", "C1", "--json").json()
    assert info["ack_floor"]["stream_seq"] == 2 and info["num_ack_pending"] == 0 and info["num_pending"] == 2

    out = cli("consumer", "next", "ORDERS", "C1", "--no-ack").ok().out
    assert "str seq: 3" in out and "o3" in out and "Acknowledged" not in out
    info = cli("consumer", "info", "ORDERS", "C1", "--json").json()
    assert info["num_ack_pending"] == 1

    assert cli("consumer", "next", "ORDERS", "C1", "--raw").ok().out == "o4\n"
    cli("consumer", "next", "ORDERS", "C1", "--wait", "300ms").fails("no message received", rc=1)
    cli("consumer", "next", "ORDERS", "NOPE").fails("consumer not found", rc=1)


def test_ls_report_edit_rm(cli: Cli) -> None:
    setup_stream(cli, 3)
    cli("consumer", "add", "ORDERS", "A", "--defaults").ok()
    cli("consumer", "add", "ORDERS", "B", "--ack", "none", "--defaults").ok()
    assert sorted(i["name"] for i in cli("consumer", "ls", "ORDERS", "--json").json()) == ["A", "B"]
    assert cli("consumer", "ls", "ORDERS", "--names", "--json").json() == ["A", "B"]
    assert "Consumers (2)" in cli("consumer", "ls", "ORDERS").ok().out
    report = {r["consumer"]: r for r in cli("consumer", "report", "ORDERS", "--json").json()}
    assert report["A"]["unprocessed"] == 3 and report["B"]["ack_policy"] == "none"
    assert "Consumer report for ORDERS with 2 consumers" in cli("consumer", "report", "ORDERS").ok().out

    cli("consumer", "edit", "ORDERS", "A", "--max-deliver", "9").fails("--force")
    edited = cli(
        "consumer", "edit", "ORDERS", "A", "--max-deliver", "9", "--description", "edited", "-f", "--json"
    )
    assert edited.json()["config"]["max_deliver"] == 9 and edited.json()["config"]["description"] == "edited"
    cli("consumer", "edit", "ORDERS", "A", "-f").fails("no changes")

    cli("consumer", "rm", "ORDERS", "A").fails("--force", rc=2)
    assert cli("consumer", "rm", "ORDERS", "A", "-f", "--json").json()["deleted"] is True
    cli("consumer", "rm", "ORDERS", "A", "-f").fails("consumer not found", rc=1)
    assert cli("consumer", "ls", "ORDERS", "--names").ok().out.split() == ["B"]
    cli("consumer", "ls", "NOPE").fails("stream not found")
