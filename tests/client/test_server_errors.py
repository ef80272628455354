"""Stale connections and -ERR handling, against a scripted server (a real socket, chosen misbehaviour)."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.client.conftest import wait_until
from tests.client.scripted_server import ScriptedServer

from pyjetstream.client import (
    AuthorizationError,
    PermissionsViolationError,
    ProtocolError,
    StaleConnectionError,
    TimeoutError,
    connect,
)


async def test_unanswered_pings_mean_stale_then_reconnect() -> None:
    server = await ScriptedServer(answer_pings=False).start()
    errors: list[Exception] = []
    events: list[str] = []
    nc = await connect(
        server.url,
        ping_interval=0.05,
        max_outstanding_pings=2,
        reconnect_time_wait=0.01,
        error_cb=errors.append,
        disconnected_cb=lambda: events.append("disconnected"),
        reconnected_cb=lambda: events.append("reconnected"),
    )
    try:
        await wait_until(lambda: "reconnected" in events, what="stale detection and reconnect")
        assert any(isinstance(e, StaleConnectionError) for e in errors)
        assert server.connections >= 2
        assert sum(1 for line in server.lines if line == b"PING\r\n") >= 4
    finally:
        await nc.close()
        await server.stop()


async def test_err_stale_connection_reconnects() -> None:
    server = await ScriptedServer().start()
    reconnected = asyncio.Event()
    nc = await connect(server.url, reconnect_time_wait=0.01, reconnected_cb=reconnected.set)
    try:
        await nc.subscribe("kept")
        await nc.flush()
        server.send_all(b"-ERR 'Stale Connection'\r\n")
        server.drop_all()
        await asyncio.wait_for(reconnected.wait(), 10)
        await nc.flush()
        assert sum(1 for line in server.lines if line.startswith(b"SUB kept")) == 2
        assert nc.is_connected
    finally:
        await nc.close()
        await server.stop()


async def test_permissions_violation_is_reported_not_fatal() -> None:
    server = await ScriptedServer().start()
    errors: list[Exception] = []
    nc = await connect(server.url, error_cb=errors.append)
    try:
        server.send_all(b"-ERR 'Permissions Violation for Publish to \"secret\"'\r\n")
        await wait_until(lambda: bool(errors))
        assert isinstance(errors[0], PermissionsViolationError)
        assert "secret" in str(errors[0])
        await nc.flush()
        assert nc.is_connected
    finally:
        await nc.close()
        await server.stop()


async def test_fatal_err_then_close_closes_the_client() -> None:
    server = await ScriptedServer().start()
    errors: list[Exception] = []
    closed = asyncio.Event()
    nc = await connect(server.url, error_cb=errors.append, closed_cb=closed.set, reconnect_time_wait=0.01)
    try:
        server.send_all(b"-ERR 'Unknown Protocol Operation'\r\n")
        await wait_until(lambda: bool(errors))
        server.drop_all()
        await asyncio.wait_for(closed.wait(), 10)
        assert isinstance(errors[0], ProtocolError)
        assert server.connections == 1  # no reconnect to repeat the offence
    finally:
        await nc.close()
        await server.stop()


async def test_auth_error_during_handshake() -> None:
    server = await ScriptedServer({"auth_required": True}).start()
    server.handshake_error = "Authorization Violation"
    try:
        with pytest.raises(AuthorizationError):
            await connect(server.url)
    finally:
        await server.stop()


async def test_connect_options_sent() -> None:
    server = await ScriptedServer().start()
    nc = await connect(server.url, name="me", no_echo=True, pedantic=True)
    try:
        connect_line = next(line for line in server.lines if line.startswith(b"CONNECT "))
        options = json.loads(connect_line[8:])
        assert options["name"] == "me"
        assert options["echo"] is False and options["pedantic"] is True and options["verbose"] is False
        assert options["headers"] is True and options["no_responders"] is True
        assert options["protocol"] == 1 and options["lang"]
        assert "user" not in options and "auth_token" not in options
    finally:
        await nc.close()
        await server.stop()


async def test_no_headers_without_server_support() -> None:
    server = await ScriptedServer({"headers": False}).start()
    nc = await connect(server.url)
    try:
        connect_line = next(line for line in server.lines if line.startswith(b"CONNECT "))
        options = json.loads(connect_line[8:])
        assert options["headers"] is False and options["no_responders"] is False
    finally:
        await nc.close()
        await server.stop()


async def test_server_ping_is_answered() -> None:
    server = await ScriptedServer().start()
    nc = await connect(server.url)
    try:
        reader_seen = len(server.lines)
        server.send_all(b"PING\r\n")
        await wait_until(lambda: b"PONG\r\n" in server.lines[reader_seen:], what="PONG from the client")
    finally:
        await nc.close()
        await server.stop()


async def test_async_info_updates_and_discovers() -> None:
    server = await ScriptedServer().start()
    discovered = asyncio.Event()
    nc = await connect(server.url, discovered_server_cb=discovered.set)
    try:
        info = {**server.info, "connect_urls": ["127.0.0.1:1", "10.0.0.2:4222"], "max_payload": 2048}
        server.send_all(b"INFO " + json.dumps(info).encode() + b"\r\n")
        await asyncio.wait_for(discovered.wait(), 5)
        assert nc.max_payload == 2048
        assert sorted(nc.discovered_servers) == ["nats://10.0.0.2:4222", "nats://127.0.0.1:1"]
    finally:
        await nc.close()
        await server.stop()


async def test_timed_out_flush_does_not_release_a_later_one() -> None:
    """Each PONG answers exactly one PING: a flush that timed out still consumes its own PONG."""
    server = await ScriptedServer(answer_pings=False).start()
    nc = await connect(server.url, ping_interval=0)
    try:
        with pytest.raises(TimeoutError):
            await nc.flush(timeout=0.05)
        later = asyncio.ensure_future(nc.flush(timeout=5))
        await wait_until(lambda: server.lines.count(b"PING\r\n") == 3, what="both flush PINGs")
        server.send_all(b"PONG\r\n")  # answers the timed-out flush's PING
        await wait_until(lambda: len(nc._pongs) == 1, what="first PONG processed")
        assert not later.done()
        server.send_all(b"PONG\r\n")
        await later
    finally:
        await nc.close()
        await server.stop()


async def test_auth_expired_after_connect_closes_the_client() -> None:
    server = await ScriptedServer().start()
    errors: list[Exception] = []
    closed = asyncio.Event()
    nc = await connect(server.url, error_cb=errors.append, closed_cb=closed.set, reconnect_time_wait=0.01)
    try:
        server.send_all(b"-ERR 'User Authentication Expired'\r\n")
        server.drop_all()
        await asyncio.wait_for(closed.wait(), 10)
        assert [type(e) for e in errors] == [AuthorizationError]
        assert server.connections == 1
    finally:
        await nc.close()
        await server.stop()


async def test_auth_refused_on_reconnect_gives_up() -> None:
    server = await ScriptedServer().start()
    errors: list[Exception] = []
    closed = asyncio.Event()
    nc = await connect(server.url, error_cb=errors.append, closed_cb=closed.set, reconnect_time_wait=0.01)
    try:
        server.handshake_error = "Authorization Violation"
        server.drop_all()
        await asyncio.wait_for(closed.wait(), 10)
        # The same auth error twice in a row from a server removes it from the pool (nats.go rule).
        assert [type(e).__name__ for e in errors] == [
            "AuthorizationError",
            "AuthorizationError",
            "NoServersError",
        ]
        assert server.connections == 3
    finally:
        await nc.close()
        await server.stop()
