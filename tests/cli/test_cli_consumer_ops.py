"""``consumer pause | resume | unpin | reset`` and the priority-group flags of ``consumer add``, with the
nats CLI's verbs and flags, against both targets."""

from __future__ import annotations

from tests.cli.conftest import Cli
from tests.cli.test_cli_consumer import setup_stream


def test_pause_and_resume(cli: Cli) -> None:
    setup_stream(cli, 3)
    cli("consumer", "add", "ORDERS", "C", "--pull", "--defaults").ok()
    cli("consumer", "pause", "ORDERS", "C", "1h").fails("--force")  # no terminal to confirm at
    out = cli("consumer", "pause", "ORDERS", "C", "1h", "-f").ok().out
    assert "Paused ORDERS > C until" in out
    info = cli("consumer", "info", "ORDERS", "C", "--json").json()
    assert info["paused"] is True and info["pause_remaining"] > 3500 * 10**9
    assert "Paused" in cli("consumer", "info", "ORDERS", "C").ok().out
    # while paused, nothing is delivered
    cli("consumer", "next", "ORDERS", "C", "--wait", "1s").fails("no message")
    resumed = cli("consumer", "resume", "ORDERS", "C", "-f", "--json").json()
    assert resumed["paused"] is False
    cli("consumer", "resume", "ORDERS", "C", "-f").fails("is not paused")
    cli("consumer", "next", "ORDERS", "C", "--count", "3").ok()
    cli("consumer", "pause", "ORDERS", "C", "soon", "-f").fails("invalid until", rc=2)
    cli("consumer", "pause", "ORDERS", "NOPE", "1h", "-f").fails("consumer not found")


def test_add_with_pause_and_priority_flags(cli: Cli) -> None:
    setup_stream(cli, 1)
    cfg = cli(
        "consumer", "add", "ORDERS", "PIN", "--pull", "--defaults",
        "--pinned-groups", "jobs", "--pinned-ttl", "30s", "--pause", "2h", "--json",
    ).json()["config"]  # fmt: skip
    assert cfg["priority_groups"] == ["jobs"] and cfg["priority_policy"] == "pinned_client"
    assert cfg["priority_timeout"] == 30 * 10**9
    assert cfg["pause_until"] > "2000"
    cfg = cli(
        "consumer", "add", "ORDERS", "OVER", "--pull", "--defaults", "--overflow-groups", "a", "--json"
    ).json()["config"]
    assert cfg["priority_groups"] == ["a"] and cfg["priority_policy"] == "overflow"
    cli(
        "consumer", "add", "ORDERS", "X", "--pull", "--defaults", "--overflow-groups", "a", "--pinned-groups", "b"
    ).fails("give one of")


def test_unpin(cli: Cli) -> None:
    setup_stream(cli, 2)
    cli("consumer", "add", "ORDERS", "PIN", "--pull", "--defaults", "--pinned-groups", "jobs").ok()
    cli("consumer", "add", "ORDERS", "PLAIN", "--pull", "--defaults").ok()
    cli("consumer", "unpin", "ORDERS", "PLAIN", "jobs", "-f").fails("not a pinned client")
    cli("consumer", "unpin", "ORDERS", "PIN", "other", "-f").fails("no priority group")
    out = cli("consumer", "unpin", "ORDERS", "PIN", "-f").ok().out  # the only group
    assert "Unpinned client of group jobs" in out


def test_reset(cli: Cli) -> None:
    setup_stream(cli, 5)
    cli("consumer", "add", "ORDERS", "C", "--pull", "--defaults").ok()
    cli("consumer", "next", "ORDERS", "C", "--count", "5").ok()
    assert cli("consumer", "info", "ORDERS", "C", "--json").json()["num_pending"] == 0
    out = cli("consumer", "reset", "ORDERS", "C", "3", "-f").ok().out
    assert "stream sequence 3" in out
    info = cli("consumer", "info", "ORDERS", "C", "--json").json()
    assert info["num_pending"] == 3
    got = cli("consumer", "next", "ORDERS", "C", "--json").json_lines()
    assert got[0]["seq"] == 3
    # without a sequence: back to the ack floor (3 is acked, so 4 and 5 come again)
    out = cli("consumer", "reset", "ORDERS", "C", "-f").ok().out
    assert "stream sequence 4" in out
    assert cli("consumer", "info", "ORDERS", "C", "--json").json()["num_pending"] == 2
