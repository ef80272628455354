"""NATS servers for test suites: the embedded server on a thread, a nats-server binary, or a fixed URL.

The pytest plugin ([`pyjetstream.testing.plugin`][pyjetstream.testing.plugin]) uses these, and so can any test harness:

    from pyjetstream.testing import ServerSpec, start_test_server

    srv = start_test_server(ServerSpec(auth={"token": "s3cret"}), workdir)
    nc = await pjs.connect(srv.url, **srv.connect_options)
    ...
    srv.clean()          # delete every stream (KV and object buckets are streams too)
    srv.stop()

Every kind is configured the same way, by a NATS configuration (the format both servers read):
the spec's settings are rendered into one config file, so a suite run against the embedded
server and against ``nats-server`` sees the same configuration.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyjetstream.testing.process import ServerProcess, read_ports_file

__all__ = [
    "BinaryTestServer",
    "EmbeddedTestServer",
    "ExternalTestServer",
    "ServerSpec",
    "TestNames",
    "TestServer",
    "render_config",
    "start_test_server",
]

START_TIMEOUT = 30.0

EMBEDDED = "embedded"
BINARY = "nats-server"
EXTERNAL = "external"


# --- configuration ---------------------------------------------------------------------------------


def _conf_value(value: Any, indent: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Mapping):
        inner = indent + "  "
        body = "\n".join(f"{inner}{_conf_key(k)}: {_conf_value(v, inner)}" for k, v in value.items())
        return "{\n" + body + "\n" + indent + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_conf_value(v, indent) for v in value) + "]"
    return json.dumps(str(value))


def _conf_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def render_config(settings: Mapping[str, Any]) -> str:
    """Render plain values as a NATS configuration file (dicts are blocks, lists arrays)."""
    return "".join(f"{_conf_key(k)}: {_conf_value(v, '')}\n" for k, v in settings.items())


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``, blocks merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class ServerSpec:
    """What a test needs from its server: the ``@pytest.mark.nats_server(...)`` arguments.

    ``jetstream``: JetStream on (the default) or off. ``config``: NATS configuration, as text
    (the config-file format) or a dict of the same keys (``{"max_payload": 65536}``), applied over
    the defaults. ``auth``: the ``authorization`` block (``{"token": "s3cret"}``,
    ``{"user": "a", "password": "b"}`` or ``{"users": [...]}``); the fixtures' clients connect with
    its first credentials.
    """

    jetstream: bool = True
    config: str | Mapping[str, Any] | None = None
    auth: Mapping[str, Any] | None = None

    def key(self) -> str:
        """A stable identity: tests whose specs have the same key share one server."""
        config = self.config if isinstance(self.config, str) or self.config is None else dict(self.config)
        return json.dumps([self.jetstream, config, self.auth], sort_keys=True, default=str)

    @property
    def is_default(self) -> bool:
        return self.jetstream and not self.config and not self.auth

    def settings(self, store_dir: Path) -> dict[str, Any]:
        """The full configuration: a random loopback port, the store directory, then the spec."""
        settings: dict[str, Any] = {"host": "127.0.0.1", "port": -1}
        if self.jetstream:
            settings["jetstream"] = {"store_dir": str(store_dir)}
        if self.config:
            if isinstance(self.config, str):
                # Deferred: pytest loads this plugin in every session; the server/client load only when used.
                from pyjetstream.server.conf import parse

                extra = parse(self.config)
            else:
                extra = dict(self.config)
            if not self.jetstream:
                extra.pop("jetstream", None)
            settings = _merge(settings, extra)
        if self.auth:
            settings = _merge(settings, {"authorization": dict(self.auth)})
        return settings

    def connect_options(self) -> dict[str, Any]:
        """Credentials for ``pjs.connect(url, **options)`` taken from ``auth``."""
        auth = dict(self.auth or {})
        if auth.get("token"):
            return {"token": str(auth["token"])}
        if auth.get("user"):
            return {"user": str(auth["user"]), "password": str(auth.get("password", ""))}
        users = auth.get("users") or []
        if users:
            first = users[0]
            if first.get("nkey"):
                raise ValueError("nkey users need a seed: connect with nkeys_seed= yourself")
            return {"user": str(first["user"]), "password": str(first.get("password", ""))}
        return {}


# --- names ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestNames:
    """Names for what tests create on a server, all beginning with one prefix (a session's).

    ``names("ORDERS")`` is ``<prefix>ORDERS``: a stream, a KV bucket or an object store of that
    name (and, by habit, subjects under it: ``f"{names('ORDERS')}.*"``) is the tests'. On a server
    the tests did not start, only those are deleted ([`owns`][] tells them apart), so tests can
    share a server with streams that are not theirs, and test sessions can share it with each other.
    """

    __test__ = False  # not a pytest test class

    prefix: str

    @classmethod
    def new(cls) -> TestNames:
        """A prefix no other session has: ``pytest_`` and 8 random hex digits, then ``_``."""
        return cls(f"pytest_{secrets.token_hex(4)}_")

    def __call__(self, name: str) -> str:
        return self.prefix + name

    def owns(self, stream: str) -> bool:
        """Whether ``stream`` is one of these names, or the stream of a KV bucket or object store of one."""
        for kind in ("", "KV_", "OBJ_"):
            if stream.startswith(kind + self.prefix):
                return True
        return False


# --- servers ---------------------------------------------------------------------------------------


@dataclass
class TestServer:
    """A running server for tests: ``url``, ``connect_options`` for clients, ``clean()``, ``stop()``."""

    __test__ = False  # not a pytest test class

    kind: str
    url: str
    spec: ServerSpec = field(default_factory=ServerSpec)
    connect_options: dict[str, Any] = field(default_factory=dict)
    store_dir: Path | None = None
    #: ``ws://host:port`` when the configuration has a ``websocket {}`` block (for nats.ws / nats.js apps)
    websocket_url: str = ""
    #: ``http://host:port`` when the configuration sets ``http_port`` (monitoring; on the embedded
    #: server the dashboard is at its ``/``), e.g. ``@pytest.mark.nats_server(config={"http_port": -1})``
    monitor_url: str = ""
    _admin: Any = field(default=None, repr=False)

    @property
    def jetstream(self) -> bool:
        return self.spec.jetstream

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def connect_sync(self, **options: Any) -> Any:
        """A blocking client (``pjs.sync``) connected with the server's credentials."""
        # Deferred: pytest loads this plugin in every session; the server/client load only when used.
        from pyjetstream.client.jetstream import sync

        return sync.connect(self.url, **{**self.connect_options, **options})

    def clean(self, prefix: str | None = None) -> list[str]:
        """Delete streams of the account (KV and object buckets are streams); returns their names.

        With ``prefix``: only those a [`TestNames`][] of that prefix named (the stream
        ``<prefix>X``, the KV bucket's ``KV_<prefix>X``, the object store's ``OBJ_<prefix>X``);
        without: every stream (a server started for the tests holds nothing else).

        A clean slate costs one ``$JS.API.STREAM.NAMES`` request when there is nothing to delete, so
        it can run before every test instead of a server restart.
        """
        if not self.jetstream:
            return []
        if self._admin is None:
            self._admin = self.connect_sync(name="pyjetstream-testing-admin", max_reconnect_attempts=-1)
        js = self._admin.jetstream()
        owned = TestNames(prefix).owns if prefix is not None else None
        names = [name for name in js.stream_names() if owned is None or owned(name)]
        for name in names:
            js.delete_stream(name)
        return names

    def _close_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def stop(self) -> None:
        """Close the admin connection; the subclasses also stop a server the tests started (one you run stays)."""
        self._close_admin()


@dataclass
class EmbeddedTestServer(TestServer):
    """The embedded server on its own thread and event loop ([`pyjetstream.ServerThread`][pyjetstream.ServerThread])."""

    thread: Any = None

    @property
    def server(self) -> Any:
        """The [`pyjetstream.Server`][pyjetstream.Server] itself (its options, JetStream engine, monitoring)."""
        return self.thread.server

    def stop(self) -> None:
        """Stop the embedded server and its thread."""
        super().stop()
        if self.thread is not None:
            self.thread.stop()
            self.thread = None


@dataclass
class BinaryTestServer(TestServer):
    """A ``nats-server`` executable started with the same configuration file."""

    process: ServerProcess | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.process.proc if self.process is not None else None

    @property
    def log_path(self) -> Path | None:
        return self.process.log_path if self.process is not None else None

    def read_log(self) -> str:
        """The nats-server process's log so far."""
        return self.process.read_log() if self.process is not None else ""

    def stop(self) -> None:
        """Stop the nats-server process."""
        super().stop()
        if self.process is not None:
            self.process.stop()


@dataclass
class ExternalTestServer(TestServer):
    """A server someone else runs (``--nats-server-url``): used as it is, never started or stopped.

    Its streams are not the tests' to delete: [`clean`][] takes the prefix of the streams the
    tests named ([`TestNames`][]), or ``everything=True`` (for a server, or an account, kept for
    the tests alone).
    """

    def clean(self, prefix: str | None = None, *, everything: bool = False) -> list[str]:
        """Delete the streams named with ``prefix`` (KV and object buckets included), or with ``everything=True``
        every stream of the account: never all of a server you run by default."""
        if prefix is None and not everything:
            raise ValueError(
                f"{self.url} is a server the tests did not start: clean(prefix) deletes the streams "
                "named with that prefix, clean(everything=True) every stream of the account"
            )
        return super().clean(prefix)


def _start_embedded(spec: ServerSpec, workdir: Path) -> EmbeddedTestServer:
    # Deferred: pytest loads this plugin in every session; the server/client load only when used.
    from pyjetstream.server.conf import config_to_options
    from pyjetstream.server.thread import ServerThread

    store = workdir / "store"
    options = config_to_options(spec.settings(store))
    thread = ServerThread(options).start()
    return EmbeddedTestServer(
        kind=EMBEDDED,
        url=thread.client_url,
        spec=spec,
        connect_options=spec.connect_options(),
        store_dir=store if spec.jetstream else None,
        websocket_url=thread.server.websocket_url,
        monitor_url=thread.server.monitor_url,
        thread=thread,
    )


def _start_binary(spec: ServerSpec, workdir: Path, binary: str) -> BinaryTestServer:
    exe = shutil.which(binary) or binary
    store = workdir / "store"
    conf = workdir / "server.conf"
    conf.write_text(render_config(spec.settings(store)))
    ports_dir = workdir / "ports"
    shutil.rmtree(ports_dir, ignore_errors=True)
    ports_dir.mkdir(parents=True)
    process = ServerProcess([exe, "-c", str(conf), "--ports_file_dir", str(ports_dir)], workdir / "server.log")
    srv = BinaryTestServer(
        kind=BINARY,
        url="",
        spec=spec,
        connect_options=spec.connect_options(),
        store_dir=store if spec.jetstream else None,
        process=process,
    )

    def ready() -> bool:
        ports = read_ports_file(ports_dir)
        if ports is None:
            return False
        srv.url = "nats://" + ports["nats"][0].split("://", 1)[-1]
        srv.websocket_url = (ports.get("websocket") or [""])[0]
        srv.monitor_url = (ports.get("monitoring") or [""])[0]
        return True

    if process.start(ready, START_TIMEOUT, poll=0.02):
        return srv
    srv.stop()
    raise RuntimeError(f"{exe} did not start:\n{srv.read_log()}")


def start_test_server(
    spec: ServerSpec | None = None,
    workdir: str | os.PathLike[str] | None = None,
    *,
    binary: str | None = None,
) -> TestServer:
    """Start a server for ``spec``: the embedded one, or the ``binary`` (a ``nats-server`` path or name).

    ``workdir`` holds the store directory (and the binary's config file and log); a temporary
    directory is made when it is omitted.
    """
    spec = spec or ServerSpec()
    if workdir is None:
        workdir = tempfile.mkdtemp(prefix="pyjetstream-test-")
    path = Path(workdir)
    path.mkdir(parents=True, exist_ok=True)
    if binary:
        return _start_binary(spec, path, binary)
    return _start_embedded(spec, path)
