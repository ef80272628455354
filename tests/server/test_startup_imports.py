"""What ``pyjetstream serve`` imports to start (issue 24: a restart's fixed CPU is mostly the
interpreter and the package starting — nats-server's whole restart costs 10-50 ms of CPU).

A server started with default options — a configuration file, JetStream on, a stream to recover,
as the test targets and bench_scale start it — must not import what those options do not use: the
monitoring endpoints and dashboard (a monitoring port), JWT and operator mode, TLS-only and
reload/lame-duck code, the consumer machinery (a stream with consumers, a consumer request),
snapshots, the KV/object-store layouts. Counted in modules, not in time: a module imported at
start-up costs its import on every start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.server.rawclient import RawClient

from pyjetstream.cli import main

SERVE = [sys.executable, "-m", "pyjetstream", "serve"]

# The script run in the new process: the server started as `python -m pyjetstream serve` starts it
# (the command's main: what the test targets and the benchmarks run), then the modules loaded once it
# is ready printed as JSON, and the server stopped.
SCRIPT = """
import json, sys
from pyjetstream.cli import main
main.defer_modules()  # (as `main` does before it imports the server, which this script imports first)
main.import_msgspec()
from pyjetstream.server import server as srv

started = srv.Server.start

async def start(self):
    await started(self)
    loaded = (n for n, m in sys.modules.items() if not isinstance(m, main.DeferredModule))
    print(json.dumps(sorted(loaded)), flush=True)
    self.loop.create_task(self.shutdown())

srv.Server.start = start
sys.exit(main.main(["serve", *sys.argv[1:]]))
"""

# Imported by no start, whatever it recovers: OpenSSL's digests (``hashlib``, and ``hmac`` and
# ``secrets``, which import it) — a start's one digest, the configuration file's, is CPython's
# built-in SHA-256 (`pyjetstream._hashes`), the compiled build's sources are checked by size and time
# (`_compiled._source_is`) — msgspec's ``typing_extensions`` (`cli.main.import_msgspec`), and the
# modules `cli.main.defer_modules` leaves deferred in ``sys.modules``, not loaded.
NO_START_LIBRARIES = ("hashlib", "hmac", "secrets", "typing_extensions", *main.DEFERRED_MODULES)
# Imported only when the options or the requests use them.
NOT_AT_START = (
    "pyjetstream.server.monitor",
    "pyjetstream.server.dashboard",
    "pyjetstream.server.jwt_auth",
    "pyjetstream.server.reload",
    "pyjetstream.server.lame_duck",
    "pyjetstream.server.websocket",
    "pyjetstream.server.jetstream.api_consumer",
    "pyjetstream.server.jetstream.consumer",
    "pyjetstream.server.jetstream.consumer_recovery",
    "pyjetstream.server.jetstream.delivery_loop",
    "pyjetstream.server.jetstream.snapshot",
    "pyjetstream.server.jetstream.s2",
    "pyjetstream.server.jetstream.batch_atomic",  # (a stream's first batch: Stream.atomic / .fast)
    "pyjetstream.server.jetstream.batch_fast",
    "pyjetstream.server.jetstream.batching",
    "pyjetstream.server.jetstream.store.consumer_store",  # (a stream's first consumer)
    "pyjetstream.server.jetstream.store.memstore",  # (a memory stream)
    "pyjetstream.server.jetstream.sourcing",  # (a stream with a mirror or sources)
    "pyjetstream.api.kv",
    "pyjetstream.api.objstore",
    "pyjetstream.api.snapshot",
    "pyjetstream.api.advisories",  # (the first advisory: server.jetstream.advisories)
    "pyjetstream.api.msgtrace",  # (the first traced message: server.msgtrace)
    "pyjetstream.server.jetstream.monitoring",  # (/jsz, /varz, /healthz)
    "pyjetstream.server.jetstream.api_cluster",  # (a clustered-only request: api_router.LAZY_HANDLERS)
    "pyjetstream.server.jetstream.api_account",  # (the first $JS.API.INFO)
    "pyjetstream.api.ack",  # (the first consumer: servers test reply subjects with api.constants.ACK_PREFIX)
    "pyjetstream.server.jetstream.direct_get",  # (a stream allowing direct gets)
    "pyjetstream.client",
    "pyjetstream.spark",  # (the Spark source and sink, with pyspark: a Spark job's, never a server's)
    "pyjetstream.pipeline",
    "pyjetstream.testing",  # (the pytest plugin's helpers: a test process's)
    "pyjetstream.cli.bench_cmds",  # (`pyjetstream bench`, and the client it drives)
    "pyjetstream.cli.errors",  # (the CLI's option table and error reports: `cli.main` runs serve without them)
    "pyjetstream.cli.global_flags",
    "encodings.idna",  # (create_server resolving a literal address: `server.listen_at`)
    # The standard library's, loaded by what a default start does not do: tempfile (a store_dir
    # not set), shutil and with it bz2 and lzma (a tree removed), gzip and cramjam (a compressed
    # message trace, an s2-compressed stream). pathlib and with it urllib.parse and ipaddress: the
    # server's paths are text (~4% of the instructions of an empty server's start, callgrind).
    "tempfile",
    "pathlib",
    "urllib.parse",
    "ipaddress",
    "shutil",
    "bz2",
    "lzma",
    "gzip",
    "cramjam",
    *NO_START_LIBRARIES,
)
# The package's modules a default start imports (133 when this test was written, 164 before; 132
# once the atomic/fast batch machinery was made on a stream's first batch, 130 with the consumer
# and memory stores imported on first use; 129 with the advisory models imported at the first
# advisory, 130 once store.idx_peek came; 129 with sourcing.py imported for a stream with a mirror or
# sources; 127 with the trace models at the first traced message and direct_get.py for a stream
# allowing direct gets; 128 with store.remove_one, a file store's removal of one message, which every
# STREAM.MSG.DELETE and work-queue ack takes; 129 counting cli.main once the test started the server as
# `python -m pyjetstream serve` does, 127 with the clustered-only API handlers and the JetStream
# monitoring endpoints imported at their first request; 125 with the account info handler likewise and
# the ack models at the first consumer; 128 with a start's stream index, stream_index.py, and a file
# store's record of the tombstones it keeps for earlier blocks, store.prior_tombs and store.compaction,
# both used by every recovery): a bound, so that a new eager import of a whole subsystem shows here.
# Counted as CI runs it, with the compiled modules (their group module is one more than pure Python).
# Session 15: 129, the server's JetStream (`server_jetstream.ServerJetStream`, nats-server's ``s.js``)
# in its own module, out of engine.py. Session 16: 130, the subject table's index of its cached
# filters (`store.filter_index.FilterIndex`, a trie beside the subject tree's); session 17 the same
# count, that trie being `protocol.gsl` (the generic one the mappings use too). Session 24: 131,
# `cli.module_paths` (where the last start found its modules: ~4% of a start's instructions less).
# Session 25: 132, `_hashes` (CPython's built-in SHA-256 instead of ``hashlib``: 1.3% less).
MAX_PACKAGE_MODULES = 132
# The other modules (the standard library's, msgspec's, uvloop's; built-in ones counted too) an
# empty server's first start imports, `-js -sd <new dir>`: 206 before session 12 took pathlib (and
# urllib.parse, ipaddress, fnmatch, ntpath) and, at a first start, tempfile (and shutil, bz2,
# lzma) off the start (~5% of its instructions, callgrind). Most of the rest is what asyncio,
# uvloop and msgspec import themselves (~65% of a start's instructions): a bound, so that a new
# eager import of a library shows here.
MAX_OTHER_MODULES = 193
# The package's modules that start imports: `MAX_PACKAGE_MODULES` less the configuration package's
# 16 (scanner, parser, the mappings of every block), imported only to read a configuration file.
MAX_FLAGS_START_MODULES = 116
# The package's modules a start recovering a durable consumer imports (a configuration file, a stream
# and the consumer machinery): 146 in session 13, 145 with the advisories' models imported at the
# first advisory; 147 in session 16 (`store.filter_index`, `protocol.gsl` since session 17); 148 with
# `cli.module_paths` (session 24); 149 with `_hashes` (session 25).
MAX_CONSUMER_START_MODULES = 149


def _create_stream(conf: Path, tmp_path: Path, consumer: bool = False) -> None:
    ports_dir = tmp_path / "ports"
    ports_dir.mkdir()
    proc = subprocess.Popen(
        [*SERVE, "-c", str(conf), "-a", "127.0.0.1", "--ports_file_dir", str(ports_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not list(ports_dir.glob("*.ports")):
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        ports = json.loads(next(ports_dir.glob("*.ports")).read_text())
        body = b'{"name":"S","subjects":["s.>"],"storage":"file"}'
        with RawClient(int(ports["nats"][0].rsplit(":", 1)[1])) as client:
            client.send(b'CONNECT {"verbose":false}\r\nSUB _R 1\r\n')
            client.send(b"PUB $JS.API.STREAM.CREATE.S _R %d\r\n%s\r\nPUB s.1 2\r\nhi\r\n" % (len(body), body))
            client.send(b"PUB $JS.API.STREAM.INFO.S _R 0\r\n\r\n")
            client.read_until(b'"messages":1')
            if consumer:
                body = b'{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit"}}'
                client.send(b"PUB $JS.API.CONSUMER.CREATE.S.C _R %d\r\n%s\r\n" % (len(body), body))
                client.read_until(b'"durable_name":"C"')
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def _start_modules(conf: Path | None = None, *args: str) -> tuple[str, set[str]]:
    """A start on ``conf`` or ``args`` (SCRIPT): its log and the modules it imported."""
    args = ("-c", str(conf), *args) if conf is not None else args
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args, "-a", "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stderr, set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_default_start_imports_only_what_it_uses(tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\njetstream {{\n  store_dir: "{tmp_path / "store"}"\n}}\n')
    _create_stream(conf, tmp_path)
    stderr, modules = _start_modules(conf)
    assert "Restored 1 messages for stream '$G > S'" in stderr, stderr
    assert "pyjetstream.server.jetstream.stream" in modules  # (the stream was recovered)
    assert not _eager(modules), _eager(modules)
    package = [m for m in modules if m.startswith("pyjetstream")]
    assert len(package) <= MAX_PACKAGE_MODULES, len(package)


def test_the_command_imports_no_typing_before_it_pauses_the_collector() -> None:
    """What runs before ``serve`` pauses CPython's collector (`cli.main._run`) — the package and the
    command's module, as the console script and ``python -m pyjetstream`` import them — leaves
    ``typing`` (~2 ms, imported by msgspec afterwards) out: its import set off the first
    collections of every start (~0.5-1.5 ms, callgrind: 4.7M instructions of 420M)."""
    code = "import sys, pyjetstream.cli.main; print('typing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False", out.stdout


def _eager(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in NOT_AT_START or m.startswith(tuple(n + "." for n in NOT_AT_START)))


def test_an_empty_servers_first_start_imports_only_what_it_uses(tmp_path: Path) -> None:
    """``serve -js -sd <dir>`` on a directory not made yet (the server makes it, as nats-server's
    ``diskAvailable`` and ``enableJetStream`` do): no temporary directory asked for on the way (the
    free space is the nearest directory's), nor any module of `NOT_AT_START`, nor the configuration
    package with no file to read; the other modules bounded by `MAX_OTHER_MODULES`."""
    store = tmp_path / "new" / "store"
    stderr, modules = _start_modules(None, "-p", "-1", "-js", "-sd", str(store))
    assert "JetStream started" in stderr, stderr
    assert (store / "jetstream" / "$G" / "streams").is_dir()
    assert not _eager(modules), _eager(modules)
    assert not [m for m in modules if m.startswith("pyjetstream.server.conf")]
    package = [m for m in modules if m.startswith("pyjetstream")]
    assert len(package) <= MAX_FLAGS_START_MODULES, len(package)
    other = [m for m in modules if not m.startswith("pyjetstream") and m != "__main__"]
    assert len(other) <= MAX_OTHER_MODULES, len(other)


def test_a_start_with_a_monitoring_port_imports_no_dashboard(tmp_path: Path) -> None:
    """``-m`` starts the monitoring listener, not the dashboard: its package (views, the KV and
    object-store layouts, ``importlib.resources``, ``tempfile``) is imported at the first request
    for one of its paths, and the listener binds a literal address without the IDNA codec (the
    two were ~5% of the instructions of such a start, callgrind)."""
    stderr, modules = _start_modules(None, "-p", "-1", "-m", "-1", "-js", "-sd", str(tmp_path / "store"))
    assert "Starting http monitor" in stderr, stderr
    assert "pyjetstream.server.monitor" in modules
    late = ("pyjetstream.server.dashboard", "encodings.idna", "importlib.resources", "tempfile", "pyjetstream.api.kv")
    assert not [m for m in modules if m in late or m.startswith(tuple(n + "." for n in late))]


def test_a_start_recovering_a_consumer_imports_no_file_tree_tools(tmp_path: Path) -> None:
    """A start with a durable consumer to recover imports the consumer machinery (its store
    among it), but not what only a consumer's delete uses: shutil, and with it bz2 and lzma; nor
    the advisories' models (`pyjetstream.api.advisories`, 23 msgspec Structs, ~5M instructions:
    1% of such a restart), which the consumer, its acks and its priority groups import when they
    first advise; the package's modules bounded by `MAX_CONSUMER_START_MODULES`."""
    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\njetstream {{\n  store_dir: "{tmp_path / "store"}"\n}}\n')
    _create_stream(conf, tmp_path, consumer=True)
    _, modules = _start_modules(conf)
    assert "pyjetstream.server.jetstream.store.consumer_store" in modules  # (the consumer was recovered)
    assert not modules & {"shutil", "bz2", "lzma", "tempfile"}, sorted(modules & {"shutil", "bz2", "lzma", "tempfile"})
    assert "pyjetstream.api.advisories" not in modules
    assert not modules & set(NO_START_LIBRARIES), sorted(modules & set(NO_START_LIBRARIES))
    package = [m for m in modules if m.startswith("pyjetstream")]
    assert len(package) <= MAX_CONSUMER_START_MODULES, len(package)


def test_dataclasses_have_their_own_docstring() -> None:
    """``@dataclass`` gives a class without a docstring one made from ``inspect.signature(cls)``,
    ~0.1 ms per class at every start (13 of a start's 55 dataclasses had none). Counted in classes:
    the server's, the API's, the protocol's and ``serve``'s."""
    import dataclasses
    import importlib
    import inspect
    import pkgutil

    import pyjetstream

    undocumented = []
    for info in pkgutil.walk_packages(pyjetstream.__path__, "pyjetstream."):
        if not info.name.startswith(("pyjetstream.server", "pyjetstream.api", "pyjetstream.protocol", "pyjetstream.cli.serve")):
            continue
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == info.name:
                if (cls.__doc__ or "").startswith(cls.__name__ + "("):
                    undocumented.append(f"{info.name}.{cls.__qualname__}")
    assert not undocumented, undocumented


# The module whose dataclasses a start makes: the protocol's events (compiled by mypyc into native
# classes). Every other value type a start defines is a msgspec Struct or a plain class: a
# ``@dataclass`` costs ~0.7M instructions to make at every start even with its methods' code cached
# (`cli.generated_code`), a Struct ~0.13M (callgrind, five fields); 33 of them went from a start
# recovering a consumer, 488.0M -> 476.7M instructions for the restart of 100,000 pending acks, and
# options.py's 16 (``ServerOptions`` with its 74 fields), 417.0M -> 404.0M for a start to its first
# answer (session 26).
DATACLASS_MODULES = ("pyjetstream.protocol.events",)
# Those modules' dataclasses (11 events).
MAX_START_DATACLASSES = 11


def test_a_start_makes_no_dataclass_but_the_events(tmp_path: Path) -> None:
    """Counted in classes: the dataclasses defined by the package's modules a start recovering a
    stream and a durable consumer imports (a configuration file, as the benchmarks start it)."""
    import dataclasses
    import importlib
    import inspect

    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\njetstream {{\n  store_dir: "{tmp_path / "store"}"\n}}\n')
    _create_stream(conf, tmp_path, consumer=True)
    _, modules = _start_modules(conf)
    assert "pyjetstream.server.jetstream.store.consumer_store" in modules  # (the consumer was recovered)
    made: dict[str, list[str]] = {}
    for name in sorted(m for m in modules if m.startswith("pyjetstream")):
        for cls in vars(importlib.import_module(name)).values():
            if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == name:
                made.setdefault(name, []).append(cls.__qualname__)
    others = {name: classes for name, classes in made.items() if name not in DATACLASS_MODULES}
    assert not others, others
    assert sum(len(classes) for classes in made.values()) <= MAX_START_DATACLASSES, made
