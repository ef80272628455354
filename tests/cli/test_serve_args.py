"""``pyjetstream serve`` flags: nats-server's command line, spelled every way Go's flag package allows."""

from __future__ import annotations

import io
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.targets import nats_server_binary

from pyjetstream.cli.serve_args import (
    TLS_HELP,
    ConfigChecked,
    HelpRequested,
    ServeArgsExit,
    SignalRequested,
    UsageError,
    VersionRequested,
    parse_serve_args,
    usage,
)
from pyjetstream.server.options import ServerOptions

NATS_SERVER = nats_server_binary()
needs_nats_server = pytest.mark.skipif(NATS_SERVER is None, reason="nats-server is not installed")


def parse(*argv: str) -> ServerOptions:
    return parse_serve_args(list(argv), environ={})


def failure(*argv: str, prog: str = "pyjetstream") -> UsageError:
    with pytest.raises(UsageError) as info:
        parse_serve_args(list(argv), prog=prog, environ={})
    return info.value


# ------------------------------------------------------------------ spellings


def spellings(short: list[str], long: list[str], value: str | None) -> list[list[str]]:
    """Every way Go's flag package accepts: -f v, -f=v, --f v, --f=v (bools: -f, --f, -f=true)."""
    out = []
    for name in [*short, *long]:
        for dashes in ("-", "--"):
            if value is None:
                out += [[dashes + name], [f"{dashes}{name}=true"]]
            else:
                out += [[dashes + name, value], [f"{dashes}{name}={value}"]]
    return out


CASES: list[tuple[list[str], str, Any]] = [
    *[(a, "host", "127.0.0.2") for a in spellings(["a"], ["addr", "net"], "127.0.0.2")],
    *[(a, "port", 4333) for a in spellings(["p"], ["port"], "4333")],
    *[(a, "server_name", "hub") for a in spellings(["n"], ["name", "server_name"], "hub")],
    *[(a, "http_port", 8222) for a in spellings(["m"], ["http_port"], "8222")],
    *[(a, "https_port", 8443) for a in spellings(["ms"], ["https_port"], "8443")],
    *[(a, "jetstream", True) for a in spellings(["js"], ["jetstream"], None)],
    *[(a, "store_dir", "/data/js") for a in spellings(["sd"], ["store_dir"], "/data/js")],
    *[(a, "username", "u") for a in spellings([], ["user"], "u")],
    *[(a, "password", "p w") for a in spellings([], ["pass"], "p w")],
    *[(a, "token", "tok") for a in spellings([], ["auth"], "tok")],
    *[(a, "logfile", "/tmp/s.log") for a in spellings(["l"], ["log"], "/tmp/s.log")],
    *[(a, "pid_file", "/tmp/s.pid") for a in spellings(["P"], ["pid"], "/tmp/s.pid")],
    *[(a, "ports_file_dir", "/tmp/p") for a in spellings([], ["ports_file_dir"], "/tmp/p")],
    *[(a, "client_advertise", "h:1") for a in spellings([], ["client_advertise"], "h:1")],
    *[(a, "log_size_limit", 1000) for a in spellings([], ["log_size_limit"], "1000")],
    *[(a, "max_traced_msg_len", 64) for a in spellings([], ["max_traced_msg_len"], "64")],
    *[(a, "debug", True) for a in spellings(["D"], ["debug"], None)],
    *[(a, "trace", True) for a in spellings(["V"], ["trace"], None)],
    (["-T=false"], "logtime", False),
    (["--logtime=false"], "logtime", False),
    (["-T"], "logtime", True),
]


@pytest.mark.parametrize(
    ("argv", "attr", "value"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_flag_spellings(argv: list[str], attr: str, value: Any) -> None:
    assert getattr(parse(*argv), attr) == value


def test_the_test_harness_command_line(tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\njetstream: {{\n  store_dir: "{tmp_path / "store"}"\n}}\n')
    o = parse("-c", str(conf), "-a", "127.0.0.1", "--ports_file_dir", str(tmp_path / "ports"))
    assert (o.host, o.port, o.bind_port, o.jetstream) == ("127.0.0.1", -1, 0, True)
    assert (o.store_dir, o.ports_file_dir, o.config_file) == (
        str(tmp_path / "store"),
        str(tmp_path / "ports"),
        str(conf),
    )


def test_typical_nats_server_invocation() -> None:
    o = parse("-p", "-1", "-js", "-sd", "/tmp/x", "-m", "-1", "-DV")
    assert (o.port, o.jetstream, o.store_dir, o.http_port, o.debug, o.trace) == (
        -1,
        True,
        "/tmp/x",
        -1,
        True,
        True,
    )


def test_defaults_without_flags() -> None:
    assert parse() == ServerOptions()


def test_port_zero_means_the_default_port() -> None:
    assert parse("-p", "0").port == 4222


@pytest.mark.parametrize(
    ("argv", "debug", "trace", "verbose"),
    [
        (["-DV"], True, True, False),
        (["-VV"], False, True, True),
        (["-DVV"], True, True, True),
        (["-DV", "-DV=false"], False, False, False),
        (["-D", "-V=false"], True, False, False),
        (["--DVV"], True, True, True),
    ],
)
def test_combined_logging_flags(argv: list[str], debug: bool, trace: bool, verbose: bool) -> None:
    o = parse(*argv)
    assert (o.debug, o.trace, o.trace_verbose) == (debug, trace, verbose)


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_true_values(value: str) -> None:
    assert parse(f"-js={value}").jetstream is True


@pytest.mark.parametrize("value", ["0", "f", "F", "FALSE", "false", "False"])
def test_go_false_values(value: str) -> None:
    assert parse("-js", f"-js={value}").jetstream is False


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4333", 4333),
        ("+4333", 4333),
        ("0x10", 16),
        ("0X1f", 31),
        ("010", 8),
        ("0o17", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("-1", -1),
    ],
)
def test_go_integer_syntax(text: str, value: int) -> None:
    assert parse("-m", text).http_port == value


def test_last_occurrence_wins() -> None:
    assert parse("-p", "1", "--port=2", "-p", "3").port == 3


def test_double_dash_ends_flags() -> None:
    assert failure("-js", "--", "-p", "1").message == 'pyjetstream: unrecognized command: "-p"'


def test_boolean_flags_do_not_take_the_next_argument() -> None:
    assert failure("-js", "false").message == 'pyjetstream: unrecognized command: "false"'


def test_non_boolean_flags_take_the_next_argument_even_with_a_dash() -> None:
    assert parse("--user", "-js").username == "-js"


# --------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--foo"], "flag provided but not defined: -foo"),
        (["-foo=1"], "flag provided but not defined: -foo"),
        (["-max_payload", "1"], "flag provided but not defined: -max_payload"),
        (["-p"], "flag needs an argument: -p"),
        (["--store_dir"], "flag needs an argument: -store_dir"),
        (["-p", "abc"], 'invalid value "abc" for flag -p: parse error'),
        (["-p", "1.5"], 'invalid value "1.5" for flag -p: parse error'),
        (["-p", "_1"], 'invalid value "_1" for flag -p: parse error'),
        (
            ["-p", "99999999999999999999"],
            'invalid value "99999999999999999999" for flag -p: value out of range',
        ),
        (["-js=maybe"], 'invalid boolean value "maybe" for -js: parse error'),
        (["---x"], "bad flag syntax: ---x"),
        (["-=x"], "bad flag syntax: -=x"),
    ],
)
def test_flag_errors_are_gos(argv: list[str], message: str) -> None:
    error = failure(*argv)
    assert error.message == message
    assert error.stdout == usage("pyjetstream serve")  # Go's flag package prints the usage too
    assert error.exit_code == 1


def test_unrecognized_command() -> None:
    error = failure("-js", "run")
    assert (error.message, error.stdout) == ('pyjetstream: unrecognized command: "run"', "")


def test_options_the_server_cannot_use() -> None:
    assert failure("-p", "70000").message.startswith("pyjetstream: port 70000 is out of range")
    assert failure("--user", "u", "--auth", "t").message == "pyjetstream: Cannot have a user/pass and token"


# ------------------------------------------------------------- help, version


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["-help=true"], ["help"], ["-js", "HELP"]])
def test_help(argv: list[str]) -> None:
    with pytest.raises(HelpRequested) as info:
        parse(*argv)
    assert info.value.stdout == usage("pyjetstream serve")
    assert "-js, --jetstream" in info.value.stdout and "-sd, --store_dir <dir>" in info.value.stdout


def test_tls_help() -> None:
    with pytest.raises(HelpRequested) as info:
        parse("--help_tls")
    assert info.value.stdout == TLS_HELP


@pytest.mark.parametrize("argv", [["-v"], ["--version"], ["version"], ["-v", "-h"]])
def test_version(argv: list[str]) -> None:
    with pytest.raises(VersionRequested) as info:
        parse(*argv)
    assert info.value.stdout.startswith("pyjetstream: v")


def test_emit_prints_and_returns_the_exit_code() -> None:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(ServeArgsExit) as info:
        parse("--nope")
    assert info.value.emit(out, err) == 1
    assert err.getvalue() == "flag provided but not defined: -nope\n"
    assert out.getvalue().startswith("\nUsage: pyjetstream serve [options]")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(ServeArgsExit) as info:
        parse("-v")
    assert info.value.emit(out, err) == 0
    assert (err.getvalue(), out.getvalue().startswith("pyjetstream: v")) == ("", True)


# ------------------------------------------------------- config file + flags


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "server.conf"
    path.write_text(
        """
        port: 1111
        server_name: from-file
        debug: true
        logtime: false
        jetstream { store_dir: "/from/file", max_mem: 1G }
        authorization { user: fileuser, password: filepass }
        """
    )
    return path


def test_flags_override_the_config_file(conf: Path) -> None:
    o = parse("-c", str(conf), "-p", "2222", "-D=false", "-js=false", "--user", "flaguser")
    assert (o.port, o.debug, o.jetstream, o.username) == (2222, False, False, "flaguser")
    # What the command line does not mention comes from the file.
    assert (o.server_name, o.logtime, o.store_dir, o.max_memory_store, o.password) == (
        "from-file",
        False,
        "/from/file",
        1_000_000_000,
        "filepass",
    )


def test_flag_order_does_not_matter_for_the_config_file(conf: Path) -> None:
    assert parse("-p", "2222", "--config", str(conf)).port == 2222
    assert parse("-sd=/flag", "-c", str(conf)).store_dir == "/flag"
    assert parse(f"--config={conf}", "-T").logtime is True


def test_combined_flags_override_the_file(conf: Path) -> None:
    o = parse("-c", str(conf), "-DV=false")
    assert (o.debug, o.trace) == (False, False)


def test_config_errors_are_usage_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("port: 1\nnope: 2\nmax_payload: 1T\n")
    error = failure("-c", str(bad))
    assert error.message == (
        f'pyjetstream: {bad}:2:1: unknown field "nope"\npyjetstream: {bad}:3:1: max_payload value is too big'
    )
    assert error.stdout == ""


def test_missing_config_file() -> None:
    error = failure("-c", "/nonexistent/x.conf")
    assert (
        error.message
        == "pyjetstream: open /nonexistent/x.conf: no such file or directory"  # nats-server's words
    )


def test_environment_variables_in_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "env.conf"
    path.write_text("port: $MY_PORT\n")
    assert parse_serve_args(["-c", str(path)], environ={"MY_PORT": "5555"}).port == 5555


def test_check_config(conf: Path) -> None:
    with pytest.raises(ConfigChecked) as info:
        parse("-t", "-c", str(conf))
    digest = info.value.options.config_digest
    assert info.value.message == f"pyjetstream: configuration file {conf} is valid ({digest})"
    assert digest.startswith("sha256:")
    assert (info.value.exit_code, info.value.options.port) == (0, 1111)


def test_check_config_needs_a_file() -> None:
    assert (
        failure("-t").message
        == "pyjetstream: must specify [-c, --config] option to check configuration file syntax"
    )


def test_check_config_with_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("port: {\n")
    assert failure("-t", "-c", str(bad)).message == f"pyjetstream: {bad}:2:1: Unexpected EOF processing map."


# ------------------------------------------------------------ ignored flags


def test_cluster_and_syslog_flags_are_accepted_and_ignored() -> None:
    o = parse(
        "--cluster", "nats://0.0.0.0:6222", "--routes", "nats://a:6222", "--cluster_name", "c",
        "--no_advertise=true", "--connect_retries", "3", "--cluster_advertise", "x", "--cluster_listen", "y",
        "-s", "-r", "udp://localhost:514", "--profile", "6060",
    )  # fmt: skip
    assert o.unsupported == {
        "--cluster": "nats://0.0.0.0:6222",
        "--routes": "nats://a:6222",
        "--cluster_name": "c",
        "--no_advertise": True,
        "--connect_retries": 3,
        "--cluster_advertise": "x",
        "--cluster_listen": "y",
        "--syslog": True,
        "--remote_syslog": "udp://localhost:514",
        "--profile": 6060,
    }
    assert o.warnings[0] == "--cluster ignored: clustering is not supported by pyjetstream"
    assert len(o.warnings) == 10


# ----------------------------------------------------------------------- TLS


def make_cert(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    openssl = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost".split()
    subprocess.run([*openssl, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


@needs_openssl
def test_tls_flags(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    o = parse("--tls", "--tlscert", str(cert), "--tlskey", str(key))
    assert o.tls is not None
    assert (o.tls.cert_file, o.tls.key_file, o.tls.verify, o.auth_timeout) == (
        str(cert),
        str(key),
        False,
        3.0,
    )
    o = parse("--tlsverify", "--tlscert", str(cert), "--tlskey", str(key), "--tlscacert", str(cert))
    assert o.tls is not None and (o.tls.verify, o.tls.ca_file) == (True, str(cert))


@needs_openssl
def test_tls_false_disables_tls_from_the_config_file(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path)
    conf = tmp_path / "tls.conf"
    conf.write_text(f'tls {{ cert_file: "{cert}", key_file: "{key}" }}\n')
    assert parse("-c", str(conf)).tls is not None
    assert parse("-c", str(conf), "-tls=false", "--tlsverify").tls is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls"], "TLS Server certificate must be present and valid"),
        (["--tlsverify", "--tlscert", "c.pem"], "TLS Server private key must be present and valid"),
        (
            ["--tls", "--tlscert", "/no/c.pem", "--tlskey", "/no/k.pem"],
            "error parsing X509 certificate/key pair",
        ),
    ],
)
def test_tls_flag_errors(argv: list[str], message: str) -> None:
    assert failure(*argv).message.startswith(message)


# -------------------------------------------------------------------- signal


def _hostile_inheritance() -> None:
    """A child's start as the worst parent leaves it: SIGINT and SIGTERM ignored (a shell's ``cmd &``,
    nohup, some CI runners) and blocked. Both survive exec, so what a child does with a signal must
    not depend on them (issue 26: a `-sl quit` test found its child alive 20 s later in a full run)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


# The target of a signal sets the dispositions it is tested with, whatever it inherited, and says
# when it has (a signal sent before that would find the inherited ones).
SIGNAL_TARGET = """
import signal, sys, time
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
print("ready", flush=True)
time.sleep(60)
"""


def _signal_target() -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", SIGNAL_TARGET], stdout=subprocess.PIPE, text=True, preexec_fn=_hostile_inheritance
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def test_signal_to_a_pid_file(tmp_path: Path) -> None:
    child = _signal_target()
    try:
        pid_file = tmp_path / "server.pid"
        pid_file.write_text(f"{child.pid}\n")
        with pytest.raises(SignalRequested) as info:
            parse("--signal", f"term={pid_file}")
        assert (info.value.command, info.value.pid) == ("term", str(pid_file))
        assert info.value.emit(io.StringIO(), io.StringIO()) == 0
        assert child.wait(timeout=20) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_signal_to_a_pid() -> None:
    child = _signal_target()
    try:
        with pytest.raises(SignalRequested) as info:
            parse("-sl", f"quit={child.pid}")
        assert info.value.emit(io.StringIO(), io.StringIO()) == 0
        assert child.wait(timeout=20) == -signal.SIGINT  # KeyboardInterrupt, then the default action
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("kind", ["embedded", "nats-server"])
@pytest.mark.parametrize("command", ["quit", "term"])
def test_a_server_stops_on_its_signals_whatever_it_inherited(tmp_path: Path, kind: str, command: str) -> None:
    """``-sl quit|term=<pid>`` stops the server gracefully (exit 0) even when it was started with
    SIGINT and SIGTERM ignored and blocked: nats-server's signal.Notify takes them back, and so does
    ``pyjetstream serve`` (before it starts, so a stop during start-up is not lost either)."""
    ports = tmp_path / "ports"
    ports.mkdir()
    command_line = [NATS_SERVER] if kind == "nats-server" else [sys.executable, "-m", "pyjetstream", "serve"]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [*command_line, "-js", "-sd", str(tmp_path / "store"), "-a", "127.0.0.1", "-p", "-1",
         "--ports_file_dir", str(ports)],
        stdout=log, stderr=subprocess.STDOUT, preexec_fn=_hostile_inheritance,
    )
    try:
        deadline = time.monotonic() + 30
        while not list(ports.glob("*.ports")) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list(ports.glob("*.ports")), (tmp_path / "server.log").read_text()
        with pytest.raises(SignalRequested) as info:
            parse("-sl", f"{command}={server.pid}")
        assert info.value.emit(io.StringIO(), io.StringIO()) == 0
        assert server.wait(timeout=30) == 0
        assert "Server Exiting" in (tmp_path / "server.log").read_text()
    finally:
        log.close()
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_stop_during_start_up_is_kept(tmp_path: Path) -> None:
    """SIGTERM while the embedded server is still starting: it finishes starting, then shuts down
    gracefully (it used to be a KeyboardInterrupt-style death, or lost when SIGTERM was ignored)."""
    ports = tmp_path / "ports"
    ports.mkdir()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "pyjetstream", "serve", "-js", "-sd", str(tmp_path / "store"), "-a", "127.0.0.1",
         "-p", "-1", "--ports_file_dir", str(ports), "-D"],
        stdout=log, stderr=subprocess.STDOUT, preexec_fn=_hostile_inheritance,
    )
    try:
        deadline = time.monotonic() + 30
        while "Starting nats-server" not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.002)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        assert "Server Exiting" in (tmp_path / "server.log").read_text()
    finally:
        log.close()
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode=1", 'pyjetstream: unknown signal "explode"'),
        ("stop", "pyjetstream: --signal needs a pid or a pid file: --signal stop=<pid>"),
        ("stop=notapid", "pyjetstream: invalid pid: notapid"),
    ],
)
def test_signal_errors(spec: str, message: str) -> None:
    with pytest.raises(SignalRequested) as info:
        parse("--signal", spec)
    err = io.StringIO()
    assert info.value.emit(io.StringIO(), err) == 1
    assert err.getvalue() == message + "\n"


def test_signal_with_too_many_parameters() -> None:
    assert failure("--signal", "stop=1=2").message == "pyjetstream: invalid signal parameters: ['2']"


# ------------------------------------------------- against nats-server itself


def run_nats_server(*argv: str) -> subprocess.CompletedProcess[str]:
    assert NATS_SERVER is not None
    return subprocess.run([NATS_SERVER, *argv], capture_output=True, text=True, timeout=30)


@needs_nats_server
@pytest.mark.parametrize(
    "argv",
    [
        ["--foo"],
        ["-p"],
        ["-p", "abc"],
        ["-p", "99999999999999999999"],
        ["-js=maybe"],
        ["---x"],
        ["-=x"],
        ["extra"],
        ["-js", "false"],
        ["-t"],
        ["-c", "/nonexistent/x.conf"],
    ],
)
def test_errors_read_like_nats_servers(argv: list[str]) -> None:
    ours = failure(*argv, prog="nats-server").message
    theirs = run_nats_server(*argv).stderr
    if argv == ["-c", "/nonexistent/x.conf"]:  # Go says "open <path>: no such file or directory"
        assert theirs.startswith("nats-server: open /nonexistent/x.conf") and "/nonexistent/x.conf" in ours
    else:
        assert theirs.splitlines()[0] == ours


@needs_nats_server
@pytest.mark.parametrize(
    "argv",
    [
        ["-p", "-1", "-js", "-sd", "/tmp/x", "-m", "8222"],
        ["--addr=127.0.0.1", "--port=4333", "--name=hub", "--http_port", "8222", "--https_port=8443"],
        ["-n", "a", "--server_name", "b", "-net", "0.0.0.0", "-ms", "1"],
        ["-DV", "-VV", "-DVV=false", "-T=false", "-l", "/tmp/x.log", "-P", "/tmp/x.pid"],
        ["--user", "u", "--pass", "p", "--ports_file_dir", "/tmp", "--client_advertise", "h:1"],
        ["--auth", "tok", "--log_size_limit", "0x100", "--max_traced_msg_len", "010"],
        ["--jetstream=true", "--store_dir=/tmp/y", "-D", "-V", "--debug=false", "--trace=1"],
        ["--cluster", "nats://127.0.0.1:6222", "--cluster_name", "c", "--no_advertise=true"],
        ["--tls", "--tlscert", "c.pem", "--tlskey", "k.pem", "--tlsverify", "--tlscacert", "ca.pem"],
        ["-s", "-r", "udp://localhost:514", "--profile", "0", "--connect_retries", "2"],
    ],
)
def test_nats_server_accepts_the_same_command_lines(argv: list[str], tmp_path: Path) -> None:
    """Flags we parse are flags nats-server parses (checked with -t on a one-value config: 2.11+
    refuses an empty one, see below)."""
    minimal = tmp_path / "minimal.conf"
    minimal.write_text("ping_max: 2\n")
    theirs = run_nats_server(*argv, "-t", "-c", str(minimal))
    assert theirs.returncode == 0, theirs.stderr
    with pytest.raises(ConfigChecked):
        parse(*argv, "-t", "-c", str(minimal))


@needs_nats_server
def test_an_empty_config_fails_the_check_as_in_nats_server(tmp_path: Path) -> None:
    empty = tmp_path / "empty.conf"
    empty.write_text("\n")
    theirs = run_nats_server("-t", "-c", str(empty))
    assert theirs.returncode != 0
    assert theirs.stderr.splitlines()[0] == failure("-t", "-c", str(empty), prog="nats-server").message


@needs_nats_server
@pytest.mark.parametrize("store", ["/proc/forbidden", "/proc/forbidden/deeper", "FILE", "FILE/below"])
def test_an_unusable_store_directory_is_named_as_nats_server_names_it(tmp_path: Path, store: str) -> None:
    """``serve -js -sd <dir>`` where the store directory cannot be made: the fatal line names the
    store directory in nats-server's words, not "Error listening on port" (issue 26)."""
    (tmp_path / "FILE").write_text("a file, not a directory\n")
    store = store.replace("FILE", str(tmp_path / "FILE"))
    argv = ["-js", "-sd", store, "-a", "127.0.0.1", "-p", "-1"]
    theirs = run_nats_server(*argv)
    ours = subprocess.run(
        [sys.executable, "-m", "pyjetstream", "serve", *argv], capture_output=True, text=True, timeout=60
    )

    def fatal(output: str) -> str:
        return next(line.split("[FTL] ", 1)[1] for line in output.splitlines() if "[FTL] " in line)

    assert (ours.returncode, theirs.returncode) == (1, 1)
    assert fatal(ours.stderr) == fatal(theirs.stderr)
    assert fatal(ours.stderr).startswith("Can't start JetStream: ")
    assert "Error listening" not in ours.stderr
