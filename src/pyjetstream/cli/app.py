"""What every CLI command shares: the nats CLI's connection flags, the run loop and the session.

Each verb group (``stream``, ``kv`` …) is a `Group` of `Command` s (and of nested
groups: ``server check stream``); a command adds its own arguments to a parser that already has the
global flags (``--server/-s``, ``--user``, ``--creds``, ``--timeout``, ``--context``, ``--json``,
``--trace`` …). As in the nats CLI, global flags go anywhere on the line: before the verb, between
a group and its command, or among the command's own arguments (`split_globals` moves the
ones before the command to just after it). A handler is an ``async def (session, args)``. `run_command` parses, runs the handler
on an event loop and turns any failure into a clean message and exit code (`errors`).
Heavy modules (the client, rich, msgspec) are imported only once a command runs, so ``--help``
stays instant.

Where settings come from, strongest first: a flag, its environment variable (``NATS_URL``,
``NATS_USER`` …, as the nats CLI), the selected nats context (`contexts`), the default.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyjetstream.cli.errors import EXIT_USAGE, UsageError, report
from pyjetstream.cli.global_flags import DEFAULT_TIMEOUT, GLOBAL_OPTIONS, split_globals

if TYPE_CHECKING:
    from pyjetstream.client import Client

__all__ = [
    "DEFAULT_URL",
    "Command",
    "Group",
    "Handler",
    "Session",
    "common_parser",
    "execute",
    "run_command",
    "split_globals",
]

DEFAULT_URL = "nats://127.0.0.1:4222"

Handler = Callable[["Session", argparse.Namespace], Awaitable[int | None]]

# flag dest → environment variable (the nats CLI's names)
_ENV = {
    "server": "NATS_URL",
    "user": "NATS_USER",
    "password": "NATS_PASSWORD",
    "token": "NATS_TOKEN",
    "creds": "NATS_CREDS",
    "nkey": "NATS_NKEY",
    "tlscert": "NATS_CERT",
    "tlskey": "NATS_KEY",
    "tlsca": "NATS_CA",
    "timeout": "NATS_TIMEOUT",
    "context": "NATS_CONTEXT",
    "js_domain": "NATS_JS_DOMAIN",
    "js_api_prefix": "NATS_JS_API_PREFIX",
    "inbox_prefix": "NATS_INBOX_PREFIX",
}
# nats context JSON key → flag dest
_CONTEXT_KEYS = {
    "url": "server",
    "user": "user",
    "password": "password",
    "token": "token",
    "creds": "creds",
    "nkey": "nkey",
    "cert": "tlscert",
    "key": "tlskey",
    "ca": "tlsca",
    "jetstream_domain": "js_domain",
    "jetstream_api_prefix": "js_api_prefix",
    "inbox_prefix": "inbox_prefix",
}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=110)


def common_parser() -> argparse.ArgumentParser:
    """The global flags every leaf command accepts (add with ``parents=[common_parser()]``), from
    `GLOBAL_OPTIONS`."""
    p = argparse.ArgumentParser(add_help=False)
    groups = {"connection": p.add_argument_group("connection"), "output": p}
    for opt in GLOBAL_OPTIONS:
        target: Any = groups[opt.group]
        if opt.metavar:
            target.add_argument(*opt.flags, metavar=opt.metavar, help=opt.help)
        else:
            target.add_argument(*opt.flags, action="store_true", help=opt.help)
    return p


@dataclass(frozen=True)
class Command:
    """One leaf command: ``configure`` adds its own arguments, ``handler`` runs it."""

    name: str
    help: str
    handler: Handler
    configure: Callable[[argparse.ArgumentParser], object] | None = None
    aliases: tuple[str, ...] = ()
    common: bool = True

    def parser(self, prog: str) -> argparse.ArgumentParser:
        parents = [common_parser()] if self.common else []
        p = argparse.ArgumentParser(
            prog=prog, description=self.help, parents=parents, formatter_class=_Formatter
        )
        if self.configure is not None:
            self.configure(p)
        # A short usage line: the full flag list is in --help, grouped.
        positionals = [a for a in p._actions if not a.option_strings]
        shown = " ".join(
            f"[{a.metavar or a.dest}]" if a.nargs == "?" else str(a.metavar or a.dest) for a in positionals
        )
        p.usage = f"%(prog)s [options] {shown}".rstrip()
        return p


class Group:
    """A verb group (``stream``, ``kv`` …): ``pyjetstream <group> <command> [args]``.

    Entries are commands or nested groups (``server check <what>``). Only the chosen command's
    parser is built, and it is parsed with ``parse_intermixed_args`` so that flags and positionals
    mix freely (``pub SUBJECT --count 2 BODY``), as in the nats CLI. Global options before the
    command's name are moved to just after it (`split_globals`).
    """

    def __init__(
        self,
        prog: str,
        description: str,
        commands: Sequence[Command | Group],
        *,
        help: str = "",
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.prog = prog
        self.name = prog.rsplit(" ", 1)[-1]
        self.description = description
        self.help = help or description
        self.aliases = aliases
        self.commands = list(commands)
        self._by_name = {alias: c for c in commands for alias in (c.name, *c.aliases)}

    def usage(self) -> str:
        width = max(len(c.name) for c in self.commands)
        lines = [f"usage: {self.prog} <command> [options]", "", self.description, "", "commands:"]
        for c in self.commands:
            alias = f" (also: {', '.join(c.aliases)})" if c.aliases else ""
            lines.append(f"  {c.name.ljust(width)}  {c.help}{alias}")
        lines += ["", f"Run '{self.prog} <command> --help' for a command's options."]
        return "\n".join(lines)

    def find(self, name: str) -> Command | Group | None:
        return self._by_name.get(name)

    def main(self, argv: Sequence[str]) -> int:
        try:
            flags, args = split_globals(argv)
        except UsageError as exc:
            return report(exc, self.prog)
        if not args or args[0] in ("-h", "--help", "help"):
            print(self.usage(), file=sys.stdout if args else sys.stderr)
            return 0 if args else EXIT_USAGE
        command = self._by_name.get(args[0])
        if command is None:
            print(
                f"{self.prog}: error: unknown command {args[0]!r} (run '{self.prog} --help' for the list)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        if isinstance(command, Group):
            return command.main([*flags, *args[1:]])
        return run_command(command, f"{self.prog} {command.name}", [*flags, *args[1:]])


class Session:
    """One command run: resolved settings and the lazily made connection / JetStream context."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json: bool = bool(getattr(args, "json", False))
        self.settings = _resolve_settings(args)
        self._client: Client | None = None
        self._js: Any = None

    @property
    def url(self) -> str:
        return self.settings.get("server") or DEFAULT_URL

    @property
    def timeout(self) -> float:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.values import parse_duration_seconds

        return parse_duration_seconds(self.settings.get("timeout") or DEFAULT_TIMEOUT, what="--timeout")

    async def connect(self, url: str | None = None, *, name: str = "pyjetstream CLI") -> Client:
        """Connect (once) to the configured server, or a new connection to ``url``."""
        if url is None and self._client is not None:
            return self._client
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.client import connect

        s = self.settings
        self._check_settings(url or self.url)
        user, password, token = s.get("user"), s.get("password"), s.get("token")
        if user and not password and not token:
            user, token = None, user  # the nats CLI treats a lone --user as a token
        client = await connect(
            url or self.url,
            name=name,
            user=user,
            password=password,
            token=token,
            nkeys_seed=s.get("nkey"),
            user_credentials=s.get("creds"),
            tls=self._tls_context(),
            connect_timeout=min(self.timeout, 5.0),
            max_reconnect_attempts=10,
            reconnect_time_wait=0.5,
            inbox_prefix=s.get("inbox_prefix") or "_INBOX",
        )
        if getattr(self.args, "trace", False):
            _trace_requests(client)
        if url is None:
            self._client = client
        return client

    async def jetstream(self) -> Any:
        """The JetStream context on the session's connection (domain / API prefix applied)."""
        if self._js is None:
            # Deferred: CLI start-up speed (loaded only when this command runs).
            from pyjetstream.client.jetstream import JetStream

            client = await self.connect()
            kwargs: dict[str, Any] = {"timeout": self.timeout}
            if self.settings.get("js_domain"):
                kwargs["domain"] = self.settings["js_domain"]
            elif self.settings.get("js_api_prefix"):
                kwargs["api_prefix"] = self.settings["js_api_prefix"]
            self._js = JetStream(client, **kwargs)
        return self._js

    def _check_settings(self, url: str) -> None:
        """Usage errors before any connection attempt: a server URL the client cannot read, a
        credentials, key or certificate file that is not there (named, with the flag it came from)."""
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.client.options import parse_server_url, split_servers

        try:
            for one in split_servers(url):
                parse_server_url(one)
        except ValueError as exc:
            raise UsageError(f"invalid --server: {exc}") from None
        for key, flag in (("creds", "--creds"), ("nkey", "--nkey"), ("tlscert", "--tlscert"),
                          ("tlskey", "--tlskey"), ("tlsca", "--tlsca")):  # fmt: skip
            path = self.settings.get(key)
            if not path or (key == "nkey" and str(path).startswith("SU")):  # a seed given as is
                continue
            if not os.path.isfile(os.path.expanduser(str(path))):
                raise UsageError(f"{path}: no such file (given as {flag}, its variable or the context)")

    def _tls_context(self) -> Any:
        s = self.settings
        if not (s.get("tlscert") or s.get("tlsca")):
            return None
        # Deferred: ssl is slow to import and only TLS needs it (start-up speed).
        import ssl

        ctx = ssl.create_default_context(cafile=s.get("tlsca"))
        if s.get("tlscert"):
            ctx.load_cert_chain(s["tlscert"], s.get("tlskey"))
        return ctx

    async def close(self) -> None:
        if self._client is not None and not self._client.is_closed:
            try:
                await asyncio.wait_for(self._client.drain(), 5.0)
            except Exception:
                await self._client.close()


def _trace_requests(client: Client) -> None:
    """``--trace``: every request (API calls included) and its answer on stderr, as the nats CLI's
    ``>>> subject`` / ``<<< subject`` lines with the bodies."""
    request = client.request

    async def traced(subject: str, payload: bytes = b"", timeout: Any = 2.0, headers: Any = None) -> Any:
        print(f">>> {subject}\n{payload.decode('utf-8', 'replace')}\n", file=sys.stderr, flush=True)
        try:
            reply = await request(subject, payload, timeout=timeout, headers=headers)
        except Exception as exc:
            print(f"<<< {subject}: {type(exc).__name__}: {exc}\n", file=sys.stderr, flush=True)
            raise
        status = f" (status {reply.status})" if getattr(reply, "status", None) else ""
        print(f"<<< {subject}{status}\n{reply.data.decode('utf-8', 'replace')}\n", file=sys.stderr, flush=True)
        return reply

    client.request = traced  # type: ignore[method-assign]


def _resolve_settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if not getattr(args, "no_context", False):
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.contexts import load_context

        name = getattr(args, "context", None) or os.environ.get("NATS_CONTEXT")
        for key, value in load_context(name).items():
            dest = _CONTEXT_KEYS.get(key)
            if dest and value:
                settings[dest] = value
    for dest, env in _ENV.items():
        value = os.environ.get(env)
        if value:
            settings[dest] = value
        flag = getattr(args, dest, None)
        if flag:
            settings[dest] = flag
    return settings


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        # Deferred: a slow-to-load third-party package only this path needs (start-up speed).
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _run_handler(handler: Handler, args: argparse.Namespace) -> int:
    session = Session(args)
    try:
        return int(await handler(session, args) or 0)
    finally:
        await session.close()


def run_command(command: Command, prog: str, argv: Sequence[str]) -> int:
    """Parse ``argv`` for ``command`` and run it; return the exit code (never raises)."""
    parser = command.parser(prog)
    try:
        args = parser.parse_intermixed_args(list(argv))
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return execute(command, args)


def execute(command: Command, args: argparse.Namespace) -> int:
    """Run ``command``'s handler with its parsed arguments on a fresh event loop; a failure is one
    line on stderr and its exit code (`errors.report`)."""
    try:
        with asyncio.Runner(loop_factory=_new_loop) as runner:
            return runner.run(_run_handler(command.handler, args))
    except (Exception, KeyboardInterrupt) as exc:
        return report(exc)
    finally:
        try:
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            pass
