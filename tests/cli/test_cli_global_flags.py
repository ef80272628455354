"""Global options anywhere on the line, as the nats CLI takes them (issue 26, item 3).

Every verb, generated from the parsers (:mod:`pyjetstream.cli.registry`, so a new verb is covered
without touching this file), is parsed with every global option before the verb, between its
group and itself, and after its arguments, through the real dispatch (``main``), stopping just
before the handler would run. Then real runs against both targets, with ``NATS_URL`` pointing at a
dead port, so that a global option that was not taken would show as a connection failure.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from tests.cli.conftest import Cli

from pyjetstream.cli import app, main
from pyjetstream.cli.registry import Verb, verbs

URL = "nats://127.0.0.1:1"
GLOBALS = [
    "-s", URL, "--context", "somewhere", "--creds", "u.creds", "--user", "bob", "--password", "pw",
    "--token", "tok", "--nkey", "u.nk", "--tlscert", "c.pem", "--tlskey", "k.pem", "--tlsca", "ca.pem",
    "--timeout", "3s", "--js-domain", "hub", "--js-api-prefix", "$X", "--inbox-prefix", "_IN",
    "--json", "--trace",
]  # fmt: skip
EXPECTED = {
    "server": URL, "context": "somewhere", "creds": "u.creds", "user": "bob", "password": "pw",
    "token": "tok", "nkey": "u.nk", "tlscert": "c.pem", "tlskey": "k.pem", "tlsca": "ca.pem",
    "timeout": "3s", "js_domain": "hub", "js_api_prefix": "$X", "inbox_prefix": "_IN",
    "json": True, "trace": True,
}  # fmt: skip
ALL_VERBS = list(verbs())


def _positionals(verb: Verb) -> list[str]:
    """A value for each argument the verb requires, positional or a required option (``1`` for
    numbers, the first choice)."""
    parser = verb.command.parser("x")
    values = []
    for action in parser._actions:
        if action.option_strings and not action.required:
            continue
        if not action.option_strings and action.nargs in ("?", "*", argparse.REMAINDER):
            continue
        if action.choices:
            value = str(next(iter(action.choices)))
        else:
            value = "1" if action.type in (int, float) else "X"
        values += [action.option_strings[-1], value] if action.option_strings else [value]
    return values


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, argparse.Namespace]]:
    """What reached ``execute``, instead of running it."""
    seen: list[tuple[str, argparse.Namespace]] = []

    def capture(command: app.Command, args: argparse.Namespace) -> int:
        seen.append((command.name, args))
        return 0

    monkeypatch.setattr(app, "execute", capture)
    return seen


def test_every_verb_is_covered() -> None:
    names = {" ".join(v.path) for v in ALL_VERBS}
    # The ones the issue names, and the nested server verbs: the walk reaches them.
    for verb in ("stream ls", "kv get", "sub", "pub", "server info", "bench js-pub", "context add",
                 "server list", "server report jetstream", "server check stream", "server request variables"):  # fmt: skip
        assert verb in names
    assert len(ALL_VERBS) >= 80


@pytest.mark.parametrize("verb", ALL_VERBS, ids=lambda v: " ".join(v.path))
def test_global_options_before_between_and_after_every_verb(
    verb: Verb, parsed: list[tuple[str, argparse.Namespace]]
) -> None:
    pos = _positionals(verb)
    lines = [
        [*GLOBALS, *verb.path, *pos],  # before the verb: pyjetstream -s URL stream ls
        [*verb.path, *pos, *GLOBALS],  # after its arguments
    ]
    if len(verb.path) > 1:
        lines.append([verb.path[0], *GLOBALS, *verb.path[1:], *pos])  # between the group and the verb
        half = len(GLOBALS) // 2 - len(GLOBALS) // 2 % 2  # whole option/value pairs on each side
        lines.append([*GLOBALS[:half], *verb.path, *pos, *GLOBALS[half:]])  # split around it
    for line in lines:
        parsed.clear()
        assert main.main(line) == 0, line
        (name, args), *_ = parsed
        assert name == verb.command.name
        got = {key: getattr(args, key) for key in EXPECTED}
        assert got == EXPECTED, line


def test_option_forms_and_mistakes(
    parsed: list[tuple[str, argparse.Namespace]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["--server=nats://h:1", "-snats://h:2", "-j", "stream", "ls"]) == 0
    assert parsed[-1][1].server == "nats://h:2" and parsed[-1][1].json
    assert main.main(["--bogus", "stream", "ls"]) == 2
    assert "unknown option '--bogus'" in capsys.readouterr().err
    assert main.main(["-s"]) == 2
    assert "needs a value" in capsys.readouterr().err
    assert main.main(["-s", URL, "serve"]) == 2
    assert "serve takes nats-server's flags" in capsys.readouterr().err
    assert main.main(["-s", URL, "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'nosuch'" in err and "usage:" not in err  # one line, not the whole help


# --------------------------------------------------------------------------- real runs, both targets


def _dead_env(cli: Cli, **extra: str) -> dict[str, str]:
    """NATS_URL at a closed port: only a global option that was taken reaches the server."""
    return cli.env(NATS_URL=URL, **extra)


def test_server_before_and_after_the_verb(cli: Cli) -> None:
    env = _dead_env(cli)
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults", "-s", cli.url, env=env).ok()
    for line in (
        ["-s", cli.url, "stream", "ls", "--names"],
        ["stream", "-s", cli.url, "ls", "--names"],
        ["stream", "ls", "--names", "-s", cli.url],
        ["--server", cli.url, "--timeout", "5s", "stream", "ls", "--names"],
    ):
        assert cli(*line, env=env).ok().out.split() == ["ORDERS"], line
    infos = cli("--json", "-s", cli.url, "stream", "ls", env=env).json()
    assert [i["config"]["name"] for i in infos] == ["ORDERS"]
    cli("stream", "ls", env=env).fails("could not connect to nats://127.0.0.1:1", rc=1)


def test_context_before_the_verb(cli: Cli) -> None:
    """``pyjetstream --context local kv get settings color`` (the issue's example). No NATS_URL:
    like a flag, it would win over the context (as in the nats CLI)."""
    env = {k: v for k, v in cli.env().items() if k != "NATS_URL"}
    cli("context", "add", "local", "--server", cli.url, env=env).ok()
    cli("--context", "local", "kv", "add", "settings", env=env).ok()
    cli("--context", "local", "kv", "put", "settings", "color", "blue", env=env).ok()
    assert cli("--context", "local", "kv", "get", "settings", "color", "--raw", env=env).ok().out == "blue\n"
    assert "blue" in cli("kv", "--context", "local", "get", "settings", "color", env=env).ok().out


def test_pub_sub_with_globals_first(cli: Cli) -> None:
    env = _dead_env(cli)
    sub = cli.spawn("-s", cli.url, "--json", "sub", "greet", "--count", "1", ready="Subscribing", env=env)
    cli("-s", cli.url, "pub", "greet", "hello", env=env).ok()
    (msg,) = sub.finish().ok().json_lines()
    assert msg["data"] == "hello"


def test_trace_prints_api_requests(cli: Cli, tmp_path: Path) -> None:
    cli("stream", "add", "T", "--subjects", "t", "--defaults").ok()
    result = cli("--trace", "stream", "info", "T").ok()
    assert ">>> $JS.API.STREAM.INFO.T" in result.err
    assert "<<< $JS.API.STREAM.INFO.T" in result.err
    assert '"name":"T"' in result.err.replace(" ", "")
    assert "Information for Stream T" in result.out
