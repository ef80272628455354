"""The NATS config-file parser and its mapping to ServerOptions.

Besides direct checks, two differential tests run the real nats-server on the same
files: ``nats-server -t`` must agree with us on validity (and on where errors are),
and the values nats-server reports on ``/varz`` must be the ones we parse.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.targets import nats_server_binary

from pyjetstream.cli.serve_args import ConfigChecked, UsageError, parse_serve_args
from pyjetstream.server.conf import (
    ConfigError,
    config_to_options,
    load_config,
    parse,
    parse_duration,
    parse_file,
)
from pyjetstream.server.options import (
    AccountExport,
    AccountJetStreamLimits,
    Permissions,
    ResponsePermission,
    ServerOptions,
    SubjectPermission,
)

DATA = Path(__file__).parent / "data"
NATS_SERVER = nats_server_binary()
needs_nats_server = pytest.mark.skipif(NATS_SERVER is None, reason="nats-server is not installed")


def options(text: str, tmp_path: Path, **kwargs: Any) -> ServerOptions:
    path = tmp_path / "t.conf"
    path.write_text(text)
    return load_config(str(path), environ=kwargs.pop("environ", {}), **kwargs)


def error_of(text: str, tmp_path: Path, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        options(text, tmp_path, **kwargs)
    return str(info.value)


# =============================================================================
# syntax
# =============================================================================


@pytest.mark.parametrize(
    "text",
    [
        "port: 4222\n",
        "port = 4222\n",
        "port 4222\n",
        "port:4222",
        "port=4222;",
        "  port :  4222  # comment\n",
        "port: 4222 // comment\n",
        '"port": 4222\n',
        "'port' = 4222\n",
        '{ "port": 4222 }\n',
        "{\n  port: 4222,\n}\n",
        "port\n  4222\n",  # like nats-server, any space may separate a key from its value
    ],
)
def test_key_value_spellings(text: str) -> None:
    assert parse(text) == {"port": 4222}


def test_separators_comments_and_nesting() -> None:
    text = """
    # hash comment
    // slash comment
    a: 1; b: 2, c: 3
    m {
      x: 1, y = 2; z 3   # trailing comment
      // comment line inside a map
      inner { deep: [1, 2,
        3, # comment in an array
        // another
        {k: v}
      ] }
    }
    e1: {}
    e2: []
    """
    assert parse(text) == {
        "a": 1,
        "b": 2,
        "c": 3,
        "m": {"x": 1, "y": 2, "z": 3, "inner": {"deep": [1, 2, 3, {"k": "v"}]}},
        "e1": {},
        "e2": [],
    }


def test_arrays_separated_by_newlines_and_trailing_comma() -> None:
    assert parse('a: [\n  "x"\n  "y",\n  z,\n]\n') == {"a": ["x", "y", "z"]}


def test_keys_and_unquoted_strings_end_as_in_nats_servers_lexer() -> None:
    """lexKey runs to a space or a separator only; lexString ends at a single quote, drops it and
    makes the value a string (``true'`` is "true", ``$X'`` is "$X")."""
    assert parse("m{a: 1}\n") == {"m{a": 1}
    assert parse("m { a: 1 }\n") == {"m": {"a": 1}}
    assert parse("a: abc'\nb: true'\nc: $X'\nd: [x', y]\n", environ={"X": "1"}) == {
        "a": "abc",
        "b": "true",
        "c": "$X",
        "d": ["x", "y"],
    }
    with pytest.raises(ConfigError, match=r"Expected a top-level value to end .* but got 'c' instead"):
        parse("a: ab'cd\n")


def test_map_values_may_start_on_a_later_line_as_in_nats_server() -> None:
    """lexMapValue skips every space after a map key, new lines too (lexValue, at the top level,
    does not); a ',' where the value should be is its "Unexpected map value terminator"."""
    assert parse("m {\n  a:\n\n    1\n}\n") == {"m": {"a": 1}}
    assert parse("m { ,a: 1 }\n") == {"m": {",a": 1}}
    with pytest.raises(ConfigError, match="Expected value but found new line"):
        parse("a:\n  1\n")
    with pytest.raises(ConfigError, match=r't\.conf:1:7: Unexpected map value terminator ","\.'):
        parse("m { a: , }\n", filename="t.conf")


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1k", 1000),
        ("1K", 1000),
        ("1kb", 1024),
        ("1KB", 1024),
        ("1ki", 1024),
        ("1KiB", 1024),
        ("2m", 2_000_000),
        ("2MB", 2 * 1024**2),
        ("2mib", 2 * 1024**2),
        ("3g", 3_000_000_000),
        ("3GB", 3 * 1024**3),
        ("3Gi", 3 * 1024**3),
        ("1t", 10**12),
        ("1TB", 1024**4),
        ("1p", 10**15),
        ("1PiB", 1024**5),
        ("1e", 10**18),
        ("-2k", -2000),
        ("-1", -1),
        ("0", 0),
        ("007", 7),
    ],
)
def test_integers_and_size_suffixes(raw: str, value: int) -> None:
    assert parse(f"v: {raw}\n") == {"v": value}
    assert parse(f"v: [{raw} ]\n") == {"v": [value]}  # "[7]": see test_digits_then_bracket
    assert parse(f"v: {{a: {raw}}}\n") == {"v": {"a": value}}


def test_digits_then_bracket_as_nats_servers_lexer() -> None:
    """nats-server's number lexer ends a number at a space, newline, ',', ';' or '}' only: digits
    followed by ']' start an unquoted string that takes the ']' (the array stays open), and a
    size ``1k]`` is the string "1k" (the ']' then closes the array)."""
    assert parse("v: [1k]\n") == {"v": ["1k"]}
    assert parse("v: [-1kb]\n") == {"v": ["-1kb"]}
    assert parse("v: [a, 1]]\n") == {"v": ["a", "1]"]}
    assert parse("v: 1]\n") == {"v": "1]"}
    assert parse("v: [1.5]\n") == {"v": [1.5]}
    assert parse("v: [-1]\n") == {"v": [-1]}
    with pytest.raises(ConfigError, match="Unexpected EOF processing array"):
        parse("v: [1]\n")


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1.5", 1.5),
        ("-0.25", -0.25),
        ("127.0.0.1", "127.0.0.1"),  # a second dot makes an address
        ("127.0.0.1:4222", "127.0.0.1:4222"),
        ("10s", "10s"),  # letters after a number: a string (a duration)
        ("1h30m", "1h30m"),
        ("1m30s", "1m30s"),
        ("1_000", "1_000"),
        ("4222abc", "4222abc"),
        ("localhost:4222", "localhost:4222"),
        ("nats://a:b@host:4222", "nats://a:b@host:4222"),
        ("foo#bar", "foo#bar"),  # '#' only starts a comment after a space
        ("a\\tb", "a\tb"),  # escapes work in unquoted strings too
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("on", True),
        ("false", False),
        ("No", False),
        ("off", False),
        ('"true"', "true"),
        ("'on'", "on"),
        ("2020-01-02T03:04:05Z", datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_scalar_values(raw: str, value: Any) -> None:
    assert parse(f"v: {raw}\n") == {"v": value}


def test_strings_quotes_escapes_and_blocks() -> None:
    text = r"""
    dq: "tab\there \"quoted\" back\\slash \x41\x42 new\nline"
    sq: 'raw \t not escaped "ok"'
    uni: "héllo ✓"
    bytes: "\xc3\xa9"
    block: (
line one
  line two
)
    after: 1
    """
    assert parse(text) == {
        "dq": 'tab\there "quoted" back\\slash AB new\nline',
        "sq": 'raw \\t not escaped "ok"',
        "uni": "héllo ✓",
        "bytes": "é",
        "block": "\nline one\n  line two",
        "after": 1,
    }


def test_later_keys_override_earlier() -> None:
    assert parse("port: 1\nport: 2\n") == {"port": 2}


# ------------------------------------------------------------------ variables


def test_variables_block_scoping() -> None:
    text = """
    a = 1
    b { a = 2, c = $a, d { e = $a } }
    f = $a
    arr = [$a, {g: $a}]
    """
    assert parse(text) == {
        "a": 1,
        "b": {"a": 2, "c": 2, "d": {"e": 2}},
        "f": 1,
        "arr": [1, {"g": 1}],
    }


def test_variables_keep_their_type_and_structure() -> None:
    text = "m = {x: [1, 2 ]}\ncopy: $m\nsize = 1KB\nn: $size\n"
    assert parse(text) == {"m": {"x": [1, 2]}, "copy": {"x": [1, 2]}, "size": 1024, "n": 1024}


def test_environment_variables_are_parsed_as_values() -> None:
    env = {"PORT": "4333", "NAME": "hub", "JS": "true", "SIZE": "2MB", "LIST": "[a, b]", "REF": "$PORT"}
    text = "port: $PORT\nname: $NAME\njs: $JS\nsize: $SIZE\nlist: $LIST\nref: $REF\n"
    assert parse(text, environ=env) == {
        "port": 4333,
        "name": "hub",
        "js": True,
        "size": 2 * 1024**2,
        "list": ["a", "b"],
        "ref": 4333,
    }


def test_file_variables_shadow_the_environment() -> None:
    assert parse("PORT = 1\nport: $PORT\n", environ={"PORT": "2"})["port"] == 1


def test_unquoted_bcrypt_hashes_are_not_variables() -> None:
    hashed = "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG"
    assert parse(f"password: {hashed}\n", environ={}) == {"password": hashed}
    # nats-server's bcryptPrefix is "2a$" alone: another prefix is a variable, as there
    with pytest.raises(ConfigError, match=r"variable reference for '2b\$04\$abc' on line 1 can not be found"):
        parse("t: $2b$04$abc\n", environ={})


def test_missing_variable_error_names_it_and_its_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse("port: 1\nhost: $NOPE\n", filename="x.conf", environ={})
    assert str(info.value) == "x.conf:2:7: variable reference for 'NOPE' on line 2 can not be found"


def test_self_referencing_environment_variable_is_not_found() -> None:
    with pytest.raises(ConfigError) as info:
        parse("v: $LOOP\n", environ={"LOOP": "$LOOP"})
    assert str(info.value).endswith(  # nats-server's words
        "variable reference for 'LOOP' on line 1 could not be parsed: "
        "variable reference for 'LOOP' on line 1 could not be parsed: variable reference cycle for 'LOOP'"
    )


def test_unparseable_environment_variable() -> None:
    with pytest.raises(ConfigError) as info:
        parse("v: $BAD\n", environ={"BAD": '"unterminated'})
    assert str(info.value).endswith(  # nats-server's words
        "variable reference for 'BAD' on line 1 could not be parsed: Parse error on line 1: 'Unexpected EOF.'"
    )


# -------------------------------------------------------------------- include


def test_includes_are_relative_to_the_including_file() -> None:
    assert parse_file(str(DATA / "include" / "main.conf"), environ={}) == {
        "port": 4444,
        "PASS": "from-include",
        "authorization": {"user": "alice", "password": "from-include"},
        "jetstream": {"max_mem": 256 * 1024**2, "domain": "leaf"},
    }


def test_included_variable_definitions_are_not_unknown_keys() -> None:
    opts = load_config(str(DATA / "include" / "main.conf"), environ={})
    assert (opts.port, opts.username, opts.password) == (4444, "alice", "from-include")
    assert (opts.jetstream, opts.max_memory_store, opts.jetstream_domain) == (True, 256 * 1024**2, "leaf")
    assert opts.warnings == []


def test_include_cycle_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"cycle_b\.conf:1:0: include cycle"):
        parse_file(str(DATA / "include" / "cycle_a.conf"))


def test_missing_include_reports_the_include_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_file(str(DATA / "include" / "missing.conf"))
    assert str(info.value).startswith(
        f"{DATA / 'include' / 'missing.conf'}:3:1: error parsing include file './nothere.conf'"
    )


def test_include_with_absolute_path_is_relative_as_in_nats_server(tmp_path: Path) -> None:
    """nats-server joins every include path to the including file's directory (Go's
    filepath.Join keeps no absolute path absolute), and -t refuses the file when that is not there."""
    (tmp_path / "abs.conf").write_text("port: 9\n")
    main = tmp_path / "sub" / "main.conf"
    main.parent.mkdir()
    main.write_text(f'include "{tmp_path / "abs.conf"}"\n')
    with pytest.raises(ConfigError) as info:
        parse_file(str(main))
    inside = f"{main.parent}{tmp_path / 'abs.conf'}"
    assert str(info.value) == (
        f"{main}:1:0: error parsing include file '{tmp_path / 'abs.conf'}', open {inside}: no such file or directory"
    )
    (main.parent / str(tmp_path / "abs.conf").lstrip("/")).parent.mkdir(parents=True)
    (main.parent / str(tmp_path / "abs.conf").lstrip("/")).write_text("port: 10\n")
    assert parse_file(str(main)) == {"port": 10}


def test_include_keyword_needs_a_space() -> None:
    assert parse("include: 5\n") == {"include": 5}


# --------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a {\n b: 1\n", "t.conf:3:1: Unexpected EOF processing map."),
        ('x: "abc\n', "t.conf:2:1: Unexpected EOF."),
        ("x: [1, 2\n", "t.conf:2:1: Unexpected EOF processing array."),
        (
            "x: [a b]\n",
            't.conf:1:6: Expected an array value terminator "," or an array terminator "]", '
            "but got 'b' instead.",
        ),
        ("x: [1,,2]\n", "t.conf:1:6: Unexpected array value terminator ','."),
        (
            "x: 1 2\n",
            "t.conf:1:5: Expected a top-level value to end with a new line, comment or EOF, "
            "but got '2' instead.",
        ),
        (
            "m { a: 1 b: 2 }\n",
            't.conf:1:9: Expected a map value terminator "," or a map terminator "}", '
            "but got 'b' instead.",
        ),
        ("x:\n  1\n", "t.conf:1:2: Expected value but found new line"),
        (
            'x: "a\\qb"\n',
            "t.conf:1:5: Invalid escape character 'q'. Only the following escape characters are "
            'allowed: \\xXX, \\t, \\n, \\r, \\", \\\\.',
        ),
        ('x: "\\xZZ"\n', "t.conf:1:4: Expected two hexadecimal digits after '\\x', but got 'ZZ'"),
        ("x: .5\n", "t.conf:1:3: Floats must start with a digit"),
        ("x: 1.\n", "t.conf:1:5: Floats must have a digit after the '.', but got '\\n' instead."),
        ("x: -a\n", "t.conf:1:4: Expected a digit but got 'a'."),
        ("x: 12-01\n", "t.conf:1:5: All ISO8601 dates must be in full Zulu form."),
        ("x: 2020-01-02X\n", "t.conf:1:13: Expected 'T' in ISO8601 datetime, but found 'X' instead."),
        (
            "x: 2020-13-02T00:00:00Z\n",
            "t.conf:1:3: expected Zulu formatted DateTime, but got '2020-13-02T00:00:00Z'",
        ),
        ("x: 1kbb\n", "t.conf:1:3: invalid size suffix in '1kbb'"),
        ("x: 99999999999999999999\n", "t.conf:1:3: integer '99999999999999999999' is out of the range"),
        ("x: 10000000E\n", "t.conf:1:3: integer '10000000E' is out of the range"),
        ("= 1\n", "t.conf:1:0: Unexpected key separator '='"),
        ("x: (\nnever closed\n", "t.conf:3:1: Unexpected EOF processing block."),
        ("port\n", "t.conf:1:0: key 'port' has no value"),
        ("m { = 1 }\n", "t.conf:1:4: Unexpected key separator '='."),
        ("include [x]\n", "t.conf:1:8: Expected include value but found start of an array"),
    ],
)
def test_syntax_errors_have_file_line_and_column(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(text, filename="t.conf", environ={})
    assert str(info.value) == expected
    issue = info.value.issues[0]
    assert f"{issue.file}:{issue.line}:{issue.col}: {issue.message}" == expected


def test_syntax_error_in_a_fixture_file() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(str(DATA / "bad_syntax.conf"))
    assert str(info.value) == f"{DATA / 'bad_syntax.conf'}:6:1: Unexpected EOF processing map."


def test_missing_file() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("/nonexistent/nope.conf")
    assert str(info.value) == "open /nonexistent/nope.conf: no such file or directory"  # nats-server's words


# ----------------------------------------------------------------- properties

_keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda k: k != "include")
_scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.tuples(st.integers(-999, 999), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]:03d}"),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=12,
)


# A float literal as the NATS config lexer takes one: digits on both sides of the point (".0" and
# "0." are refused: "Floats must start with a digit" / "must have a digit after the '.'").
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+")


def _render(value: Any, sep: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and _FLOAT.fullmatch(value):
        return value  # a float literal
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch in "\t\n\r":
                out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch])
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\x{ord(ch):02x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, list):
        # nats-server's number lexer does not end at ']' ("1]" starts an unquoted string), so a
        # plain integer last in an array needs a space before the ']'.
        last_int = bool(value) and isinstance(value[-1], int) and not isinstance(value[-1], bool)
        return "[" + ", ".join(_render(v, sep) for v in value) + (" ]" if last_int else "]")
    return "{" + "\n".join(f"{k}{sep}{_render(v, sep)}" for k, v in value.items()) + "}"


def _expected(value: Any) -> Any:
    if isinstance(value, str) and _FLOAT.fullmatch(value):
        return float(value)
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    return value


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6), st.sampled_from([": ", " = ", " ", ":"]))
def test_rendered_values_parse_back(doc: dict[str, Any], sep: str) -> None:
    text = "\n".join(f"{k}{sep}{_render(v, sep)}" for k, v in doc.items()) + "\n"
    assert parse(text, environ={}) == _expected(doc)


# =============================================================================
# Go durations
# =============================================================================


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("10s", 10.0),
        ("2m", 120.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("100ns", 1e-7),
        ("-1.5s", -1.5),
        ("+3s", 3.0),
        ("1h2m3s4ms", 3723.004),
        (".5s", 0.5),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("x", 'time: invalid duration "x"'),
        ("10", 'time: missing unit in duration "10"'),
        ("10x", 'time: unknown unit "x" in duration "10x"'),
        ("1.s.", 'time: invalid duration "1.s."'),
    ],
)
def test_parse_duration_errors_are_gos(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == message


# =============================================================================
# semantics
# =============================================================================


def test_full_configuration_maps_every_key() -> None:
    o = load_config(str(DATA / "full.conf"), environ={})
    assert o.config_file == str(DATA / "full.conf")
    assert (o.server_name, o.host, o.port, o.client_advertise) == (
        "hub-1",
        "127.0.0.1",
        4333,
        "nats.example.com:4333",
    )
    assert (o.http_host, o.http_port, o.https_port, o.http_base_path) == ("127.0.0.1", 8333, 8334, "/monitor")
    # JetStream
    assert o.jetstream is True
    assert o.store_dir == "/var/lib/pyjetstream"
    assert o.jetstream_dir == "/var/lib/pyjetstream/jetstream"
    assert o.max_memory_store == 1_000_000_000
    assert o.max_file_store == 10 * 1024**3
    assert o.jetstream_domain == "hub"
    assert o.sync_always is True
    assert (o.jetstream_max_buffered_size, o.jetstream_max_buffered_msgs) == (64 * 1024**2, 5000)
    limits = o.jetstream_limits
    assert (limits.max_ack_pending, limits.max_ha_assets, limits.max_request_batch) == (10000, 10, 250)
    assert limits.duplicate_window == 300.0
    # limits and timers
    assert (o.max_payload, o.max_control_line, o.max_pending) == (2 * 1024**2, 8192, 128 * 1024**2)
    assert (o.max_connections, o.max_subscriptions, o.max_sub_tokens) == (1000, 5000, 16)
    assert (o.ping_interval, o.ping_max, o.write_deadline) == (30.0, 5, 5.0)
    assert (o.lame_duck_duration, o.lame_duck_grace_period) == (45.0, 5.0)
    assert o.disable_short_first_ping is True
    assert o.no_header_support is False
    # auth
    assert o.auth_timeout == 3.0
    assert o.no_auth_user == "guest"
    assert o.system_account == "SYS"
    deny_secret = Permissions(subscribe=SubjectPermission(deny=["secret.>"]))
    assert o.default_permissions == deny_secret
    by_name = {u.username: u for u in o.users}
    assert list(by_name) == ["admin", "app", "guest", "sys", "svc"]
    admin, app, guest = by_name["admin"], by_name["app"], by_name["guest"]
    assert admin.password == "s3cret"
    assert admin.permissions == Permissions(
        publish=SubjectPermission(allow=[">"]), subscribe=SubjectPermission(allow=[">"])
    )
    assert app.password.startswith("$2a$04$")
    assert app.password_matches("apppass") and not app.password_matches("wrong")
    assert app.permissions == Permissions(
        publish=SubjectPermission(allow=["app.>"], deny=["app.secret"]),
        subscribe=SubjectPermission(allow=["app.>", "_INBOX.>", "jobs.* workers"]),
        response=ResponsePermission(max_msgs=5, expires=60.0),
    )
    assert guest.permissions == deny_secret  # default permissions fill in
    (nkey_user,) = o.nkeys
    assert nkey_user.nkey == "UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK"
    assert nkey_user.allowed_connection_types == ["STANDARD"]
    assert nkey_user.permissions == deny_secret
    # accounts
    sys_acc, app_acc = o.accounts
    assert (sys_acc.name, [u.username for u in sys_acc.users], sys_acc.jetstream) == ("SYS", ["sys"], False)
    assert by_name["svc"].account == "APP" and by_name["sys"].account == "SYS" and admin.account == ""
    assert app_acc.nkey == "AB43KVROR7TFJ6KAPCYRF2FJROTZAH4FHLTJLPWX4DRZCC5NASLGIFW3"
    assert app_acc.jetstream is True
    assert app_acc.jetstream_limits == AccountJetStreamLimits(
        max_memory=512_000_000, max_store=1_000_000_000, max_streams=10, max_consumers=100
    )
    assert (app_acc.limits.max_connections, app_acc.limits.max_payload) == (10, 1024**2)
    # logging and files
    assert (o.debug, o.trace, o.trace_verbose, o.logtime, o.logtime_utc) == (False, True, False, True, True)
    assert (o.logfile, o.log_size_limit, o.log_max_num) == ("/var/log/pyjetstream.log", 10 * 1024**2, 3)
    assert o.max_traced_msg_len == 128
    assert (o.pid_file, o.ports_file_dir) == ("/var/run/pyjetstream.pid", "/var/run")
    assert o.server_tags == ["region:eu", "tier:gold"]
    assert o.warnings == [] and o.unsupported == {}


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("port: 4333\n", "0.0.0.0", 4333),
        ("port: 0\n", "0.0.0.0", 4222),  # nats-server: 0 means the default port
        ("port: -1\n", "0.0.0.0", -1),
        ("host: 127.0.0.1\n", "127.0.0.1", 4222),
        ("net: ::1\n", "::1", 4222),
        ("listen: 4555\n", "0.0.0.0", 4555),
        ('listen: "10.0.0.1:4555"\n', "10.0.0.1", 4555),
        ("listen: 10.0.0.1:-1\n", "10.0.0.1", -1),
        ('listen: "[::1]:4555"\n', "::1", 4555),
        ('listen: ":4555"\n', "0.0.0.0", 4555),
        ("listen: localhost:4555\n", "localhost", 4555),
    ],
)
def test_client_listen_forms(text: str, host: str, port: int, tmp_path: Path) -> None:
    o = options(text, tmp_path)
    assert (o.host, o.port) == (host, port)


@pytest.mark.parametrize(
    ("text", "host", "port", "https"),
    [
        ("http: 8222\n", "", 8222, 0),
        ('http: "127.0.0.1:8222"\n', "127.0.0.1", 8222, 0),
        ("http_port: 8222\n", "", 8222, 0),
        ("monitor_port: -1\n", "", -1, 0),
        ('https: "0.0.0.0:8443"\n', "0.0.0.0", 0, 8443),
        ("https_port: 8443\n", "", 0, 8443),
    ],
)
def test_monitoring_listen_forms(text: str, host: str, port: int, https: int, tmp_path: Path) -> None:
    o = options(text, tmp_path)
    assert (o.http_host, o.http_port, o.https_port) == (host, port, https)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('listen: "foo"\n', 'could not parse address string "foo"'),
        ('listen: "a:b"\n', 'could not parse port "b"'),
        ("listen: true\n", "expected port or host:port, got bool"),
        ("port: 99999\n", "port 99999 is out of range"),
    ],
)
def test_listen_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        ("jetstream: true\n", True),
        ("jetstream: false\n", False),
        ("jetstream: enabled\n", True),
        ("jetstream: Enable\n", True),
        ("jetstream: disabled\n", False),
        ("jetstream {}\n", True),
        ("jetstream { enabled: false }\n", False),
        ("jetstream { enable: true, max_mem: 1M }\n", True),
    ],
)
def test_jetstream_switch(text: str, enabled: bool, tmp_path: Path) -> None:
    assert options(text, tmp_path).jetstream is enabled


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("1G", 1_000_000_000),
        ("1GB", 1024**3),
        ('"1G"', 1024**3),
        ('"512M"', 512 * 1024**2),
        ('"2T"', 2 * 1024**4),
        ('"64K"', 64 * 1024),
        ("-1", -1),
        ('""', 0),
    ],
)
def test_jetstream_storage_sizes(value: str, size: int, tmp_path: Path) -> None:
    o = options(f"jetstream {{ max_mem: {value}, max_file_store: {value} }}\n", tmp_path)
    assert (o.max_memory_store, o.max_file_store) == (size, size)


def test_jetstream_size_string_needs_a_unit(tmp_path: Path) -> None:
    message = error_of('jetstream { max_mem: "12X" }\n', tmp_path)
    assert message.endswith("t.conf:1:12: max_mem_store sizes defined as strings must end in K, M, G, T")


@pytest.mark.parametrize(
    ("text", "interval", "always"),
    [
        ("jetstream { sync_interval: always }\n", 120.0, True),
        ('jetstream { sync_interval: "Always" }\n', 120.0, True),
        ('jetstream { sync_interval: "30s" }\n', 30.0, False),
        ("jetstream { sync: 1m30s }\n", 90.0, False),
        ("jetstream {}\n", 120.0, False),
    ],
)
def test_jetstream_sync_interval(text: str, interval: float, always: bool, tmp_path: Path) -> None:
    o = options(text, tmp_path)
    assert (o.sync_interval, o.sync_always) == (interval, always)


def test_store_dir_at_top_level_and_duplicate(tmp_path: Path) -> None:
    assert options('store_dir: "/a"\njetstream: true\n', tmp_path).store_dir == "/a"
    message = error_of('jetstream { store_dir: "/a" }\nstore_dir: "/b"\n', tmp_path)
    assert message.endswith("t.conf:2:1: Duplicate 'store_dir' configuration")


def test_jetstream_encryption_is_refused(tmp_path: Path) -> None:
    message = error_of('jetstream { key: "s3cr3t", cipher: aes }\n', tmp_path)
    assert '"key": JetStream encryption at rest is not supported' in message
    assert '"cipher": JetStream encryption at rest is not supported' in message


def test_jetstream_cluster_only_settings_warn(tmp_path: Path) -> None:
    o = options('jetstream { unique_tag: "az:" }\n', tmp_path)
    assert o.warnings == [
        f'{tmp_path / "t.conf"}:1:12: "unique_tag" ignored: it only applies to clustered JetStream'
    ]


# ---------------------------------------------------------------- durations


def test_durations_as_strings(tmp_path: Path) -> None:
    o = options('ping_interval: "1m"\nwrite_deadline: 2s\nlame_duck_duration: "1h"\n', tmp_path)
    assert (o.ping_interval, o.write_deadline, o.lame_duck_duration) == (60.0, 2.0, 3600.0)
    assert o.warnings == []


def test_duration_as_number_is_seconds_with_warning(tmp_path: Path) -> None:
    o = options("ping_interval: 20\n", tmp_path)
    assert o.ping_interval == 20.0
    text = f'{tmp_path / "t.conf"}:1:0: invalid use of field "ping_interval": ping_interval should be converted to a duration'
    assert o.warnings == o.check_warnings == [text]


def test_unquoted_2m_is_two_million_seconds_as_in_nats_server(tmp_path: Path) -> None:
    o = options("write_deadline: 2m\n", tmp_path)
    assert o.write_deadline == 2_000_000.0
    assert 'the unquoted 2m is the number 2000000; write "2m"' in o.warnings[1]
    assert o.check_warnings == o.warnings[:1]  # -t prints nats-server's words alone


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('ping_interval: "soon"\n', 'error parsing ping_interval: time: invalid duration "soon"'),
        ('lame_duck_duration: "10s"\n', "invalid lame_duck_duration of 10s, minimum is 30 seconds"),
        ("lame_duck_duration: 60\n", "'lame_duck_duration' expected a duration string"),
        ('lame_duck_grace_period: "-1s"\n', "invalid lame_duck_grace_period, needs to be positive"),
    ],
)
def test_duration_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


# ------------------------------------------------------------------- limits


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_payload: 3GB\n", "t.conf:1:0: max_payload value is too big"),
        ("max_control_line: 1T\n", "t.conf:1:0: max_control_line value is too big"),
        ("max_sub_tokens: 300\n", "t.conf:1:0: max_sub_tokens value is too big"),
        ("max_sub_tokens: 0\n", "t.conf:1:0: max_sub_tokens value can not be negative"),
        ("max_payload: 100MB\n", "max_payload (104857600) cannot be higher than max_pending (67108864)"),
        ("ping_max: yes\n", "t.conf:1:0: 'ping_max' expected an integer, got boolean true"),
        ("server_name: 1.5\n", "t.conf:1:0: 'server_name' expected a string, got float 1.5"),
        ("debug: 1\n", "t.conf:1:0: 'debug' expected a boolean, got integer 1"),
        ("server_tags: [a, 1 ]\n", "t.conf:1:17: 'server_tags' expected a string, got integer 1"),
    ],
)
def test_limit_and_type_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


def test_max_payload_with_higher_max_pending(tmp_path: Path) -> None:
    o = options("max_payload: 8MB\nmax_pending: 64MB\n", tmp_path)
    assert (o.max_payload, o.max_pending) == (8 * 1024**2, 64 * 1024**2)


def test_trace_verbose_turns_trace_on(tmp_path: Path) -> None:
    o = options("trace_verbose: true\n", tmp_path)
    assert (o.trace, o.trace_verbose) == (True, True)


def test_key_names_are_case_insensitive(tmp_path: Path) -> None:
    o = options("PORT: 4333\nMax_Payload: 2KB\nJetStream { Store_Dir: /x }\n", tmp_path)
    assert (o.port, o.max_payload, o.jetstream, o.store_dir) == (4333, 2048, True, "/x")


# --------------------------------------------------------------------- auth


def test_single_user(tmp_path: Path) -> None:
    o = options("authorization { user: a, password: b, timeout: 0.5 }\n", tmp_path)
    assert (o.username, o.password, o.token, o.auth_timeout) == ("a", "b", "", 0.5)
    assert o.auth_required


def test_token_and_string_timeout(tmp_path: Path) -> None:
    o = options('authorization { token: "s3cr3t", timeout: "5s" }\n', tmp_path)
    assert (o.token, o.auth_timeout) == ("s3cr3t", 5.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "authorization { user: a, password: b, token: c }\n",
            "t.conf:1:0: Cannot have a user/pass and token",
        ),
        (
            "authorization { user: a, users: [{user: b, password: c}] }\n",
            "t.conf:1:0: Can not have a single user/pass and a users array",
        ),
        (
            "authorization { token: t, users: [{user: b, password: c}] }\n",
            "t.conf:1:0: Can not have a token and a users array",
        ),
        ("authorization { users: [{password: x}] }\n", "t.conf:1:24: User entry requires a user"),
        ("authorization { users: [{nkey: UBAD}] }\n", "t.conf:1:24: Not a valid public nkey for a user"),
        (
            "authorization { users: [{nkey: UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK, user: x}] }\n",
            "Nkey users do not take usernames or passwords",
        ),
        ("authorization { users: [5 ] }\n", "t.conf:1:24: Expected user entry to be a map/struct, got 5"),
        ("authorization { users: {user: a} }\n", "'users' expected an array, got map"),
        ("authorization { users: [{user: a, pwd: b}] }\n", 't.conf:1:34: unknown field "pwd"'),
        (
            'authorization { users: [{user: a, permissions: {publish: "a..b"}}] }\n',
            'subject "a..b" is not a valid subject',
        ),
        (
            "authorization { users: [{user: a, permissions: {pub: {allow: x, maybe: y}}}] }\n",
            'Unknown field name "maybe" parsing subject permissions, only \'allow\' or \'deny\' are permitted',
        ),
        (
            "authorization { users: [{user: a, allowed_connection_types: [FAX]}] }\n",
            'invalid connection types ["FAX"]',
        ),
        ("authorization { auth_callout { issuer: x } }\n", '"auth_callout": auth callout is not supported'),
        ("no_auth_user: bob\n", 'no_auth_user: "bob" present, but users/nkeys are not defined'),
        (
            "no_auth_user: bob\nauthorization { users: [{user: a, password: b}] }\n",
            'no_auth_user: "bob" not present as user or nkey in authorization block or account configuration',
        ),
    ],
)
def test_authorization_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


def test_permissions_forms(tmp_path: Path) -> None:
    text = """
    authorization {
      users: [
        {user: a, permissions: {pub: "a.>", sub: ["b.*", "q.> workers"]}}
        {user: b, permissions: {publish: {deny: ">"}, subscribe: {allow: "x", deny: ["x.y"]}}}
        {user: c, permissions: {allow_responses: true}}
        {user: d, permissions: {allow_responses: {max: 0, ttl: "0s"}}}
        {user: e, permissions: {publish: [x], allow_responses: false}}
      ]
    }
    """
    perms = {u.username: u.permissions for u in options(text, tmp_path).users}
    assert perms["a"] == Permissions(
        publish=SubjectPermission(allow=["a.>"]), subscribe=SubjectPermission(allow=["b.*", "q.> workers"])
    )
    assert perms["b"] == Permissions(
        publish=SubjectPermission(deny=[">"]), subscribe=SubjectPermission(allow=["x"], deny=["x.y"])
    )
    # Responses alone switch the blanket publish allow off; 0 keeps the defaults.
    assert perms["c"] == Permissions(publish=SubjectPermission(allow=[]), response=ResponsePermission())
    assert perms["d"] == Permissions(
        publish=SubjectPermission(allow=[]), response=ResponsePermission(max_msgs=1, expires=120.0)
    )
    assert perms["e"] == Permissions(publish=SubjectPermission(allow=["x"]))


def test_queue_subjects_only_allowed_for_subscribe(tmp_path: Path) -> None:
    text = 'authorization { users: [{user: a, permissions: {publish: "q.> workers"}}] }\n'
    assert 'subject "q.> workers" is not a valid subject' in error_of(text, tmp_path)


def test_accounts(tmp_path: Path) -> None:
    text = """
    accounts {
      A: { users: [{user: a, password: a}], jetstream: enabled }
      B: { users: [{user: b, password: b}], jetstream: {max_mem: 1G, max_streams: 3},
           default_permissions: {publish: "b.>"}, exports: [{stream: "x.>"}] }
      C: { jetstream: disabled }
    }
    """
    o = options(text, tmp_path)
    a, b, c = o.accounts
    assert (a.jetstream, a.jetstream_limits) == (True, AccountJetStreamLimits())
    assert b.jetstream_limits == AccountJetStreamLimits(max_memory=1_000_000_000, max_streams=3)
    assert (c.jetstream, c.jetstream_limits) == (False, None)
    assert [(u.username, u.account) for u in o.users] == [("a", "A"), ("b", "B")]
    assert o.users[1].permissions == Permissions(publish=SubjectPermission(allow=["b.>"]))
    assert b.exports == [AccountExport(kind="stream", subject="x.>")]
    assert b.unsupported == {} and o.warnings == []


def test_accounts_as_a_list(tmp_path: Path) -> None:
    assert [a.name for a in options("accounts: [A, B]\n", tmp_path).accounts] == ["A", "B"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("accounts { $G: {} }\n", '"$G" is a Reserved Account'),
        ("accounts: [A, A]\n", "Duplicate Account Entry: A"),
        (
            "accounts { A: {users: [{user: x, password: 1x}]}, B: {users: [{user: x, password: y}]} }\n",
            'Duplicate user "x" detected',
        ),
        ("accounts { A: 5 }\n", "Expected map entries for accounts"),
        (
            "accounts { A: { nkey: UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK } }\n",
            "Not a valid public nkey for an account",
        ),
        (
            'accounts { A: { jetstream: {max_mem: "1G"} } }\n',
            'Expected a parseable size for "max_mem", got 1G',
        ),
        ("accounts { A: { jetstream: sometimes } }\n", "Expected 'enabled' or 'disabled' for string value"),
    ],
)
def test_account_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


# ---------------------------------------------------------------------- TLS


def make_cert(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


@needs_openssl
def test_tls_block(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    text = f"""
    tls {{
      cert_file: "{cert}"
      key_file: "{key}"
      ca_file: "{cert}"
      verify: true
      timeout: 1.5
      cipher_suites: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]
      pinned_certs: ["{"AB" * 32}"]
      handshake_first: true
    }}
    """
    o = options(text, tmp_path)
    assert o.tls is not None
    assert (o.tls.cert_file, o.tls.key_file, o.tls.ca_file) == (str(cert), str(key), str(cert))
    assert (o.tls.verify, o.tls.timeout, o.tls.handshake_first) == (True, 1.5, True)
    assert o.tls.pinned_certs == ["ab" * 32]
    assert o.auth_timeout == 2.5  # nats-server: TLS timeout + 1 s unless set
    assert o.tls.server_context().verify_mode.name == "CERT_REQUIRED"


@needs_openssl
def test_tls_explicit_auth_timeout_wins(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    text = f'authorization {{ timeout: 7 }}\ntls {{ cert_file: "{cert}", key_file: "{key}" }}\n'
    o = options(text, tmp_path)
    assert (o.auth_timeout, o.tls is not None and o.tls.verify) == (7.0, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('tls { cert_file: "/x.pem" }\n', "missing 'key_file' in TLS configuration"),
        (
            'tls { cert_file: "/nonexistent.pem", key_file: "/nonexistent.key" }\n',
            "error parsing X509 certificate/key pair",
        ),
        ("tls { cert_file: 5 }\n", "error parsing tls config, expected 'cert_file' to be filename"),
        ("tls { verify: maybe }\n", "error parsing tls config, expected 'verify' to be a boolean"),
        ("tls { colour: blue }\n", 'error parsing tls config, unknown field "colour"'),
        ('tls { pinned_certs: ["abc"] }\n', "'pinned_certs' key abc does not look like hex-encoded sha256"),
        ("tls { cipher_suites: [] }\n", "error parsing tls config, 'cipher_suites' cannot be empty"),
    ],
)
def test_tls_errors(text: str, message: str, tmp_path: Path) -> None:
    assert message in error_of(text, tmp_path)


# ------------------------------------------------------- unknown and ignored


def test_unknown_fields_are_errors_with_positions(tmp_path: Path) -> None:
    text = "port: 1\nfrobnicate: true\njetstream {\n  storage: 1G\n}\n"
    path = tmp_path / "t.conf"
    with pytest.raises(ConfigError) as info:
        options(text, tmp_path)
    assert [str(i) for i in info.value.issues] == [
        f'{path}:2:1: unknown field "frobnicate"',
        f'{path}:4:3: unknown field "storage"',
    ]


def test_unknown_fields_warn_when_not_strict(tmp_path: Path) -> None:
    o = options("port: 1\nfrobnicate: true\n", tmp_path, strict=False)
    assert o.port == 1
    assert o.warnings == [f'{tmp_path / "t.conf"}:2:1: unknown field "frobnicate" ignored']


def test_unused_variable_definitions_are_unknown_fields(tmp_path: Path) -> None:
    assert 'unknown field "unused"' in error_of("unused = 5\nport: 1\n", tmp_path)
    assert options("used = 5\nport: $used\n", tmp_path).port == 5


def test_every_error_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(str(DATA / "bad_values.conf"))
    path = DATA / "bad_values.conf"
    assert [str(i) for i in info.value.issues] == [
        f"{path}:1:0: 'port' expected an integer, got string \"not-a-port\"",
        f"{path}:2:1: max_payload value is too big",
        f'{path}:3:1: error parsing ping_interval: time: invalid duration "soon"',
        f'{path}:4:13: unknown field "storage"',
        f'{path}:5:1: unknown field "frobnicate"',
    ]


def test_known_but_unsupported_keys_are_kept_with_a_warning(tmp_path: Path) -> None:
    text = 'cluster { name: c1, listen: "0.0.0.0:6222", routes: ["nats://a:6222"] }\nmqtt { port: 1883 }\n'
    o = options(text, tmp_path)
    assert o.unsupported == {
        "cluster": {"name": "c1", "listen": "0.0.0.0:6222", "routes": ["nats://a:6222"]},
        "mqtt": {"port": 1883},
    }
    assert [w.split(": ", 1)[1] for w in o.warnings] == [
        '"cluster" ignored: clustering (the embedded server is a single node) is not supported by pyjetstream',
        '"mqtt" ignored: MQTT is not supported by pyjetstream',
    ]


@pytest.mark.parametrize("key", ["trusted_keys", "resolver_tls"])
def test_unsupported_operator_mode_keys_are_refused(key: str, tmp_path: Path) -> None:
    message = error_of(f'{key}: "x"\n', tmp_path)
    assert f'"{key}": this part of operator/JWT mode is not supported by pyjetstream' in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('operator: "x"\n', "error parsing operator JWT"),
        ('resolver: "URL(http://x)"\n', "is not supported by pyjetstream"),
        ('resolver_preload: "x"\n', "preload should be a map of account_public_key:account_jwt"),
    ],
)
def test_operator_mode_errors(text: str, expected: str, tmp_path: Path) -> None:
    assert expected in error_of(text, tmp_path)


# ------------------------------------------------------- plain dicts, base


def test_config_to_options_from_a_plain_dict() -> None:
    o = config_to_options({"port": 4333, "jetstream": {"store_dir": "/d", "max_mem": "1G"}, "debug": True})
    assert (o.port, o.jetstream, o.store_dir, o.max_memory_store, o.debug) == (
        4333,
        True,
        "/d",
        1024**3,
        True,
    )
    with pytest.raises(ConfigError) as info:
        config_to_options({"port": "x", "nope": 1})
    assert [str(i) for i in info.value.issues] == [
        "'port' expected an integer, got string \"x\"",
        'unknown field "nope"',
    ]


def test_base_options_are_copied_not_changed() -> None:
    base = ServerOptions(server_name="base", port=1111)
    o = config_to_options({"port": 2222}, base=base)
    assert (o.server_name, o.port) == ("base", 2222)
    assert base.port == 1111


# =============================================================================
# differential: the real nats-server on the same files
# =============================================================================

# Snippets inside the 2.9.10 subset, where both servers must agree on validity.
AGREEMENT = [
    "port: 4222\n",
    # share on an import (a service's; a stream's is accepted and ignored), a boolean or a Go panic
    'accounts { A { exports [{service: "svc.>"}, {stream: "x"}] }, B { imports [{service: {account: A, subject: "svc.>"}, share: true}, {stream: {account: A, subject: "x"}, share: true}] } }\n',
    'accounts { A { exports [{service: "svc.>"}, {stream: "x"}] }, B { imports [{service: {account: A, subject: "svc.>"}, share: "yes"}, {stream: {account: A, subject: "x"}, share: true}] } }\n',
    'port = 4222; server_name = "a b"\n',
    'listen: "127.0.0.1:4333"\n',
    "listen: 127.0.0.1:4333\n",
    "listen: 4333\n",
    "http: 8222\n",
    'http: "localhost:8222"\n',
    "jetstream: enabled\n",
    'jetstream {max_mem: 1G, max_file: "10G", store_dir: "/tmp/x", domain: hub}\n',
    "authorization { user: a, password: b }\n",
    "authorization { token: $2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG }\n",
    "authorization { users: [{user: a, password: b}, {user: c, password: d}] }\n",
    'authorization { users: [{user: a, password: b, permissions: {publish: {allow: ["a.>"]}}}] }\n',
    "max_payload: 1MB\nmax_pending: 64MB\n",
    'ping_interval: "1m"\nwrite_deadline: "10s"\n',
    "x = 5\nmax_payload: $x\n",
    '{ "port": 4222, "server_name": "x" }\n',
    'server_tags: ["a", "b"]\n',
    'lame_duck_duration: "2m"\n',
    "accounts { A: { users: [{user: a, password: a}], jetstream: enabled } }\n",
    "no_auth_user: a\nauthorization { users: [{user: a, password: a}] }\n",
    "include ./other.conf\n",
    "foo_bar: 1\n",
    "jetstream { foo: 1 }\n",
    'port: "abc"\n',
    'listen: "foo"\n',
    "max_payload: 1T\n",
    'lame_duck_duration: "10s"\n',
    "authorization { user: a, password: b, token: c }\n",
    "authorization { user: a, users: [{user: b, password: c}] }\n",
    "jetstream: maybe\n",
    "a {\n b: 1\n",
    'x: "abc\n',
    "port: $NOPE_NOT_SET\n",
    "server_tags [a b]\n",
    'write_deadline: "x"\n',
    'jetstream {store_dir: "/a"}\nstore_dir: "/b"\n',
    "accounts { $G: { } }\n",
    "authorization { users: [ {password: x} ] }\n",
    "authorization { users: [{nkey: UBAD}] }\n",
    'tls { cert_file: "/nonexistent.pem", key_file: "/nonexistent.key" }\n',
    "max_sub_tokens: 300\n",
    "include ./missing.conf\n",
    # nats-server's lexer: "<digits>]" starts an unquoted string, "1k]" is the string "1k".
    "server_tags: [1]\n",
    "server_tags: [a, 1]]\n",
    "server_tags: [1k]\n",
    "server_tags: [a, -1kb]\n",
    "server_name: 1]\n",
    # nats-server's lexer: a key runs to a space or a separator ('{' is part of it), and a single
    # quote ends an unquoted string (dropped; the value is a string, not a boolean).
    "jetstream{max_mem: 1G}\n",
    "authorization{user: a, password: b}\n",
    "server_name: abc'\n",
    "server_name: ab'cd\n",
    "server_tags: [a', b]\n",
    "debug: true'\n",
    # In a map, a value may start on a later line than its key, and ',' or ';' start a key.
    "jetstream {\n  max_mem:\n    1G\n}\n",
    "jetstream { ,max_mem: 1G }\n",
    "jetstream {\n  max_mem: 1G,\n  ;\n}\n",
    "jetstream { max_mem: , }\n",
    "jetstream { 'max_mem', 1G }\n",
]


def nats_check(conf: Path) -> tuple[bool, str]:
    assert NATS_SERVER is not None
    done = subprocess.run([NATS_SERVER, "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30)
    return done.returncode == 0, done.stderr


def our_check(conf: Path) -> tuple[bool, str]:
    """``pyjetstream serve -t -c conf`` (in process): valid?, and its lines as nats-server's
    (``nats-server: `` on the first line only)."""
    try:
        parse_serve_args(["-t", "-c", str(conf)], prog="nats-server", environ={})
    except ConfigChecked as exc:
        return True, exc.message + "\n"
    except UsageError as exc:
        lines = [line.removeprefix("nats-server: ") for line in exc.message.splitlines()]
        return False, "nats-server: " + "\n".join(lines) + "\n"
    raise AssertionError("-t neither passed nor failed")


def _lines(out: str) -> list[str]:
    return [line.removeprefix("nats-server: ") for line in out.splitlines() if line.strip()]


@needs_nats_server
@pytest.mark.parametrize("text", AGREEMENT)
def test_validity_agrees_with_nats_server(text: str, tmp_path: Path) -> None:
    (tmp_path / "other.conf").write_text("server_name: other\n")
    conf = tmp_path / "t.conf"
    conf.write_text(text)
    nats_ok, nats_err = nats_check(conf)
    ours_ok, ours_err = our_check(conf)
    assert ours_ok == nats_ok, f"nats-server: {nats_err!r}, pyjetstream: {ours_err!r}"
    if nats_ok:  # "configuration file <f> is valid (sha256:<digest of the parsed file>)", the same
        assert ours_err == nats_err
    if not nats_ok and ":" in nats_err:
        # Same line as nats-server when it gives one ("<file>:<line>:<col>: ...").
        for line in nats_err.splitlines():
            if line.startswith(("nats-server: t.conf:", "t.conf:")):
                nats_line = line.split("t.conf:", 1)[1].split(":", 1)[0]
                assert f"t.conf:{nats_line}:" in ours_err


# The differences docs/server.md lists ("Where serve -t differs"): what nats-server 2.15.1 -t says
# (None: valid) and what we say, both checked, so that either side changing shows here.
DIFFERENCES = [
    ("m {\n", "Parse error on line 2: 'Unexpected EOF processing map.'", "t.conf:2:1: Unexpected EOF processing map."),
    (
        "port: 1\nhost: $NOPE\n",
        "variable reference for 'NOPE' on line 2 can not be found",
        "t.conf:2:7: variable reference for 'NOPE' on line 2 can not be found",
    ),
    (
        "debug: 1\n",
        "t.conf:1:0: interface conversion: interface {} is int64, not bool",
        "t.conf:1:0: 'debug' expected a boolean, got integer 1",
    ),
    ("port: 4222\nmax_payload: 1kbb\n", None, "t.conf:2:14: invalid size suffix in '1kbb'"),
    ("port: 4222\nping_max: 10000000E\n", None, "t.conf:2:11: integer '10000000E' is out of the range"),
    ("tls {}\n", None, "t.conf:1:0: missing 'cert_file' in TLS configuration"),
    (
        'jetstream { key: "s3cr3t" }\n',
        None,
        't.conf:1:12: "key": JetStream encryption at rest is not supported by pyjetstream',
    ),
    ("disable_short_first_ping: true\n", 't.conf:1:0: unknown field "disable_short_first_ping"', None),
]


@needs_nats_server
@pytest.mark.parametrize(("text", "theirs", "ours"), DIFFERENCES)
def test_deliberate_differences_from_nats_server(
    text: str, theirs: str | None, ours: str | None, tmp_path: Path
) -> None:
    conf = tmp_path / "t.conf"
    conf.write_text(text)
    said = {}
    for who, (ok, out) in (("nats-server", nats_check(conf)), ("pyjetstream", our_check(conf))):
        said[who] = None if ok else "\n".join(_lines(out.replace(f"{tmp_path}/", "")))
    assert said == {"nats-server": theirs, "pyjetstream": ours}


# Every place nats-server reads a duration or a timeout ("{v}": a value form; "{dir}": a store
# directory): a bare number is its parseDuration's "should be converted to a duration" (fatal
# for -t), an unquoted 2m is the number 2,000,000, a float or boolean is refused after the
# warning, an authorization timeout over 60 s is warned about, the websocket handshake takes
# whole seconds silently. The generated files cover that class: -t must agree, warning for
# warning, position for position.
DURATION_PLACES = [
    "ping_interval: {v}\n",
    "port: 4222\n  write_deadline: {v}\n",
    'jetstream {{ store_dir: "{dir}", sync_interval: {v} }}\n',
    'jetstream {{ store_dir: "{dir}", SYNC: {v} }}\n',
    "cluster {{ ping_interval: {v} }}\n",
    "cluster {{ write_deadline: {v} }}\n",
    "gateway {{ write_deadline: {v} }}\n",
    "leafnodes {{ reconnect_delay: {v} }}\n",
    "leaf {{ dial_timeout: {v} }}\n",
    'leafnodes {{ remotes: [ {{ url: "nats://127.0.0.1:7422", first_info_timeout: {v} }} ] }}\n',
    "mqtt {{ ackwait: {v} }}\n",
    "mqtt {{ consumer_inactive_threshold: {v} }}\n",
    "websocket {{ port: -1, no_tls: true, ping_interval: {v} }}\n",
    "websocket {{ port: -1, no_tls: true, handshake_timeout: {v} }}\n",
    "authorization {{ user: a, password: b, timeout: {v} }}\n",
    "cluster {{ authorization {{ user: a, password: b, timeout: {v} }} }}\n",
    "leafnodes {{ authorization {{ user: a, password: b, timeout: {v} }} }}\n",
    "lame_duck_duration: {v}\n",
]
DURATION_VALUES = ["20", "90", "2m", '"2m"', '"20s"', "1.5", "61.5", "true", '"soon"', "-3", "[ 1 ]"]


@needs_nats_server
@pytest.mark.parametrize("value", DURATION_VALUES)
@pytest.mark.parametrize("place", DURATION_PLACES)
def test_durations_as_nats_server_checks_them(place: str, value: str, tmp_path: Path) -> None:
    conf = tmp_path / "t.conf"
    conf.write_text(place.format(v=value, dir=tmp_path / "js"))
    nats_ok, nats_out = nats_check(conf)
    ours_ok, ours_out = our_check(conf)
    assert ours_ok == nats_ok, f"nats-server: {nats_out!r}, pyjetstream: {ours_out!r}"
    if nats_ok:
        return
    theirs, ours = _lines(nats_out), _lines(ours_out)
    # nats-server's lines word for word, in any order (it walks a Go map), except the text of a
    # Go type assertion that failed (where its recover() puts it): ours names the type instead.
    assert len(ours) == len(theirs), (theirs, ours)
    exact = [line for line in theirs if "interface conversion" not in line]
    assert sorted(exact) == sorted(line for line in ours if line in exact), (theirs, ours)


# Pieces of config text, put together at random inside a map or an array (where nats-server's
# lexer has the most states); the top level's garbage-at-EOF quirks are left out on purpose.
_PIECES = (
    "a", "b1", "port", " ", " ", ":", "=", "\n", "\n", ",", ";", "[", "]", "{", "}", "(", ")", "1", "-2",
    "1k", "2mb", "1.5", "0x1", "1e", "true", "no", '"s"', "'q'", '"a\\tb"', "#c", "//c", "$a", "$X",
    "2020-01-02T00:00:00Z", "1.2.3.4", "1:2", "-", ".", "x.y", "a-b", "include", "\t", "*", ">",
    "10.0.0.1:4222", "1m30s", "00", "-0", "1_0", "1kb]", "a]", "u.>", "&", "%", "@",
)
_PARSE_FAILED = (
    "Parse error", "config is invalid", "variable reference", "integer '", "expected Zulu", "float '",
    "expected boolean", "error parsing include",
)


@needs_nats_server
def test_random_blocks_lex_as_nats_server(tmp_path: Path) -> None:
    """Whether a text parses at all, as nats-server 2.15.1 -t says (a parse error, or anything else:
    an unknown field, a value nats-server refuses), for 150 texts of a fixed seed."""
    rnd = random.Random(20261128)
    conf = tmp_path / "t.conf"
    apart = []
    for _ in range(150):
        body = "".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 9)))
        text = f"m {{\n{body}\n}}\n" if rnd.random() < 0.5 else f"v: [{body}]\n"
        conf.write_text(text)
        done = subprocess.run(
            [NATS_SERVER, "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30, env={"X": "5"}
        )
        theirs = not any(p in done.stderr for p in _PARSE_FAILED)
        try:
            parse(text, environ={"X": "5"})
            ours = True
        except ConfigError:
            ours = False
        if ours != theirs:
            apart.append((text, done.stderr))
    assert apart == []


@needs_nats_server
def test_full_configuration_is_valid_for_nats_server(tmp_path: Path) -> None:
    text = "".join(
        line
        for line in (DATA / "full.conf").read_text().splitlines(keepends=True)
        if "pyjetstream's own" not in line
    )
    conf = tmp_path / "full.conf"
    conf.write_text(text)
    ok, out = nats_check(conf)
    # 2.15 appends the digest of the parsed configuration: "... is valid (sha256:<hex>)", ours too.
    assert ok and out.startswith(f"nats-server: configuration file {conf} is valid (sha256:"), out
    assert our_check(conf) == (ok, out)


@needs_nats_server
def test_values_match_nats_server_varz(tmp_path: Path) -> None:
    """Start nats-server on a config and compare what it reports with what we parse."""
    ports_dir = tmp_path / "ports"
    ports_dir.mkdir()
    conf = tmp_path / "varz.conf"
    conf.write_text(
        f"""
        server_name: varz-check
        host: 127.0.0.1
        port: -1
        http: "127.0.0.1:-1"
        ports_file_dir: "{ports_dir}"
        max_payload: 2MB
        max_pending: 100MB
        max_control_line: 8KB
        max_connections: 123
        ping_interval: "45s"
        ping_max: 4
        write_deadline: "7s"
        authorization {{ user: a, password: b, timeout: 3.5 }}
        jetstream {{ store_dir: "{tmp_path / "js"}", max_mem: 64MB, max_file: "1G", domain: dom }}
        """
    )
    ours = load_config(str(conf), environ={})
    varz = fetch_varz(conf, ports_dir)
    assert varz["server_name"] == ours.server_name
    assert varz["host"] == ours.host
    assert varz["max_payload"] == ours.max_payload
    assert varz["max_pending"] == ours.max_pending
    assert varz["max_control_line"] == ours.max_control_line
    assert varz["max_connections"] == ours.max_connections
    assert varz["ping_interval"] == int(ours.ping_interval * 1e9)
    assert varz["ping_max"] == ours.ping_max
    assert varz["write_deadline"] == int(ours.write_deadline * 1e9)
    assert varz["auth_timeout"] == ours.auth_timeout
    js = varz["jetstream"]["config"]
    assert js["max_memory"] == ours.max_memory_store
    assert js["max_storage"] == ours.max_file_store
    assert js["store_dir"] == ours.jetstream_dir
    assert js["domain"] == ours.jetstream_domain


def fetch_varz(conf: Path, ports_dir: Path) -> dict[str, Any]:
    assert NATS_SERVER is not None
    proc = subprocess.Popen([NATS_SERVER, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            files = list(ports_dir.glob("*.ports"))
            if files:
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    url = json.loads(files[0].read_text())["monitoring"][0]
                    with urllib.request.urlopen(f"{url}/varz", timeout=10) as response:
                        return json.load(response)
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        raise AssertionError("nats-server did not start")
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1.-$:=;,{}[]()\"'\\#/ \t\nkmx²٣")), max_size=40))
def test_any_text_parses_or_raises_config_error(text: str) -> None:
    try:
        result = parse(text, filename="fuzz.conf", environ={})
    except ConfigError as exc:
        assert exc.issues and all(i.file == "fuzz.conf" and i.line >= 1 for i in exc.issues)
    else:
        assert isinstance(result, dict)


_KNOWN_KEYS = (
    "port listen host server_name http https http_port jetstream store_dir max_mem max_file domain "
    "sync_interval limits authorization user password token users timeout permissions publish "
    "subscribe allow deny allow_responses max expires nkey accounts tls cert_file verify timeout "
    "max_payload ping_interval lame_duck_duration no_auth_user server_tags cluster operator "
    "default_permissions allowed_connection_types max_streams enabled max_sub_tokens exports"
).split()
_shapes = st.recursive(
    st.one_of(
        st.integers(-5, 2**40), st.booleans(), st.sampled_from(["", "x", "1G", "10s", "always", "a.>"])
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_KNOWN_KEYS), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KNOWN_KEYS), _shapes, max_size=5))
def test_any_shape_of_known_keys_maps_or_raises_config_error(config: dict[str, Any]) -> None:
    try:
        config_to_options(config)
    except ConfigError as exc:
        assert exc.issues


# Subject mappings: every error nats-server 2.15.1 -t gives, word for word and at its place.
MAPPINGS_CHECKED = [
    'mappings { "orders.new": "orders.created", "w.*": [{destination: "w.a.$1", weight: 60%}] }\n',
    'accounts { A { users: [{user: a, password: a}], maps { "a.*": "b.{{partition(3,1)}}.{{left(1,2)}}" } } }\n',
    'port: 4222\nmappings {\n  "a b": "x"\n  "c.*": "d.{{foo()}}"\n  "e": [\n     {destination: "f", weight: 200}\n  ]\n}\n',
    'mappings { "a.*": [{dest: "k.$1", weight: -1}] }\n',
    'mappings { "a.*": [{dest: "k.$1", weight: 1.5}] }\n',
    "mappings = 5\n",
    'mappings { "a.>": "b.*" }\n',
    'mappings { "a": "{{wildcard(1)}}" }\n',
    'mappings { "a.*": "x. y" }\n',
    'mappings { "a.*": "x..y" }\n',
    'mappings { "a.*": "x.>.y" }\n',
    'mappings { "a.*": [{destination: "b.$1", weight: 50, foo: 1}] }\n',
    'mappings { "a.*": [{destination: "b.$1", weight: 50}, {destination: "b.$1", weight: 10}] }\n',
    'mappings { "a.*": [{destination: "b.$1", weight: 50}, {destination: "c.$1", weight: 60}] }\n',
    'mappings { "a.*": 12 }\n',
    'mappings { "a.*": {destination: "b.$1", weight: "x%"} }\n',
    'mappings { "a.*": {destination: "b.$1", weight: true} }\n',
    'mappings { "a.*": "b.{{partition(3,1,2)}}" }\n',
    'mappings { "a.*": "b.{{split(1,a b)}}" }\n',
    'mappings { "a.*": "b.{{wildcard(1,2)}}" }\n',
    'mappings { "a.*": "b.{{random()}}" }\n',
    'accounts { A { mappings { "j.*": [{dest: "k.$1", weight: 40%}, {dest: "j.*", weight: 20%}] } } }\n',
]


@needs_nats_server
@pytest.mark.parametrize("text", MAPPINGS_CHECKED)
def test_mapping_errors_are_nats_servers(text: str, tmp_path: Path) -> None:
    conf = tmp_path / "t.conf"
    conf.write_text(text)
    nats_ok, nats_err = nats_check(conf)
    ours_ok, ours_err = our_check(conf)
    # (sorted: nats-server walks the block as a Go map, in no fixed order)
    assert (ours_ok, sorted(_lines(ours_err))) == (nats_ok, sorted(_lines(nats_err)))
