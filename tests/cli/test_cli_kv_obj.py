"""``kv``, ``obj`` and ``account`` commands against both targets, as subprocesses."""

from __future__ import annotations

import os

from tests.cli.conftest import Cli


def test_kv_bucket_lifecycle(cli: Cli) -> None:
    status = cli(
        "kv", "add", "CFG", "--history", "5", "--ttl", "1h", "--max-value-size", "1K",
        "--description", "settings", "--json",
    ).json()  # fmt: skip
    assert status["bucket"] == "CFG" and status["history"] == 5 and status["ttl"] == 3600 * 10**9
    assert status["stream_info"]["config"]["name"] == "KV_CFG"
    assert status["stream_info"]["config"]["max_msg_size"] == 1024
    assert "Bucket Name: CFG" in cli("kv", "status", "CFG").ok().out
    cli("kv", "add", "OTHER").ok()
    assert cli("kv", "ls", "--names", "--json").json() == ["CFG", "OTHER"]
    assert {b["bucket"] for b in cli("kv", "ls", "--json").json()} == {"CFG", "OTHER"}
    assert "Key-Value Buckets" in cli("kv", "ls").ok().out
    cli("kv", "add", "CFG", "--history", "2").fails("already", rc=1)
    cli("kv", "add", "BAD", "--history", "100").fails("--history", rc=2)
    cli("kv", "rm", "OTHER").fails("--force", rc=2)
    assert cli("kv", "rm", "OTHER", "-f", "--json").json() == {"bucket": "OTHER", "deleted": True}
    cli("kv", "status", "OTHER").fails("bucket not found", rc=1)
    cli("kv", "add", "bad.name").fails("invalid bucket name", rc=1)


def test_kv_keys(cli: Cli) -> None:
    cli("kv", "add", "CFG", "--history", "5").ok()
    assert cli("kv", "put", "CFG", "color", "red", "--json").json() == {
        "bucket": "CFG",
        "key": "color",
        "revision": 1,
    }
    assert cli("kv", "put", "CFG", "color", "--json", input=b"blue").json()["revision"] == 2
    assert cli("kv", "put", "CFG", "size", "L").ok().out == "L\n"
    got = cli("kv", "get", "CFG", "color", "--json").json()
    assert (got["key"], got["value"], got["revision"], got["operation"]) == ("color", "blue", 2, "PUT")
    assert cli("kv", "get", "CFG", "color", "--revision", "1", "--raw").ok().out == "red\n"
    assert "CFG > color revision: 2" in cli("kv", "get", "CFG", "color").ok().out

    cli("kv", "create", "CFG", "color", "green").fails("wrong last sequence", rc=1)
    assert cli("kv", "create", "CFG", "shape", "round", "--json").json()["revision"] == 4
    cli("kv", "update", "CFG", "color", "green", "1").fails("wrong last sequence: 2", rc=1)
    assert cli("kv", "update", "CFG", "color", "green", "2", "--json").json()["revision"] == 5
    assert cli("kv", "update", "CFG", "color", "--revision", "5", "teal", "--json").json()["revision"] == 6
    cli("kv", "update", "CFG", "color", "x").fails("revision", rc=2)

    assert sorted(cli("kv", "ls", "CFG", "--json").json()) == ["color", "shape", "size"]
    history = cli("kv", "history", "CFG", "color", "--json").json()
    assert [(h["revision"], h["value"]) for h in history] == [
        (1, "red"),
        (2, "blue"),
        (5, "green"),
        (6, "teal"),
    ]
    assert "History for CFG > color" in cli("kv", "history", "CFG", "color").ok().out

    cli("kv", "del", "CFG", "size").fails("--force", rc=2)
    assert cli("kv", "del", "CFG", "size", "-f", "--json").json() == {
        "bucket": "CFG",
        "key": "size",
        "deleted": True,
    }
    cli("kv", "get", "CFG", "size").fails("deleted", rc=1)
    assert cli("kv", "create", "CFG", "size", "M", "--json").json()["revision"] == 8  # create after delete
    cli("kv", "purge", "CFG", "color", "-f").ok()
    assert [h["operation"] for h in cli("kv", "history", "CFG", "color", "--json").json()] == ["PURGE"]
    cli("kv", "get", "CFG", "nothing").fails("key not found", rc=1)
    cli("kv", "put", "CFG", "bad key", "x").fails("invalid key", rc=1)
    cli("kv", "get", "NOPE", "k").fails("bucket not found", rc=1)


def test_kv_watch(cli: Cli) -> None:
    cli("kv", "add", "CFG").ok()
    cli("kv", "put", "CFG", "a", "1").ok()
    watch = cli.spawn("kv", "watch", "CFG", "--count", "3", "--json", ready="Watching bucket CFG")
    cli("kv", "put", "CFG", "b", "2").ok()
    cli("kv", "del", "CFG", "a", "-f").ok()
    entries = watch.finish().ok().json_lines()
    assert [(e["key"], e["operation"]) for e in entries] == [("a", "PUT"), ("b", "PUT"), ("a", "DEL")]
    assert entries[1]["value"] == "2"

    only = cli.spawn("kv", "watch", "CFG", "b", "--updates-only", "--count", "1", ready="Watching")
    cli("kv", "put", "CFG", "a", "ignored").ok()
    cli("kv", "put", "CFG", "b", "3").ok()
    out = only.finish().ok().out
    assert "PUT CFG > b: 3" in out and "ignored" not in out


def test_obj_bucket_and_objects(cli: Cli) -> None:
    status = cli("obj", "add", "FILES", "--description", "some files", "--json").json()
    assert status["bucket"] == "FILES" and status["stream_info"]["config"]["name"] == "OBJ_FILES"
    blob = os.urandom(300_000)
    src = cli.home / "blob.bin"
    src.write_bytes(blob)
    info = cli("obj", "put", "FILES", str(src), "--name", "blob.bin", "--json").json()
    assert info["name"] == "blob.bin" and info["size"] == 300_000 and info["chunks"] == 3
    assert info["digest"].startswith("SHA-256=")
    assert cli("obj", "put", "FILES", "--name", "note.txt", input=b"hello").ok()
    cli("obj", "put", "FILES", str(src), "--name", "blob.bin").fails("--force", rc=2)

    listed = {o["name"]: o for o in cli("obj", "ls", "FILES", "--json").json()}
    assert set(listed) == {"blob.bin", "note.txt"} and listed["note.txt"]["size"] == 5
    assert "Bucket Contents for FILES" in cli("obj", "ls", "FILES").ok().out
    assert cli("obj", "ls", "--names", "--json").json() == ["FILES"]
    assert cli("obj", "info", "FILES", "blob.bin", "--json").json()["digest"] == info["digest"]
    assert "Bucket Name: FILES" in cli("obj", "info", "FILES").ok().out

    out = cli.home / "copy.bin"
    got = cli("obj", "get", "FILES", "blob.bin", "--output", str(out), "--json").json()
    assert got["size"] == 300_000 and out.read_bytes() == blob
    cli("obj", "get", "FILES", "blob.bin", "--output", str(out)).fails("already exists", rc=1)
    assert cli("obj", "get", "FILES", "note.txt", "-O", "-").ok().out == "hello"
    cli("obj", "get", "FILES", "note.txt", cwd=cli.home).ok()  # default: its name, in the current directory
    assert (cli.home / "note.txt").read_bytes() == b"hello"
    cli("obj", "get", "FILES", "missing").fails("object not found", rc=1)

    cli("obj", "rm", "FILES", "note.txt", "-f").ok()
    assert [o["name"] for o in cli("obj", "ls", "FILES", "--json").json()] == ["blob.bin"]
    sealed = cli("obj", "seal", "FILES", "-f", "--json").json()
    assert sealed["sealed"] is True
    cli("obj", "put", "FILES", str(src), "--name", "again").fails("sealed", rc=1)
    cli("obj", "rm", "FILES", "-f").ok()
    cli("obj", "info", "FILES").fails("not found", rc=1)


def test_obj_watch(cli: Cli) -> None:
    cli("obj", "add", "W").ok()
    watch = cli.spawn(
        "obj", "watch", "W", "--updates-only", "--count", "2", "--json", ready="Watching bucket W"
    )
    cli("obj", "put", "W", "--name", "one", input=b"1").ok()
    cli("obj", "rm", "W", "one", "-f").ok()
    infos = watch.finish().ok().json_lines()
    assert [(i["name"], i.get("deleted", False)) for i in infos] == [("one", False), ("one", True)]


def test_account_info(cli: Cli) -> None:
    cli("stream", "add", "S", "--subjects", "s.>", "--defaults").ok()
    info = cli("account", "info", "--json").json()
    assert info["streams"] == 1 and info["consumers"] == 0
    assert info["limits"]["max_streams"] == -1 and info["api"]["total"] >= 1
    text = cli("account", "info").ok().out
    assert "Account Information" in text and "Streams: 1 of unlimited" in text
    cli("account", "info", "-s", "nats://127.0.0.1:1").fails("could not connect")


def test_jetstream_disabled_is_a_clear_error(cli: Cli, start_server) -> None:  # type: ignore[no-untyped-def]
    plain = start_server(jetstream=False)
    env = {**cli.env(), "NATS_URL": plain.url}
    cli("stream", "ls", env=env).fails("jetstream not enabled", rc=1)
    cli("kv", "get", "B", "k", env=env).fails("jetstream not enabled", rc=1)
    cli("pub", "-J", "x", "y", env=env).fails("no response", rc=1)
