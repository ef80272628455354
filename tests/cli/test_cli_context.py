"""``context add | select | ls | info | rm`` write the nats CLI's own context files, then the other
verbs use them (against both targets)."""

from __future__ import annotations

import json
import stat

from tests.cli.conftest import Cli


def test_context_add_select_use_and_remove(cli: Cli) -> None:
    env = cli.env()
    del env["NATS_URL"]
    ctx_dir = cli.home / "nats" / "context"

    cli("context", "add", "local", "--server", cli.url, "--description", "the test server", env=env).ok()
    saved = json.loads((ctx_dir / "local.json").read_text())
    # natscontext's keys, so `nats` reads what we write
    assert saved["url"] == cli.url
    assert saved["description"] == "the test server"
    assert {"token", "user", "password", "creds", "nkey", "cert", "key", "ca", "jetstream_domain"} <= set(saved)
    assert stat.S_IMODE((ctx_dir / "local.json").stat().st_mode) == 0o600
    assert not (cli.home / "nats" / "context.txt").exists()  # add does not select without --select

    cli("context", "add", "other", "--server", "nats://127.0.0.1:1", "--select", env=env).ok()
    assert (cli.home / "nats" / "context.txt").read_text() == "other"
    cli("server", "ping", "--count", "1", env=env).fails("could not connect")

    cli("context", "select", "local", env=env).ok()
    cli("server", "ping", "--count", "1", env=env).ok()
    cli("context", "select", "missing", env=env).fails("unknown context")

    listed = cli("context", "ls", env=env).ok().out
    assert "local*" in listed and "other" in listed and "the test server" in listed
    assert cli("context", "ls", "--json", env=env).json() == ["local", "other"]

    info = cli("context", "info", env=env).ok().out  # the selected one
    assert cli.url in info and "the test server" in info
    assert cli("context", "info", "other", "--json", env=env).json()["url"] == "nats://127.0.0.1:1"

    cli("context", "rm", "local", "-f", env=env).fails("cannot remove the current active context")
    cli("context", "rm", "other", env=env).fails("--force")  # no terminal to confirm at
    cli("context", "rm", "other", "-f", env=env).ok()
    assert not (ctx_dir / "other.json").exists()
    cli("context", "rm", "other", "-f", env=env).fails("unknown context")
    cli("context", "add", "../escape", "--server", cli.url, env=env).fails("invalid context name")


def test_context_with_credentials(cli: Cli, start_server) -> None:  # type: ignore[no-untyped-def]
    secured = start_server(authorization={"user": "alice", "password": "s3cret"})
    env = cli.env()
    del env["NATS_URL"]
    cli(
        "context", "add", "sec", "--server", secured.url, "--user", "alice", "--password", "s3cret", "--select",
        env=env,
    ).ok()
    cli("server", "ping", "--count", "1", env=env).ok()
    shown = cli("context", "info", "sec", env=env).ok().out
    assert "s3cret" not in shown  # secrets are masked in the readable view
