"""``kv`` with 2.11+ TTLs (``--marker-ttl``, ``create --ttl``, ``purge --ttl``) and server-filtered
``ls`` / ``watch`` on several keys, as the nats CLI, against both targets."""

from __future__ import annotations

import time

from tests.cli.conftest import Cli


def test_kv_marker_ttl_and_key_ttl(cli: Cli) -> None:
    status = cli("kv", "add", "T", "--marker-ttl", "5s", "--history", "5", "--json").json()
    assert status["limit_marker_ttl"] == 5 * 10**9
    info = status["stream_info"]["config"]
    assert info["allow_msg_ttl"] is True and info["subject_delete_marker_ttl"] == 5 * 10**9
    assert "Limit Marker TTL" in cli("kv", "info", "T").ok().out

    cli("kv", "create", "T", "short", "v", "--ttl", "1s").ok()
    cli("kv", "create", "T", "long", "v", "--ttl", "1h").ok()
    deadline = time.monotonic() + 30
    while cli("kv", "ls", "T", "--json").json() != ["long"]:
        assert time.monotonic() < deadline, "the 1 s key never expired"
        time.sleep(0.2)
    cli("kv", "purge", "T", "long", "-f", "--ttl", "1h").ok()
    cli("kv", "create", "T", "x", "v", "--ttl", "soon").fails("invalid --ttl", rc=2)


def test_kv_filtered_ls_and_watch(cli: Cli) -> None:
    cli("kv", "add", "F").ok()
    for key in ("a.1", "a.2", "b.1", "c.1"):
        cli("kv", "put", "F", key, key).ok()
    assert cli("kv", "ls", "F", "a.*", "c.1", "--json").json() == ["a.1", "a.2", "c.1"]
    watch = cli.spawn("kv", "watch", "F", "b.*", "c.*", "--count", "2", "--json", ready="Watching bucket F")
    got = watch.finish().ok().json_lines()
    assert sorted(e["key"] for e in got) == ["b.1", "c.1"]
