"""``stream`` commands against both targets, as subprocesses: flags, --json wire output, errors."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

from tests.cli.conftest import Cli


def add_orders(cli: Cli, *extra: str) -> dict:
    return cli("stream", "add", "ORDERS", "--subjects", "orders.*", "--defaults", "--json", *extra).json()


def publish(cli: Cli, subject: str, body: str, count: int = 1, *extra: str) -> None:
    cli("pub", "-J", subject, body, "--count", str(count), "-q", *extra).ok()


def test_add_with_flags_sets_every_field(cli: Cli) -> None:
    info = cli(
        "stream", "add", "JOBS",
        "--subjects", "jobs.*,work.>",
        "--description", "job queue",
        "--storage", "memory",
        "--retention", "work",
        "--discard", "new",
        "--max-msgs", "1000",
        "--max-msgs-per-subject", "100",
        "--max-bytes", "1MB",
        "--max-age", "1d",
        "--max-msg-size", "64K",
        "--max-consumers", "5",
        "--dupe-window", "30s",
        "--no-allow-direct",
        "--deny-delete",
        "--deny-purge",
        "--json",
    ).json()  # fmt: skip
    cfg = info["config"]
    assert cfg["name"] == "JOBS"
    assert cfg["subjects"] == ["jobs.*", "work.>"]
    assert cfg["description"] == "job queue"
    assert cfg["storage"] == "memory"
    assert cfg["retention"] == "workqueue"
    assert cfg["discard"] == "new"
    assert (cfg["max_msgs"], cfg["max_msgs_per_subject"], cfg["max_consumers"]) == (1000, 100, 5)
    assert cfg["max_bytes"] == 1024 * 1024
    assert cfg["max_age"] == 86_400 * 10**9
    assert cfg["max_msg_size"] == 64 * 1024
    assert cfg["duplicate_window"] == 30 * 10**9
    assert cfg["allow_direct"] is False
    assert cfg["deny_delete"] is True and cfg["deny_purge"] is True
    assert info["state"]["messages"] == 0


def test_add_defaults_match_the_nats_cli(cli: Cli) -> None:
    cfg = add_orders(cli)["config"]
    assert cfg["retention"] == "limits" and cfg["storage"] == "file" and cfg["discard"] == "old"
    assert cfg["max_msgs"] == cfg["max_bytes"] == cfg["max_msg_size"] == cfg["max_consumers"] == -1
    assert cfg["allow_direct"] is True and cfg["num_replicas"] == 1
    text = cli("stream", "add", "TEXT", "--subjects", "text.>", "--defaults").ok().out
    assert (
        "Stream TEXT was created" in text
        and "Subjects: text.>" in text
        and "Maximum Messages: unlimited" in text
    )


def test_add_errors_carry_the_servers_message(cli: Cli) -> None:
    add_orders(cli)
    cli("stream", "add", "OTHER", "--subjects", "orders.*", "--defaults").fails("subjects overlap", rc=1)
    cli("stream", "add", "ORDERS", "--subjects", "else.*", "--defaults").fails("already in use", rc=1)
    cli("stream", "add", "--subjects", "x").fails("stream name is required", rc=2)
    cli("stream", "add", "BAD", "--max-age", "forever", "--defaults").fails("invalid --max-age", rc=2)
    cli("stream", "add", "BAD", "--max-bytes", "lots", "--defaults").fails("invalid --max-bytes", rc=2)
    cli("stream", "add", "BAD", "--storage", "tape").fails("invalid choice", rc=2)
    cli("stream", "add", "BAD.NAME", "--defaults").fails("invalid stream name", rc=1)


def test_info_ls_report(cli: Cli) -> None:
    add_orders(cli)
    cli("stream", "add", "AUDIT", "--subjects", "audit.>", "--defaults").ok()
    publish(cli, "orders.new", "o{{Count}}", 3)
    info = cli("stream", "info", "ORDERS", "--json").json()
    assert info["state"]["messages"] == 3 and info["state"]["last_seq"] == 3
    text = cli("stream", "info", "ORDERS").ok().out
    assert "Information for Stream ORDERS" in text and "Messages: 3" in text
    per_subject = cli("stream", "info", "ORDERS", "--subjects", ">", "--json").json()
    assert per_subject["state"]["subjects"] == {"orders.new": 3}

    listed = cli("stream", "ls", "--json").json()
    assert sorted(i["config"]["name"] for i in listed) == ["AUDIT", "ORDERS"]
    assert cli("stream", "ls", "--names", "--json").json() == ["AUDIT", "ORDERS"]
    assert cli("stream", "ls", "--names", "--subject", "audit.x").ok().out.split() == ["AUDIT"]
    table = cli("stream", "ls").ok().out
    assert "ORDERS" in table and "AUDIT" in table and "Streams (2)" in table

    report = {r["stream"]: r for r in cli("stream", "report", "--json").json()}
    assert report["ORDERS"]["messages"] == 3 and report["AUDIT"]["messages"] == 0
    assert "Stream Report" in cli("stream", "report").ok().out
    cli("stream", "info", "MISSING").fails("stream not found", rc=1)
    cli("stream", "info").fails("a stream name is required", rc=2)


def test_edit_shows_changes_and_needs_force(cli: Cli) -> None:
    add_orders(cli)
    cli("stream", "edit", "ORDERS", "--max-msgs", "10").fails("--force")
    edited = cli(
        "stream", "edit", "ORDERS", "--max-msgs", "10", "--description", "capped", "-f", "--json"
    ).json()
    assert edited["config"]["max_msgs"] == 10 and edited["config"]["description"] == "capped"
    assert edited["config"]["subjects"] == ["orders.*"]  # untouched fields stay
    out = cli("stream", "edit", "ORDERS", "--subjects", "orders.*,more.*", "-f").ok().out
    assert "- subjects" in out and "+ subjects" in out and "Stream ORDERS was updated" in out
    cli("stream", "edit", "ORDERS", "-f").fails("no changes")
    cli("stream", "edit", "ORDERS", "--storage", "memory", "-f").fails(
        "stream configuration update can not change storage"
    )
    cli("stream", "edit", "NOPE", "--max-msgs", "1", "-f").fails("stream not found")
    assert cli("stream", "edit", "ORDERS", "--seal", "-f", "--json").json()["config"]["sealed"] is True
    cli("pub", "-J", "orders.new", "late").fails("sealed", rc=1)


def test_config_files_in_and_out(cli: Cli) -> None:
    add_orders(cli, "--max-msgs", "50")
    saved = cli.home / "orders.json"
    saved.write_text(cli("stream", "info", "ORDERS", "--json").out)
    copy = cli("stream", "add", "COPY", "--config", str(saved), "--subjects", "copy.*", "--json").json()
    assert copy["config"]["name"] == "COPY" and copy["config"]["max_msgs"] == 50
    assert copy["config"]["subjects"] == ["copy.*"]

    planned = cli.home / "planned.json"
    cli("stream", "add", "PLAN", "--subjects", "plan.*", "--defaults", "--output", str(planned)).ok()
    assert json.loads(planned.read_text())["subjects"] == ["plan.*"]
    cli("stream", "info", "PLAN").fails("stream not found")
    cli("stream", "add", "PLAN", "--config", str(planned), "--json").json()

    (cli.home / "bad.json").write_text("{not json")
    cli("stream", "add", "X", "--config", str(cli.home / "bad.json")).fails("not valid JSON", rc=2)
    (cli.home / "typed.json").write_text('{"max_msgs": "many"}')
    cli("stream", "add", "X", "--config", str(cli.home / "typed.json")).fails("invalid --config", rc=2)
    cli("stream", "add", "X", "--config", str(cli.home / "missing.json")).fails("cannot read --config", rc=2)


def test_get_rmm_purge(cli: Cli) -> None:
    add_orders(cli)
    publish(cli, "orders.new", "n{{Count}}", 3, "-H", "Trace:t{{Count}}")
    publish(cli, "orders.paid", "p{{Count}}", 2)
    got = cli("stream", "get", "ORDERS", "2", "--json").json()
    assert got == {
        "subject": "orders.new",
        "seq": 2,
        "time": got["time"],
        "headers": {"Trace": ["t2"]},
        "data": "n2",
    }
    assert cli("stream", "get", "ORDERS", "--last-for", "orders.new", "--json").json()["seq"] == 3
    assert cli("stream", "get", "ORDERS", "1", "--raw").ok().out == "n1\n"
    assert "Item: ORDERS#4" in cli("stream", "get", "ORDERS", "4").ok().out
    cli("stream", "get", "ORDERS", "99").fails("err_code=10037", rc=1)

    cli("stream", "rmm", "ORDERS", "2").fails("--force")
    assert cli("stream", "rmm", "ORDERS", "2", "-f", "--json").json() == {
        "stream": "ORDERS",
        "seq": 2,
        "deleted": True,
    }
    cli("stream", "rmm", "ORDERS", "3", "--erase", "-f").ok()
    cli("stream", "get", "ORDERS", "2").fails("err_code=10037")
    info = cli("stream", "info", "ORDERS", "--deleted", "--json").json()
    assert info["state"]["messages"] == 3 and sorted(info["state"]["deleted"]) == [2, 3]

    assert cli("stream", "purge", "ORDERS", "--subject", "orders.paid", "-f", "--json").json()["purged"] == 2
    publish(cli, "orders.new", "more", 4)
    assert cli("stream", "purge", "ORDERS", "--keep", "2", "-f", "--json").json()["purged"] == 3
    assert "Purged 2 messages" in cli("stream", "purge", "ORDERS", "-f").ok().out
    cli("stream", "purge", "ORDERS", "--seq", "3", "--keep", "1", "-f").fails("cannot be combined", rc=2)
    cli("stream", "purge", "ORDERS").fails("--force")


def test_view(cli: Cli) -> None:
    add_orders(cli)
    assert "No messages in stream ORDERS" in cli("stream", "view", "ORDERS").ok().out
    publish(cli, "orders.new", "n{{Count}}", 3)
    publish(cli, "orders.paid", "p{{Count}}", 2)
    rows = cli("stream", "view", "ORDERS", "--json").json_lines()
    assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["data"] for r in rows] == ["n1", "n2", "n3", "p1", "p2"]
    assert [r["seq"] for r in cli("stream", "view", "ORDERS", "--id", "4", "--json").json_lines()] == [4, 5]
    paid = cli("stream", "view", "ORDERS", "--subject", "orders.paid", "--json").json_lines()
    assert [r["data"] for r in paid] == ["p1", "p2"]
    assert len(cli("stream", "view", "ORDERS", "--count", "2", "--json").json_lines()) == 2
    assert cli("stream", "view", "ORDERS", "--since", "1h", "--raw").ok().out.split() == [
        "n1",
        "n2",
        "n3",
        "p1",
        "p2",
    ]
    text = cli("stream", "view", "ORDERS", "--count", "1").ok().out
    assert "[1] Subject: orders.new" in text
    cli("stream", "view", "NOPE").fails("stream not found")


def test_rm(cli: Cli) -> None:
    add_orders(cli)
    cli("stream", "rm", "ORDERS").fails("refusing without confirmation", rc=2)
    assert cli("stream", "rm", "ORDERS", "-f", "--json").json() == {"stream": "ORDERS", "deleted": True}
    cli("stream", "rm", "ORDERS", "-f").fails("stream not found", rc=1)
    assert "No Streams defined" in cli("stream", "ls").ok().out


def test_add_asks_for_missing_values_at_a_terminal(cli: Cli) -> None:
    """At a terminal, `stream add` asks for the name and settings (Enter takes the default)."""
    answers = "PROMPTED\np.*\n" + "\n" * 13
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyjetstream", "stream", "add", "--json"],
        stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=cli.env(), close_fds=True,
    )  # fmt: skip
    os.close(slave)
    os.write(master, answers.encode())
    output = b""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                output += os.read(master, 65536)
            except OSError:
                break
    proc.wait(timeout=30)
    os.close(master)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0, (output, err)
    assert "? Stream Name" in err and "? Subjects" in err and "? Retention Policy" in err
    cfg = cli("stream", "info", "PROMPTED", "--json").json()["config"]
    assert cfg["subjects"] == ["p.*"] and cfg["storage"] == "file" and cfg["max_msgs"] == -1
    assert cfg["duplicate_window"] == 120 * 10**9
