"""``pyjetstream serve`` arguments: nats-server's command line, flag for flag.

Any harness that starts ``nats-server -p -1 -js -sd DIR`` can start
``pyjetstream serve`` with the same arguments. Parsing follows Go's ``flag``
package exactly, as nats-server 2.9.10 uses it (``server/opts.go``
``ConfigureOptions``):

* ``-flag`` and ``--flag`` are the same; values as ``-flag value`` or ``-flag=value``;
* boolean flags take a value only with ``=`` (``-js=false``; Go's true/false/1/0/t/f);
* integers use Go's syntax (``0x10``, ``010`` is octal, ``1_000``);
* flags stop at ``--`` or at the first argument that is not a flag; what remains
  may only be ``version`` or ``help``;
* flags given on the command line override the configuration file (``-c``).

Cluster, syslog and profiling flags are accepted and ignored with a warning
(the embedded server is a single node).

``parse_serve_args`` returns ServerOptions or raises a `ServeArgsExit`
(help, version, ``-t`` result, ``--signal``, or a `UsageError`); a caller
does ``except ServeArgsExit as e: return e.emit()``.
"""

from __future__ import annotations

import os
import re
import signal as _signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from pyjetstream.server.options import AUTH_TIMEOUT, DEFAULT_PORT, ServerOptions, TLSOptions

__all__ = [
    "TLS_HELP",
    "ConfigChecked",
    "HelpRequested",
    "ServeArgsExit",
    "SignalRequested",
    "UsageError",
    "VersionRequested",
    "parse_serve_args",
    "reload_serve_args",
    "usage",
]

USAGE = """
Usage: {prog} [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222, -1 for a random port)
    -n, --name
        --server_name <server_name>  Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring
    -ms,--https_port <port>          Use port for https monitoring
        --dashboard-write            Allow the dashboard (at / on the monitoring port) to change state
        --dashboard-remote           Serve the dashboard to peers other than loopback ones
    -c, --config <file>              Configuration file
    -t                               Test configuration and exit
    -sl,--signal <signal>[=<pid>]    Send signal to a running server (ldm, stop, quit, term, reopen, reload)
                                     <pid> can be either a PID (e.g. 1) or the path to a PID file
        --client_advertise <string>  Client URL to advertise to other servers
        --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports).

Logging Options:
    -l, --log <file>                 File to redirect log output
    -T, --logtime                    Timestamp log entries (default: true)
    -s, --syslog                     Log to syslog (accepted, not supported: ignored)
    -r, --remote_syslog <addr>       Syslog server addr (accepted, not supported: ignored)
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -VV                              Verbose trace (traces system account as well)
    -DV                              Debug and trace
    -DVV                             Debug and verbose trace (traces system account as well)
        --log_size_limit <limit>     Logfile size limit (default: auto)
        --max_traced_msg_len <len>   Maximum printable length for traced messages (default: unlimited)

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory (data goes to <dir>/jetstream)

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Cluster Options (accepted for compatibility and ignored: the server is a single node):
        --routes <rurl-1, rurl-2>    Routes to solicit and connect
        --cluster <cluster-url>      Cluster URL for solicited routes
        --cluster_name <string>      Cluster Name
        --no_advertise <bool>        Do not advertise known cluster information to clients
        --cluster_advertise <string> Cluster URL to advertise to other servers
        --connect_retries <number>   For implicit routes, number of connect retries
        --cluster_listen <url>       Cluster url from which members can solicit routes

Profiling Options:
        --profile <port>             Profiling HTTP port (accepted, ignored)

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version
        --help_tls                   TLS help
"""

TLS_HELP = """
TLS configuration is specified in the tls section of a configuration file:

e.g.

    tls {
        cert_file:      "./certs/server-cert.pem"
        key_file:       "./certs/server-key.pem"
        ca_file:        "./certs/ca.pem"
        verify:         true
        verify_and_map: true
        timeout:        2
    }

or with the --tls, --tlscert, --tlskey, --tlscacert and --tlsverify flags.
"""


def usage(prog: str = "pyjetstream serve") -> str:
    """The help text (nats-server's option list)."""
    return USAGE.format(prog=prog)


# ------------------------------------------------------------------ outcomes


class ServeArgsExit(Exception):
    """The command line asks to stop instead of serving; ``emit()`` does that."""

    exit_code = 0

    def __init__(self, message: str = "", *, stdout: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stdout = stdout

    def emit(self, out: TextIO | None = None, err: TextIO | None = None) -> int:
        """Print what the command line asked for; return the process exit code."""
        out = sys.stdout if out is None else out
        err = sys.stderr if err is None else err
        if self.message:
            print(self.message, file=err)
        if self.stdout:
            out.write(self.stdout)
        return self.exit_code


class UsageError(ServeArgsExit):
    """Bad flags or configuration: message on stderr, exit code 1."""

    exit_code = 1


class HelpRequested(ServeArgsExit):
    """``-h``/``--help``/``help`` or ``--help_tls``: the text goes to stdout."""


class VersionRequested(ServeArgsExit):
    """``-v``/``--version``/``version``."""


class ConfigChecked(ServeArgsExit):
    """``-t -c FILE`` found the file valid (``options`` are what it would run with)."""

    def __init__(self, message: str, options: ServerOptions) -> None:
        super().__init__(message)
        self.options = options


_SIGNALS = {
    "stop": _signal.SIGKILL,
    "quit": _signal.SIGINT,
    "term": _signal.SIGTERM,
    "reopen": getattr(_signal, "SIGUSR1", None),
    "reload": getattr(_signal, "SIGHUP", None),
    "ldm": getattr(_signal, "SIGUSR2", None),
}


class SignalRequested(ServeArgsExit):
    """``--signal CMD[=PID|PIDFILE]``: emit() sends the signal instead of serving."""

    def __init__(self, command: str, pid: str) -> None:
        super().__init__()
        self.command = command
        self.pid = pid

    def emit(self, out: TextIO | None = None, err: TextIO | None = None) -> int:
        err = sys.stderr if err is None else err
        try:
            self.send()
        except (ValueError, OSError) as exc:
            print(f"pyjetstream: {exc}", file=err)
            return 1
        return 0

    def send(self) -> None:
        signum = _SIGNALS.get(self.command)
        if signum is None:
            raise ValueError(f'unknown signal "{self.command}"')
        if not self.pid:
            raise ValueError(f"--signal needs a pid or a pid file: --signal {self.command}=<pid>")
        pid_text = self.pid
        if os.path.isfile(pid_text):  # nats-server: a pid file is read when it exists
            with open(pid_text, encoding="utf-8") as fh:
                pid_text = fh.read().strip()
        if not re.fullmatch(r"\d+", pid_text):
            raise ValueError(f"invalid pid: {pid_text}")
        os.kill(int(pid_text), signum)


# --------------------------------------------------------------- flag table


class _Flag:
    """A ``serve`` flag as nats-server's flag set knows it: the option it sets and its kind.

    A plain class, one per flag shared by its aliases: the table is built at every server start,
    where ~70 frozen dataclass instances (and the class) cost ~1 ms of CPU."""

    __slots__ = ("kind", "name")

    def __init__(self, name: str, kind: str) -> None:
        self.name = name  # canonical name (what the flag sets)
        self.kind = kind  # "bool", "int" or "string"


def _flags() -> dict[str, _Flag]:
    table: dict[str, _Flag] = {}

    def add(kind: str, canonical: str, *aliases: str) -> None:
        flag = _Flag(canonical, kind)
        table[canonical] = flag
        for alias in aliases:
            table[alias] = flag

    add("bool", "help", "h")
    add("bool", "version", "v")
    add("bool", "help_tls")
    add("int", "port", "p")
    add("string", "name", "n", "server_name")
    add("string", "addr", "a", "net")
    add("string", "client_advertise")
    add("bool", "debug", "D")
    add("bool", "trace", "V")
    add("bool", "VV")
    add("bool", "DV")
    add("bool", "DVV")
    add("bool", "logtime", "T")
    add("string", "user")
    add("string", "pass")
    add("string", "auth")
    add("int", "http_port", "m")
    add("int", "https_port", "ms")
    add("string", "config", "c")
    add("bool", "t")
    add("string", "signal", "sl")
    add("string", "pid", "P")
    add("string", "ports_file_dir")
    add("string", "log", "l")
    add("int", "log_size_limit")
    add("bool", "syslog", "s")
    add("string", "remote_syslog", "r")
    add("int", "profile")
    add("string", "routes")
    add("string", "cluster")
    add("string", "cluster_listen")
    add("string", "cluster_advertise")
    add("bool", "no_advertise")
    add("int", "connect_retries")
    add("string", "cluster_name")
    add("bool", "tls")
    add("bool", "tlsverify")
    add("string", "tlscert")
    add("string", "tlskey")
    add("string", "tlscacert")
    add("int", "max_traced_msg_len")
    add("bool", "jetstream", "js")
    add("string", "store_dir", "sd")
    add("bool", "dashboard_write", "dashboard-write")  # pyjetstream's own (the dashboard)
    add("bool", "dashboard_remote", "dashboard-remote")
    return table


_FLAGS = _flags()
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_GO_INT = re.compile(
    r"(?P<sign>[+-]?)(?:0[xX](?P<hex>_?[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)"
    r"|0[bB](?P<bin>_?[01]+(?:_[01]+)*)"
    r"|0[oO](?P<oct>_?[0-7]+(?:_[0-7]+)*)"
    r"|(?P<zoct>0(?:_?[0-7]+)*)"
    r"|(?P<dec>[1-9](?:_?[0-9]+)*))"
)


def _go_int(text: str) -> int:
    """strconv.ParseInt(text, 0, 64); ValueError("parse error"/"value out of range")."""
    m = _GO_INT.fullmatch(text)
    if not m:
        raise ValueError("parse error")
    for group, base in (("hex", 16), ("bin", 2), ("oct", 8), ("zoct", 8), ("dec", 10)):
        digits = m.group(group)
        if digits is not None:
            value = int(digits.replace("_", ""), base)
            break
    if m.group("sign") == "-":
        value = -value
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError("value out of range")
    return value


def _parse_flags(argv: Sequence[str]) -> tuple[list[tuple[str, Any]], list[str]]:
    """Go flag.FlagSet.Parse: the (canonical name, value) pairs in order, and the rest."""
    given: list[tuple[str, Any]] = []
    args = list(argv)
    while args:
        arg = args[0]
        if len(arg) < 2 or arg[0] != "-":
            break
        if arg == "--":
            args.pop(0)
            break
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if not name or name[0] in "-=":
            raise UsageError(f"bad flag syntax: {arg}")
        args.pop(0)
        value: str | None = None
        if "=" in name[1:]:
            name, value = name.split("=", 1)
        flag = _FLAGS.get(name)
        if flag is None:
            raise UsageError(f"flag provided but not defined: -{name}")
        if flag.kind == "bool":
            if value is None:
                given.append((flag.name, True))
            elif value in _TRUE or value in _FALSE:
                given.append((flag.name, value in _TRUE))
            else:
                raise UsageError(f'invalid boolean value "{value}" for -{name}: parse error')
            continue
        if value is None:
            if not args:
                raise UsageError(f"flag needs an argument: -{name}")
            value = args.pop(0)
        if flag.kind == "int":
            try:
                given.append((flag.name, _go_int(value)))
            except ValueError as exc:
                raise UsageError(f'invalid value "{value}" for flag -{name}: {exc}') from None
        else:
            given.append((flag.name, value))
    return given, args


# ------------------------------------------------------------------ applying

_DIRECT = {
    "name": "server_name",
    "addr": "host",
    "client_advertise": "client_advertise",
    "debug": "debug",
    "trace": "trace",
    "logtime": "logtime",
    "user": "username",
    "pass": "password",
    "auth": "token",
    "http_port": "http_port",
    "https_port": "https_port",
    "pid": "pid_file",
    "ports_file_dir": "ports_file_dir",
    "log": "logfile",
    "log_size_limit": "log_size_limit",
    "max_traced_msg_len": "max_traced_msg_len",
    "jetstream": "jetstream",
    "store_dir": "store_dir",
    "dashboard_write": "dashboard_write",
    "dashboard_remote": "dashboard_remote",
}
_IGNORED = {
    "syslog": "syslog logging",
    "remote_syslog": "syslog logging",
    "profile": "the profiling port",
    "routes": "clustering",
    "cluster": "clustering",
    "cluster_listen": "clustering",
    "cluster_advertise": "clustering",
    "no_advertise": "clustering",
    "connect_retries": "clustering",
    "cluster_name": "clustering",
}
_NOT_OPTIONS = {"help", "version", "help_tls", "config", "t", "signal"}


def _apply_flags(opts: ServerOptions, given: list[tuple[str, Any]]) -> None:
    """Set what the command line says, in order, over defaults and the config file."""
    tls: dict[str, Any] = {}
    for name, value in given:
        if name in _DIRECT:
            setattr(opts, _DIRECT[name], value)
        elif name == "port":
            opts.port = DEFAULT_PORT if value == 0 else value  # nats-server: 0 is the default
        elif name == "VV":
            opts.trace = opts.trace_verbose = value
        elif name == "DV":
            opts.debug = opts.trace = value
        elif name == "DVV":
            opts.debug = opts.trace = opts.trace_verbose = value
        elif name.startswith("tls"):
            tls[name] = value
        elif name in _IGNORED:
            opts.unsupported[f"--{name}"] = value
            opts.warnings.append(f"--{name} ignored: {_IGNORED[name]} is not supported by pyjetstream")
        else:
            assert name in _NOT_OPTIONS, name
    if tls.get("tls") is False:
        opts.tls = None  # -tls=false disables TLS from the config file
    elif tls:
        _override_tls(opts, tls)


def _override_tls(opts: ServerOptions, flags: dict[str, Any]) -> None:
    cert, key = flags.get("tlscert", ""), flags.get("tlskey", "")
    if not cert:
        raise UsageError("TLS Server certificate must be present and valid")
    if not key:
        raise UsageError("TLS Server private key must be present and valid")
    tls = TLSOptions(
        cert_file=cert,
        key_file=key,
        ca_file=flags.get("tlscacert", ""),
        verify=bool(flags.get("tlsverify", False)),
    )
    try:
        tls.server_context()
    except (OSError, ValueError) as exc:
        raise UsageError(f"error parsing X509 certificate/key pair: {exc}") from None
    if opts.tls is None and opts.auth_timeout == AUTH_TIMEOUT:
        opts.auth_timeout = tls.timeout + 1.0  # nats-server's default auth timeout with TLS
    opts.tls = tls


def _version() -> str:
    try:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from importlib.metadata import version

        return version("pyjetstream")
    except Exception:  # not installed as a distribution (e.g. a source checkout)
        return "0.0.0+unknown"


def reload_serve_args(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> ServerOptions:
    """The options a reload runs with (nats-server ``Reload``: the configuration file read again,
    ``MergeOptions`` of the command line's flags over it). Raises ``ValueError`` (a
    ``ConfigError`` …) with nats-server's words for what it cannot read."""
    given, _ = _parse_flags(argv)
    config_file = str(dict(given).get("config", ""))
    if not config_file:
        raise ValueError("can only reload config when a file is provided using -c or --config")
    from pyjetstream.server.conf import ConfigError, load_config  # (see `_load_config`)

    try:
        opts = load_config(config_file, environ=environ)
    except ConfigError as exc:  # a check of the options (no line) is nats-server's validateOptions: no file
        raise ValueError("\n".join(str(i) if i.line else i.message for i in exc.issues)) from None
    try:
        _apply_flags(opts, given)
    except UsageError as exc:
        raise ValueError(exc.message) from None
    return opts


def _load_config(config_file: str, environ: Mapping[str, str] | None, prog: str) -> ServerOptions:
    """The configuration file's options, not yet checked as a whole.

    The configuration package (its scanner, parser and the mappings of every block: 15 modules)
    is imported here, when there is a file: a start from flags alone (``-js -sd DIR``) does not
    load it."""
    from pyjetstream.server.conf import ConfigError, load_config

    try:
        return load_config(config_file, environ=environ, validate=False)
    except ConfigError as exc:
        raise UsageError("\n".join(f"{prog}: {issue}" for issue in exc.issues)) from None


def parse_serve_args(
    argv: Sequence[str],
    *,
    prog: str = "pyjetstream",
    environ: Mapping[str, str] | None = None,
) -> ServerOptions:
    """nats-server's command line to ServerOptions.

    ``argv`` excludes the program and sub-command (``sys.argv[2:]`` for
    ``pyjetstream serve ...``). ``environ`` resolves ``$VARIABLES`` in the config
    file (default: os.environ). Raises a ServeArgsExit subclass when there is
    nothing to serve: UsageError (exit 1), HelpRequested, VersionRequested,
    ConfigChecked (``-t``) or SignalRequested (exit 0 unless sending fails).
    """
    try:
        given, rest = _parse_flags(argv)
    except UsageError as exc:  # Go's flag package prints the usage after the message
        raise UsageError(exc.message, stdout=usage(f"{prog} serve")) from None
    last: dict[str, Any] = dict(given)  # Go: the last occurrence of a flag wins
    if last.get("version"):
        raise VersionRequested(stdout=f"{prog}: v{_version()}\n")
    if last.get("help"):
        raise HelpRequested(stdout=usage(f"{prog} serve"))
    if last.get("help_tls"):
        raise HelpRequested(stdout=TLS_HELP)
    if rest:
        command = rest[0].lower()
        if command == "version":
            raise VersionRequested(stdout=f"{prog}: v{_version()}\n")
        if command == "help":
            raise HelpRequested(stdout=usage(f"{prog} serve"))
        raise UsageError(f'{prog}: unrecognized command: "{rest[0]}"')
    if last.get("signal"):
        command, _, pid = str(last["signal"]).partition("=")
        if "=" in pid:
            raise UsageError(f"{prog}: invalid signal parameters: {pid.split('=')[1:]}")
        raise SignalRequested(command, pid)

    config_file = str(last.get("config", ""))
    check = bool(last.get("t", False))
    if check and not config_file:
        raise UsageError(f"{prog}: must specify [-c, --config] option to check configuration file syntax")
    # The options as a whole are checked once the flags are applied (nats-server
    # validateOptions), and never for -t, which judges the file alone.
    opts = _load_config(config_file, environ, prog) if config_file else ServerOptions()
    if check:  # like nats-server, -t judges the file alone
        if opts.check_warnings:  # nats-server -t fails on the warnings of its own
            raise UsageError("\n".join(f"{prog}: {w}" for w in opts.check_warnings))
        digest = f" ({opts.config_digest})" if opts.config_digest else ""  # nats-server 2.15's line
        raise ConfigChecked(f"{prog}: configuration file {config_file} is valid{digest}", opts)
    _apply_flags(opts, given)
    problems = opts.problems()
    if problems:
        raise UsageError("\n".join(f"{prog}: {p}" for p in problems))
    return opts
