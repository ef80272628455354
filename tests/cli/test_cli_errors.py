"""Errors a user understands (issue 26, item 8), on both targets: the cause first (the value, the
file, the server that refused), never a Python repr or a Go struct name, exit 1 (the server or the
system refused) or 2 (the command line is wrong); and ``--config FILE`` as the nats CLI reads it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli, Result


def _clean(result: Result) -> str:
    """The one error line, checked for what must never show."""
    err = result.err.strip()
    assert err.startswith("pyjetstream: error: "), result.describe()
    assert len(err.splitlines()) == 1, result.describe()
    for leak in ("Error(", "Go struct", "Traceback", "StreamConfigRequest", "int64", "errno"):
        assert leak not in err, result.describe()
    return err


def test_connection_refused_names_the_server(cli: Cli) -> None:
    err = _clean(cli("stream", "ls", "-s", "nats://127.0.0.1:1").fails(rc=1))
    assert err == (
        "pyjetstream: error: could not connect to nats://127.0.0.1:1: connection refused "
        "(is a server listening there?)"
    )
    err = _clean(cli("pub", "x", "y", "-s", "nats://no-such-host.invalid:4222").fails(rc=1))
    assert err.startswith("pyjetstream: error: could not connect to nats://no-such-host.invalid:4222: unknown host")


def test_sequence_zero_is_a_usage_error(cli: Cli) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    cli("pub", "orders.a", "x", "-J").ok()
    err = _clean(cli("stream", "get", "ORDERS", "0").fails(rc=2))
    assert err == "pyjetstream: error: invalid sequence 0: stream sequences start at 1"
    _clean(cli("stream", "rmm", "ORDERS", "0", "-f").fails("stream sequences start at 1", rc=2))
    err = _clean(cli("stream", "get", "ORDERS", "7").fails(rc=1))
    assert err.startswith("pyjetstream: error: stream ORDERS has no message with sequence 7 (")
    assert "Empty Request" not in err


def test_values_out_of_range_name_the_flag(cli: Cli) -> None:
    err = _clean(cli("stream", "add", "S", "--subjects", "s", "--defaults", "--max-bytes", "999999999999999999999999").fails(rc=2))
    assert err.startswith("pyjetstream: error: invalid --max-bytes '999999999999999999999999': too large")
    err = _clean(cli("stream", "add", "S", "--subjects", "s", "--defaults", "--max-msgs", "99999999999999999999").fails(rc=2))
    assert err.startswith("pyjetstream: error: invalid --max-msgs '99999999999999999999': out of range")
    err = _clean(cli("stream", "add", "S", "--subjects", "s", "--defaults", "--max-age", "999999999d").fails(rc=2))
    assert "invalid --max-age '999999999d': too long" in err
    err = _clean(
        cli("stream", "add", "S", "--subjects", "s", "--defaults", "--first-sequence", "99999999999999999999999").fails(rc=2)
    )
    assert "first_seq: 99999999999999999999999 does not fit an unsigned 64-bit integer" in err
    cli("stream", "ls", "--names").ok()
    assert "S" not in cli("stream", "ls", "--names").out.split()


def test_server_json_errors_lose_their_go_names() -> None:
    """What nats-server answers to a number that does not fit (``json: cannot unmarshal number …
    into Go struct field StreamConfigRequest.max_bytes of type int64``), in words."""
    from pyjetstream.cli.errors import go_json_error

    text = "invalid JSON: json: cannot unmarshal number 999999999999999999999999 into Go struct field StreamConfigRequest.max_bytes of type int64"
    assert go_json_error(text) == "max_bytes: 999999999999999999999999 does not fit a 64-bit integer"
    text = "invalid JSON: json: cannot unmarshal string into Go struct field ConsumerConfig.config.ack_wait of type time.Duration"
    assert go_json_error(text) == "config.ack_wait: expected a duration in nanoseconds, got a string"
    assert go_json_error("stream not found") == "stream not found"


# --------------------------------------------------------------------------- --config FILE


def test_stream_add_config_takes_the_name_from_the_file(cli: Cli, tmp_path: Path) -> None:
    cfg = tmp_path / "orders.json"
    cfg.write_text(json.dumps({"name": "FROMFILE", "subjects": ["ff.>"], "storage": "memory", "max_msgs": 5}))
    info = cli("stream", "add", "--config", str(cfg), "--json").json()
    assert (info["config"]["name"], info["config"]["subjects"], info["config"]["max_msgs"]) == ("FROMFILE", ["ff.>"], 5)
    # A name on the command line wins (nats CLI), and so does a flag over the file.
    info = cli("stream", "add", "OTHER", "--config", str(cfg), "--subjects", "oth.>", "--json").json()
    assert (info["config"]["name"], info["config"]["subjects"]) == ("OTHER", ["oth.>"])
    # What `stream info --json` printed is a config file too.
    saved = tmp_path / "info.json"
    saved.write_text(cli("stream", "info", "FROMFILE", "--json").out)
    cli("stream", "rm", "FROMFILE", "-f").ok()
    assert cli("stream", "add", "--config", str(saved), "--json").json()["config"]["name"] == "FROMFILE"
    nameless = tmp_path / "nameless.json"
    nameless.write_text(json.dumps({"subjects": ["x"]}))
    _clean(cli("stream", "add", "--config", str(nameless)).fails("has no stream name", rc=2))


def test_config_unknown_keys_are_refused_in_nats_servers_words(cli: Cli, tmp_path: Path) -> None:
    """The issue's typo: ``"subjectz"`` created a stream with subjects ["CFG"] and no error."""
    unk = tmp_path / "unk.json"
    unk.write_text(json.dumps({"name": "CFG", "subjectz": ["a.>"]}))
    err = _clean(cli("stream", "add", "CFG", "--config", str(unk)).fails(rc=2))
    assert err == f'pyjetstream: error: --config {unk}: invalid JSON: json: unknown field "subjectz"'
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"name": "CFG", "subjects": ["a"], "sources": [{"nmae": "X"}]}))
    _clean(cli("stream", "add", "--config", str(nested)).fails('unknown field "nmae"', rc=2))
    big = tmp_path / "big.json"
    big.write_text('{"name": "CFG", "subjects": ["a"], "max_bytes": 999999999999999999999999}')
    _clean(cli("stream", "add", "--config", str(big)).fails("max_bytes: 999999999999999999999999 does not fit", rc=2))
    typed = tmp_path / "typed.json"
    typed.write_text(json.dumps({"name": "CFG", "subjects": ["a"], "max_bytes": "lots"}))
    _clean(cli("stream", "add", "--config", str(typed)).fails("max_bytes: expected a whole number, got a string", rc=2))
    assert "CFG" not in cli("stream", "ls", "--names").out.split()
    # The server refuses the same key with the same words.
    import asyncio

    from pyjetstream.client import connect

    async def raw() -> str:
        nc = await connect(cli.url)
        try:
            reply = await nc.request("$JS.API.STREAM.CREATE.CFG", unk.read_bytes(), timeout=10)
            return str(json.loads(reply.data)["error"]["description"])
        finally:
            await nc.close()

    assert asyncio.run(raw()) == 'invalid JSON: json: unknown field "subjectz"'


def test_consumer_add_config_takes_the_name_from_the_file(cli: Cli, tmp_path: Path) -> None:
    cli("stream", "add", "S", "--subjects", "s.>", "--defaults").ok()
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"durable_name": "WORKER", "ack_policy": "explicit", "deliver_policy": "all"}))
    info = cli("consumer", "add", "S", "--config", str(cfg), "--json").json()
    assert info["name"] == "WORKER" and info["config"]["durable_name"] == "WORKER"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"durable_name": "W2", "ack_polcy": "explicit"}))
    _clean(cli("consumer", "add", "S", "--config", str(bad)).fails('invalid JSON: json: unknown field "ack_polcy"', rc=2))


def test_bad_connection_settings_are_usage_errors(cli: Cli, tmp_path: Path) -> None:
    """Before any connection: the URL the client cannot read, a file that is not there — named."""
    err = _clean(cli("pub", "x", "y", "-s", "http://h:1").fails(rc=2))
    assert err == (
        "pyjetstream: error: invalid --server: unsupported URL scheme 'http' in 'http://h:1' "
        "(use nats://, tls://, ws:// or wss://)"
    )
    missing = tmp_path / "nope.pem"
    err = _clean(cli("stream", "ls", "--tlsca", str(missing)).fails(rc=2))
    assert err == f"pyjetstream: error: {missing}: no such file (given as --tlsca, its variable or the context)"
    _clean(cli("stream", "ls", "--creds", str(tmp_path / "u.creds")).fails("u.creds: no such file", rc=2))
    _clean(cli("stream", "add", "--config", str(tmp_path / "c.json")).fails("no such file or directory", rc=2))
