"""The global options: the nats CLI's connection and output flags, valid on every verb and anywhere
on the line (``pyjetstream -s URL stream ls`` = ``pyjetstream stream ls -s URL``).

One table (`GLOBAL_OPTIONS`) feeds the parser every command shares (``app.common_parser``),
the moving of options written before a verb to after it (`split_globals`), ``--help`` and
the generated reference. Kept free of heavy imports: ``main`` reads it before any command loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pyjetstream.cli.errors import UsageError

__all__ = ["DEFAULT_TIMEOUT", "GLOBAL_OPTIONS", "GlobalOption", "split_globals"]

DEFAULT_TIMEOUT = "5s"  # the nats CLI's --timeout default


class GlobalOption(NamedTuple):
    flags: tuple[str, ...]
    metavar: str  # "" for a switch (no value)
    help: str
    group: str = "connection"


GLOBAL_OPTIONS: tuple[GlobalOption, ...] = (
    GlobalOption(("-s", "--server"), "URL", "NATS server URL(s), comma separated: nats://, tls://, ws://, wss:// (NATS_URL)"),
    GlobalOption(("--user",), "USER", "username, or a token when no --password (NATS_USER)"),
    GlobalOption(("--password",), "PASSWORD", "password (NATS_PASSWORD)"),
    GlobalOption(("--token",), "TOKEN", "authentication token (NATS_TOKEN)"),
    GlobalOption(("--creds",), "FILE", "user credentials file (NATS_CREDS)"),
    GlobalOption(("--nkey",), "FILE", "user nkey seed file (NATS_NKEY)"),
    GlobalOption(("--tlscert",), "FILE", "TLS client certificate (NATS_CERT)"),
    GlobalOption(("--tlskey",), "FILE", "TLS client private key (NATS_KEY)"),
    GlobalOption(("--tlsca",), "FILE", "TLS CA to verify the server with (NATS_CA)"),
    GlobalOption(("--timeout",), "DUR", f"time to wait for responses (default {DEFAULT_TIMEOUT}; NATS_TIMEOUT)"),
    GlobalOption(("--context",), "NAME", "nats context to use (NATS_CONTEXT)"),
    GlobalOption(("--no-context",), "", "ignore nats contexts"),
    GlobalOption(("--js-domain",), "DOMAIN", "JetStream domain (NATS_JS_DOMAIN)"),
    GlobalOption(("--js-api-prefix",), "PREFIX", "JetStream API subject prefix (NATS_JS_API_PREFIX)"),
    GlobalOption(("--inbox-prefix",), "PREFIX", "subject prefix for reply inboxes (NATS_INBOX_PREFIX)"),
    GlobalOption(("-j", "--json"), "", "produce JSON output", "output"),
    GlobalOption(("--trace",), "", "print every request (API calls included) and its answer on stderr", "output"),
)

_TAKES_VALUE = {flag: bool(opt.metavar) for opt in GLOBAL_OPTIONS for flag in opt.flags}
_PASS_THROUGH = frozenset({"-h", "--help", "-v", "--version"})


def split_globals(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The global options (with their values) at the start of ``argv``, and the rest from the first
    word that is not one: ``-s URL --json stream ls`` → ``(["-s", "URL", "--json"], ["stream", "ls"])``.

    ``--server=URL`` and ``-sURL`` are one word. An unknown option there is a usage error (a verb's
    own options belong after the verb); ``-h``/``--help`` and ``-v``/``--version`` are left in place.
    """
    found: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        word = args[i]
        if not word.startswith("-") or word in ("-", "--") or word in _PASS_THROUGH:
            break
        name = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        takes_value = _TAKES_VALUE.get(name)
        if takes_value is None:
            raise UsageError(f"unknown option {word!r}: a command's own options go after the command")
        if takes_value and word == name:  # the value is the next word
            if i + 1 >= len(args):
                raise UsageError(f"option {name} needs a value")
            found += args[i : i + 2]
            i += 2
            continue
        if not takes_value and word != name:
            raise UsageError(f"option {name} takes no value")
        found.append(word)
        i += 1
    return found, args[i:]
