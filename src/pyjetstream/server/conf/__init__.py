"""The NATS configuration file format, and its mapping onto `ServerOptions`.

Two layers:

1. **Syntax** (``parse``/``parse_file``; `scanner`, `parser`, `units`):
   nats-server's ``conf`` package format, a relaxed JSON/HOCON hybrid:

       # comments with '#' or '//'
       port: 4222                    # 'key: value', 'key = value' or 'key value'
       listen = 127.0.0.1:4222       # unquoted strings run to the end of the value
       max_payload 1MB               # sizes: k/m/g/t/p/e are powers of 1000,
                                     # kb/ki/kib, mb/mi/mib, ... powers of 1024
       jetstream { store_dir: "/data", max_mem: 1G }
       authorization { users = [ {user: a, password: $PASS} ] }   # variables
       include ./accounts.conf       # relative to the including file

   Values are ``str``, ``int``, ``float``, ``bool`` (true/false/yes/no/on/off),
   ``datetime`` (``2020-01-02T03:04:05Z``), ``list`` and ``dict``. ``$NAME`` refers
   to a key defined earlier in an enclosing block, else to the environment (whose
   value is parsed as a config value). Unquoted ``$2a$...`` bcrypt hashes are
   literal strings. A number followed by letters that are not a size suffix is a
   string, so ``10s`` and ``1h30m`` are strings (durations); note that an unquoted
   ``2m`` is the *number* 2000000, exactly as in nats-server.

2. **Semantics** (``load_config``/``config_to_options``; `mapping` for the top
   level, ``mapping_auth``/``mapping_accounts``/``mapping_jetstream``/``mapping_tls`` for
   the blocks, `converters` for values): the keys nats-server understands, mapped to
   ServerOptions, with nats-server's validation and error texts. Keys nats-server knows
   but pyjetstream does not implement (cluster, leafnodes, websocket, mqtt, ...) are kept
   raw in ``ServerOptions.unsupported`` with a warning; ones whose absence would weaken
   security (operator/JWT mode, auth callout, encryption at rest) are errors. Unknown keys
   are errors, as in nats-server 2.9.10 (``strict=False`` turns them into warnings).

Every error carries ``<file>:<line>:<col>`` as nats-server's lexer counts them (the column in bytes
from the previous newline: from 0 on the first line, from 1 on the others). nats-server's own
warnings (``ServerOptions.check_warnings``: durations as bare numbers, high authorization timeouts,
an empty file) are logged at start and fatal for ``serve -t``, as there.
"""

from __future__ import annotations

from pyjetstream.server.conf.errors import ConfigError, ConfigIssue
from pyjetstream.server.conf.mapping import config_to_options, load_config
from pyjetstream.server.conf.parser import parse, parse_file
from pyjetstream.server.conf.units import parse_duration

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "config_to_options",
    "load_config",
    "parse",
    "parse_duration",
    "parse_file",
]
