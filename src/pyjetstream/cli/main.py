"""The ``pyjetstream`` command: ``pyjetstream <subcommand> [args...]``.

Each subcommand is a module with ``main(argv: list[str]) -> int``; add one by adding it to
:data:`SUBCOMMANDS` (name → (module path, one-line help)). Modules are imported only when run.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["SUBCOMMANDS", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("pyjetstream.cli.serve", "run the embedded NATS/JetStream server (nats-server flags)"),
    "pub": ("pyjetstream.cli.pub_cmd", "publish messages (core NATS or JetStream)"),
    "sub": ("pyjetstream.cli.sub_cmd", "subscribe to subjects and print what arrives"),
    "req": ("pyjetstream.cli.req_cmd", "send a request and print the reply"),
    "request": ("pyjetstream.cli.req_cmd", "alias of req"),
    "reply": ("pyjetstream.cli.reply_cmd", "answer requests on a subject"),
    "server": ("pyjetstream.cli.server_cmds", "server info and ping"),
    "stream": ("pyjetstream.cli.stream_cmds", "manage and inspect JetStream streams"),
    "consumer": ("pyjetstream.cli.consumer_cmds", "manage, inspect and read from JetStream consumers"),
    "kv": ("pyjetstream.cli.kv_cmds", "key-value buckets: add, put, get, watch, history …"),
    "obj": ("pyjetstream.cli.obj_cmds", "object store buckets: add, put, get, ls, seal …"),
    "object": ("pyjetstream.cli.obj_cmds", "alias of obj"),
    "account": ("pyjetstream.cli.account_cmds", "JetStream account info (usage and limits)"),
    "counter": ("pyjetstream.cli.counter_cmds", "distributed counters: incr, get, view, ls (2.12+)"),
    "ctr": ("pyjetstream.cli.counter_cmds", "alias of counter"),
    "context": ("pyjetstream.cli.context_cmds", "manage nats CLI contexts (shared with the nats command)"),
    "bench": ("pyjetstream.cli.bench_cmds", "benchmark core NATS, JetStream and KV, optionally vs a second server"),
}


def _usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["usage: pyjetstream <command> [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in sorted(SUBCOMMANDS.items())]
    lines += ["", "Run 'pyjetstream <command> --help' for a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    if args[0] in ("-v", "--version", "version"):
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"pyjetstream {version('pyjetstream')}")
        except PackageNotFoundError:
            print("pyjetstream (not installed)")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(f"pyjetstream: unknown command {args[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(entry[0])
    return int(module.main(args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
