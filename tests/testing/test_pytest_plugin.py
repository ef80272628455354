"""The pytest plugin, as a user meets it: a user's test file run by pytest, against each kind of server.

The same file runs against the embedded server (the default), a nats-server binary started by the
plugin (``--nats-server-binary``) and a server someone else runs (``--nats-server-url``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.targets import Target, make_target, nats_server_binary

pytestmark = pytest.mark.xdist_group("pytester")

USER_TESTS = '''
from pathlib import Path

import pytest
import pyjetstream as pjs


async def test_async_publish(js):
    await js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    ack = await js.publish("ORDERS.new", b"hello")
    assert (ack.stream, ack.seq) == ("ORDERS", 1)
    kv = await js.create_key_value(pjs.KeyValueConfig(bucket="settings"))
    await kv.put("color", b"blue")
    obj = await js.create_object_store(pjs.ObjectStoreConfig(bucket="files"))
    await obj.put_bytes("a.txt", b"abc")


async def test_clean_slate_async(js):
    # the previous test's stream, KV bucket and object bucket are gone
    assert [name async for name in js.stream_names()] == []
    await js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    assert (await js.publish("ORDERS.new", b"again")).seq == 1


def test_sync_client(js, nc, nats_url):
    assert list(js.stream_names()) == []
    stream = js.create_stream(pjs.StreamConfig(name="SYNC", subjects=["sync.>"]))
    for i in range(3):
        js.publish("sync.x", str(i).encode())
    consumer = stream.create_or_update_consumer(
        pjs.ConsumerConfig(durable="C", ack_policy=pjs.AckPolicy.EXPLICIT)
    )
    got = []
    for msg in consumer.fetch(3, max_wait=5):
        got.append(msg.data)
        msg.ack()
    assert got == [b"0", b"1", b"2"]
    assert nc.is_connected and nats_url.startswith("nats://")


async def test_core_nats(nc):
    sub = await nc.subscribe("greet")
    await nc.publish("greet", b"hi")
    msg = await sub.next_msg(timeout=5)
    assert msg.data == b"hi"


@pytest.mark.nats_server(auth={"token": "s3cret"})
async def test_token_auth(nc, nats_server):
    assert nats_server.connect_options == {"token": "s3cret"}
    with pytest.raises(Exception):
        await pjs.connect(nats_server.url, reconnect=False, connect_timeout=5)
    assert nc.is_connected


@pytest.mark.nats_server(jetstream=False)
async def test_core_only(nc, nats_server):
    assert not nats_server.jetstream
    with pytest.raises(pjs.errors.JetStreamNotEnabled):
        await pjs.jetstream(nc).account_info()


@pytest.mark.nats_server(config={"max_payload": 1024})
async def test_config_dict(nc):
    assert nc.max_payload == 1024


@pytest.mark.nats_server(config="max_payload: 2048\\njetstream { max_memory_store: 1MB }")
async def test_config_text(nc, js):
    assert nc.max_payload == 2048
    # the jetstream block was merged with the plugin's (store_dir): 1 MB of memory storage in all
    big = pjs.StreamConfig(name="BIG", storage=pjs.StorageType.MEMORY, max_bytes=2 * 1024 * 1024)
    with pytest.raises(pjs.errors.JetStreamError, match="insufficient"):
        await js.create_stream(big)


@pytest.mark.nats_server(config={"websocket": {"host": "127.0.0.1", "port": -1, "no_tls": True}})
def test_websocket_listener(nats_server):
    import socket
    assert nats_server.websocket_url.startswith("ws://127.0.0.1:")
    host, port = nats_server.websocket_url.split("://")[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"GET / HTTP/1.1\\r\\nHost: {host}:{port}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n".encode()
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 101 ")


def test_same_server_for_the_session(nats_server, nats_servers):
    assert nats_servers.get(kind=nats_server.kind) is nats_server
'''

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_TESTS)
    # -p is a no-op once the entry point is installed (the entry point has the module's name)
    return pytester.runpytest_subprocess("-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", *args)


def test_user_suite_on_the_embedded_server(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-v")
    result.assert_outcomes(passed=10)


def test_user_suite_on_a_nats_server_binary(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-v", f"--nats-server-binary={nats_server_binary()}")
    result.assert_outcomes(passed=10)


def test_user_suite_on_both_kinds_in_one_run(pytester: pytest.Pytester) -> None:
    """``--nats-server-kinds=embedded,nats-server``: every NATS test runs on each, as pyjetstream's suite does."""
    result = _run(pytester, "-v", "--nats-server-kinds=embedded,nats-server")
    result.assert_outcomes(passed=20)
    result.stdout.fnmatch_lines(["*test_async_publish?embedded? PASSED*", "*test_async_publish?nats-server? PASSED*"])


def test_user_suite_on_a_running_server(pytester: pytest.Pytester, tmp_path) -> None:
    target: Target = make_target("nats-server", tmp_path / "srv")
    try:
        result = _run(pytester, "-v", f"--nats-server-url={target.url}")
    finally:
        target.stop()
    # the five tests that ask for another configuration cannot be served by a fixed server
    result.assert_outcomes(passed=5, skipped=5)


def test_ini_options(pytester: pytest.Pytester) -> None:
    pytester.makefile(".conf", limits="max_payload: 4096\n")
    pytester.makeini(INI + "nats_server_config = limits.conf\nnats_server_clean = false\n")
    pytester.makepyfile(
        test_ini="""
import pyjetstream as pjs

async def test_one(nc, js):
    assert nc.max_payload == 4096
    await js.create_stream(pjs.StreamConfig(name="KEEP"))

def test_two(js):
    assert list(js.stream_names()) == ["KEEP"]   # nats_server_clean = false
"""
    )
    result = pytester.runpytest_subprocess("-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def _doc_example() -> str:
    """The complete example of docs/pytest-plugin.md (its first Python block), as a user would copy it."""
    text = (Path(__file__).parents[2] / "docs" / "pytest-plugin.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("how", ["embedded", "nats-server", "url", "both"])
def test_documented_example(pytester: pytest.Pytester, tmp_path: Path, how: str) -> None:
    pytester.makefile(
        ".toml",
        pyproject='[tool.pytest.ini_options]\nasyncio_mode = "auto"\nasyncio_default_fixture_loop_scope = "function"\n',
    )
    pytester.makepyfile(test_orders=_doc_example())
    args = ["-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", "-v"]
    if how == "nats-server":
        args.append(f"--nats-server-binary={nats_server_binary()}")
    if how == "both":
        args.append("--nats-server-kinds=embedded,nats-server")
    target = make_target("nats-server", tmp_path / "srv") if how == "url" else None
    try:
        if target is not None:
            args.append(f"--nats-server-url={target.url}")
        result = pytester.runpytest_subprocess(*args)
    finally:
        if target is not None:
            target.stop()
    if how == "url":
        result.assert_outcomes(passed=4, skipped=2)
    elif how == "both":
        result.assert_outcomes(passed=12)
    else:
        result.assert_outcomes(passed=6)


def test_strict_asyncio_mode(pytester: pytest.Pytester) -> None:
    """pytest-asyncio's default (strict) mode: async tests are marked, the plugin's async fixtures still work."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_strict="""
import pytest
import pyjetstream as pjs

@pytest.mark.asyncio
async def test_marked(js, nc):
    await js.create_stream(pjs.StreamConfig(name="S", subjects=["s"]))
    assert (await js.publish("s", b"x")).seq == 1
    assert nc.is_connected

def test_plain(js):
    assert list(js.stream_names()) == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
