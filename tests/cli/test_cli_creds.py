"""The CLI with ``.creds`` files (operator mode), given by ``--creds``, ``NATS_CREDS`` or a nats context."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import Cli
from tests.support.operator import JS_UNLIMITED, Operator
from tests.support.targets import Target


def test_creds_flag_env_and_context(start_server: Callable[..., Target], tmp_path: Path) -> None:
    op = Operator(tmp_path / "nsc")
    op.account("A", JS_UNLIMITED)
    target = start_server(**op.settings())
    creds, _, _ = op.user("A", "alice")
    cli = Cli(target.url, tmp_path / "config")
    cli("server", "ping", "--count", "1").fails()  # no credentials: refused
    cli("stream", "add", "S", "--subjects", "s.>", "--defaults", "--creds", str(creds)).ok()
    cli("pub", "s.1", "hello", "--creds", str(creds)).ok()
    assert "hello" in cli("stream", "get", "S", "1", env=cli.env(NATS_CREDS=str(creds))).ok().out
    env = cli.env()
    del env["NATS_URL"]
    cli("context", "add", "op", "--server", target.url, "--creds", str(creds), "--select", env=env).ok()
    assert "S" in cli("stream", "ls", "--names", env=env).ok().out
