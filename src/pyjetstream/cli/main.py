"""The ``pyjetstream`` command: ``pyjetstream [global options] <subcommand> [args...]``.

Each subcommand is a module with ``main(argv: list[str]) -> int`` and a ``GROUP`` (a verb group)
or a ``COMMAND`` (one verb); add one by adding it to `SUBCOMMANDS` (name → (module path,
one-line help)). Modules are imported only when run. Global options (``-s``, ``--context``,
``--json`` …, `global_flags`) may come before the subcommand, as with
``nats``: they are handed on to it (``serve`` takes nats-server's flags instead, so none apply).
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence

__all__ = ["SUBCOMMANDS", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("pyjetstream.cli.serve", "run the embedded NATS/JetStream server (nats-server flags)"),
    "pub": ("pyjetstream.cli.pub_cmd", "publish messages (core NATS or JetStream)"),
    "sub": ("pyjetstream.cli.sub_cmd", "subscribe to subjects and print what arrives"),
    "req": ("pyjetstream.cli.req_cmd", "send a request and print the reply"),
    "request": ("pyjetstream.cli.req_cmd", "alias of req"),
    "reply": ("pyjetstream.cli.reply_cmd", "answer requests on a subject"),
    "server": ("pyjetstream.cli.server_cmds", "server info, ping, list, report, check, request"),
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
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.global_flags import GLOBAL_OPTIONS

    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["usage: pyjetstream [global options] <command> [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in sorted(SUBCOMMANDS.items())]
    lines += ["", "global options (before or after the command; serve takes nats-server's flags instead):"]
    for opt in GLOBAL_OPTIONS:
        flags = ", ".join(opt.flags) + (f" {opt.metavar}" if opt.metavar else "")
        lines.append(f"  {flags.ljust(26)}  {opt.help}")
    lines += ["", "Run 'pyjetstream <command> --help' for a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["serve"]:
        # No global option before the verb, so `split_globals` would find none: a server's start
        # (every restart) skips loading the CLI's option table and error reporting (issue 24).
        return _run(words[0], [], words[1:])
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import UsageError, report
    from pyjetstream.cli.global_flags import split_globals

    try:
        flags, args = split_globals(words)
    except UsageError as exc:
        return report(exc)
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
        return report(UsageError(f"unknown command {args[0]!r} (run 'pyjetstream --help' for the list)"))
    if flags and args[0] == "serve":
        return report(UsageError(f"serve takes nats-server's flags, not the client option {flags[0]!r}"))
    return _run(args[0], flags, args[1:])


def import_msgspec() -> None:
    """Import msgspec with ``typing_extensions`` out of sight, which is visible again afterwards
    (``serve``: the process is the server's alone).

    Why: msgspec imports ``typing_extensions`` when it is installed (many tools depend on it; this
    package does not) only to read annotations written with its forms (its ``Required``,
    ``NotRequired``, ``get_type_hints``); without it msgspec reads ``typing``'s, the package's models
    use nothing else (tests/cli/test_serve_msgspec.py: every API model's JSON schema is the same
    either way). Its import is ~11 M instructions, 2.4% of a server's start to its first answer
    (callgrind). ``PYJETSTREAM_TYPING_EXTENSIONS=on`` leaves msgspec's import as it is."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    if os.environ.get("PYJETSTREAM_TYPING_EXTENSIONS", "") == "on":
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


#: Modules a server's start imports and no start uses (their first use, if any, comes later):
#: msgspec's package imports ``msgspec.inspect`` (type introspection, ~40 classes), asyncio's
#: ``subprocess`` imports ``locale``, ``inspect`` (which asyncio and uvloop use) imports
#: ``linecache``, ``tokenize`` and ``token`` (source lines, for a traceback), msgspec's JSON schema
#: ``textwrap``. Measured deferred (callgrind, a start to its first answer): ``msgspec.inspect``
#: 5.1M instructions, the five others 3.5M together; ~2% of a start.
DEFERRED_MODULES = ("msgspec.inspect", "linecache", "tokenize", "token", "locale", "textwrap")


def defer_modules(names: Sequence[str] = DEFERRED_MODULES) -> list[str]:
    """Put a `DeferredModule` in ``sys.modules`` for each of ``names`` not imported yet (``serve``,
    before it imports the server: the process is the server's alone); returns those deferred.
    ``PYJETSTREAM_DEFER=off`` defers none."""
    if os.environ.get("PYJETSTREAM_DEFER", "") == "off":
        return []
    deferred = [name for name in names if name not in sys.modules]
    for name in deferred:
        sys.modules[name] = DeferredModule(name)
    return deferred


class DeferredModule(types.ModuleType):
    """A module imported at its first use: stands in ``sys.modules`` for ``name`` (an import finds
    it there, loaded), and the first look-up of an attribute it lacks imports the real module, puts
    it in its place (in ``sys.modules`` and as its package's attribute) and copies its names, so
    a reference to this one kept by an importer finds them too (``from name import *`` asks for
    ``__all__``: it loads too). The dunder names a module may lack (`_ABSENT`: ``__file__``,
    ``__path__`` ..., which ``inspect.getmodule`` and the like read from every module) load nothing."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__spec__ = importlib.machinery.ModuleSpec(name, None)

    def __getattr__(self, attr: str) -> object:
        if attr in _ABSENT:
            raise AttributeError(attr)
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        package, _, child = name.rpartition(".")
        if package in sys.modules:
            setattr(sys.modules[package], child, real)
        self.__dict__.update(vars(real))
        return getattr(real, attr)


# What a `DeferredModule` answers without loading: names a module may have or not.
_ABSENT = frozenset({"__file__", "__path__", "__loader__", "__package__", "__cached__"})


def _run(command: str, flags: list[str], rest: list[str]) -> int:
    """Import ``command``'s module and run its ``main`` with ``flags`` and ``rest``."""
    entry = SUBCOMMANDS[command]
    # ``serve`` imports some 350 modules: CPython's collector, left on, ran ~70 collections over
    # their objects while they were imported (~7 ms of a ~100 ms start), all of which live as
    # long as the process; it is paused until `serve.serve` has tuned it, just before the
    # server starts (and again on when serve returns early).
    paused = command == "serve" and gc.isenabled()
    if paused:
        gc.disable()
    if command == "serve":
        # Where earlier starts found their modules (``module_paths``: ~7% of a start looked for
        # them), and the dataclasses' generated methods they compiled (``generated_code``: ~20 ms
        # of a start compiled them again each time); both written back once the server is up. The
        # modules it would import and not use wait for their first use (`defer_modules`).
        from pyjetstream.cli import generated_code, module_paths  # Deferred: only serve uses them.

        module_paths.install()
        generated_code.install()
        defer_modules()
        import_msgspec()
    try:
        module = importlib.import_module(entry[0])
        return int(module.main([*flags, *rest]) or 0)
    finally:
        if paused:
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
