"""The pytest plugin, as a user meets it: a user's test file run by pytest, against each kind of server.

The same file runs against the embedded server (the default), a nats-server binary started by the
plugin (``--nats-server-binary``) and a server someone else runs (``--nats-server-url``).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from tests.support.targets import KINDS, Target, make_target, nats_server_binary

from pyjetstream.client.jetstream import sync
from pyjetstream.client.jetstream.config import StreamConfig
from pyjetstream.client.jetstream.kv import KeyValueConfig
from pyjetstream.client.jetstream.object_store import ObjectStoreConfig
from pyjetstream.testing.plugin import _session_names

pytestmark = pytest.mark.xdist_group("pytester")

USER_TESTS = '''
from pathlib import Path

import pytest
import pyjetstream as pjs


async def test_async_publish(js, nats_names):
    orders = nats_names("ORDERS")
    await js.create_stream(pjs.StreamConfig(name=orders, subjects=[f"{orders}.*"]))
    ack = await js.publish(f"{orders}.new", b"hello")
    assert (ack.stream, ack.seq) == (orders, 1)
    kv = await js.create_key_value(pjs.KeyValueConfig(bucket=nats_names("settings")))
    await kv.put("color", b"blue")
    obj = await js.create_object_store(pjs.ObjectStoreConfig(bucket=nats_names("files")))
    await obj.put_bytes("a.txt", b"abc")


async def test_clean_slate_async(js, nats_names):
    # the previous test's stream, KV bucket and object bucket are gone
    assert [name async for name in js.stream_names() if nats_names.owns(name)] == []
    orders = nats_names("ORDERS")
    await js.create_stream(pjs.StreamConfig(name=orders, subjects=[f"{orders}.*"]))
    assert (await js.publish(f"{orders}.new", b"again")).seq == 1


def test_sync_client(js, nc, nats_url, nats_names):
    assert [name for name in js.stream_names() if nats_names.owns(name)] == []
    sync = nats_names("SYNC")
    stream = js.create_stream(pjs.StreamConfig(name=sync, subjects=[f"{sync}.>"]))
    for i in range(3):
        js.publish(f"{sync}.x", str(i).encode())
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


@pytest.mark.nats_server(config={"http_port": -1})
def test_monitoring_and_the_dashboard(nats_server):
    import urllib.request
    assert nats_server.monitor_url.startswith("http://")
    with urllib.request.urlopen(nats_server.monitor_url + "/varz", timeout=10) as resp:
        assert resp.status == 200
    with urllib.request.urlopen(nats_server.monitor_url + "/", timeout=10) as resp:
        page = resp.read()
    assert (b"dashboard/static/app.js" in page) == (nats_server.kind == "embedded")


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
    result.assert_outcomes(passed=11)


def test_user_suite_on_a_nats_server_binary(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-v", f"--nats-server-binary={nats_server_binary()}")
    result.assert_outcomes(passed=11)


def test_user_suite_on_both_kinds_in_one_run(pytester: pytest.Pytester) -> None:
    """``--nats-server-kinds=embedded,nats-server``: every NATS test runs on each, as pyjetstream's suite does."""
    result = _run(pytester, "-v", "--nats-server-kinds=embedded,nats-server")
    result.assert_outcomes(passed=22)
    result.stdout.fnmatch_lines(["*test_async_publish?embedded? PASSED*", "*test_async_publish?nats-server? PASSED*"])


def test_user_suite_on_a_running_server(pytester: pytest.Pytester, tmp_path) -> None:
    target: Target = make_target("nats-server", tmp_path / "srv")
    try:
        result = _run(pytester, "-v", f"--nats-server-url={target.url}")
    finally:
        target.stop()
    # the five tests that ask for another configuration cannot be served by a fixed server
    result.assert_outcomes(passed=5, skipped=6)


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


def _doc_example(section: str = "") -> str:
    """An example of docs/pytest-plugin.md (the first Python block, or the first after the heading
    ``section``), as a user would copy it."""
    text = (Path(__file__).parents[2] / "docs" / "pytest-plugin.md").read_text()
    if section:
        text = text.split(f"\n## {section}\n", 1)[1]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("how", ["embedded", "nats-server", "url", "both"])
def test_documented_example(pytester: pytest.Pytester, tmp_path: Path, how: str) -> None:
    pytester.makefile(
        ".toml",
        pyproject='[tool.pytest.ini_options]\nasyncio_mode = "auto"\nasyncio_default_fixture_loop_scope = "function"\n',
    )
    pytester.makepyfile(test_orders=_doc_example())
    if how == "url":  # the example of "A server you run", on a server that holds streams of its own
        pytester.makepyfile(test_orders=_doc_example("A server you run"))
    args = ["-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", "-v"]
    if how == "nats-server":
        args.append(f"--nats-server-binary={nats_server_binary()}")
    if how == "both":
        args.append("--nats-server-kinds=embedded,nats-server")
    target = make_target("nats-server", tmp_path / "srv") if how == "url" else None
    try:
        if target is not None:
            _fill(target.url)
            args.append(f"--nats-server-url={target.url}")
        result = pytester.runpytest_subprocess(*args)
        if target is not None:
            assert set(_streams(target.url)) == THEIRS
    finally:
        if target is not None:
            target.stop()
    if how == "url":
        result.assert_outcomes(passed=2)
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


# ------------------------------------------- a server the plugin did not start keeps what is not the tests'

THEIRS = {"ORDERS", "KV_settings", "OBJ_files", "pytest_deadbeef_OLD"}  # the last: another session's

GUEST_TESTS = """
import pyjetstream as pjs

THEIRS = {"ORDERS", "KV_settings", "OBJ_files", "pytest_deadbeef_OLD"}


def test_sees_the_servers_streams(js):
    assert THEIRS <= set(js.stream_names())


def test_creates_its_own(js, nats_names):
    mine = nats_names("MINE")
    js.create_stream(pjs.StreamConfig(name=mine, subjects=[f"{mine}.>"]))
    js.publish(f"{mine}.x", b"mine")
    js.create_key_value(pjs.KeyValueConfig(bucket=nats_names("kv"))).put("k", b"v")
    js.create_object_store(pjs.ObjectStoreConfig(bucket=nats_names("obj"))).put_bytes("o", b"o")
    js.create_stream(pjs.StreamConfig(name="UNNAMED", subjects=["unnamed.>"]))


def test_its_own_are_gone_before_the_next_test(js, nats_names):
    names = set(js.stream_names())
    assert [n for n in names if nats_names.owns(n)] == []
    assert THEIRS | {"UNNAMED"} <= names          # a name of its own is not the plugin's to delete


def test_leaves_one_for_the_end(js, nats_names):
    last = nats_names("LAST")
    js.create_stream(pjs.StreamConfig(name=last, subjects=[last]))
"""


def _fill(url: str) -> None:
    """What someone keeps on their server: a stream with a message, a KV bucket, an object store, and
    a stream another test session named."""
    with sync.connect(url) as nc:
        js = nc.jetstream()
        js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        js.publish("ORDERS.new", b"order-1")
        js.create_key_value(KeyValueConfig(bucket="settings")).put("color", b"blue")
        js.create_object_store(ObjectStoreConfig(bucket="files")).put_bytes("a.txt", b"abc")
        js.create_stream(StreamConfig(name="pytest_deadbeef_OLD", subjects=["old.>"]))


def _streams(url: str) -> dict[str, int]:
    with sync.connect(url) as nc:
        js = nc.jetstream()
        return {info.config.name: info.state.messages for info in js.list_streams()}


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_you_run_keeps_what_is_not_the_tests(pytester: pytest.Pytester, tmp_path: Path, kind: str) -> None:
    """``--nats-server-url``: before each test and at the end the plugin deletes the streams, KV
    buckets and object stores named with ``nats_names`` — and nothing else (issue 26: it deleted
    eight streams of nine on the server it was pointed at)."""
    target = make_target(kind, tmp_path / "srv")
    try:
        _fill(target.url)
        pytester.makeini(INI)
        pytester.makepyfile(test_guest=GUEST_TESTS)
        result = pytester.runpytest_subprocess(
            "-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", f"--nats-server-url={target.url}"
        )
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(["*a server you run*only the streams, KV buckets and object stores named*"])
        after = _streams(target.url)
        # theirs, with their messages; the stream a test named itself; none of the session's own
        assert after == {"ORDERS": 1, "KV_settings": 1, "OBJ_files": 2, "pytest_deadbeef_OLD": 0, "UNNAMED": 0}
        with sync.connect(target.url) as nc:
            js = nc.jetstream()
            assert js.key_value("settings").get("color").value == b"blue"
            assert js.object_store("files").get_bytes("a.txt") == b"abc"

        # every stream of the account: an explicit opt-in
        pytester.makepyfile(
            test_all="def test_clean_slate(js):\n    assert list(js.stream_names()) == []\n"
        )
        result = pytester.runpytest_subprocess(
            "-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", "test_all.py",
            f"--nats-server-url={target.url}", "--nats-server-clean=all",
        )
        result.assert_outcomes(passed=1)
        assert _streams(target.url) == {}
    finally:
        target.stop()


def test_nats_names() -> None:
    class Config:
        workerinput = {"testrunuid": "0123456789abcdef", "workerid": "gw1"}

    names = _session_names(Config())  # type: ignore[arg-type]
    assert names.prefix == "pytest_01234567_gw1_"
    assert names("ORDERS") == "pytest_01234567_gw1_ORDERS"
    for stream in ("pytest_01234567_gw1_ORDERS", "KV_pytest_01234567_gw1_s", "OBJ_pytest_01234567_gw1_f"):
        assert names.owns(stream)
    for stream in ("ORDERS", "KV_settings", "pytest_01234567_gw0_ORDERS", "XKV_pytest_01234567_gw1_s"):
        assert not names.owns(stream)
    Config.workerinput["workerid"] = "gw0"
    assert _session_names(Config()).prefix != names.prefix  # type: ignore[arg-type]

    class Plain:
        pass

    one, two = _session_names(Plain()), _session_names(Plain())  # type: ignore[arg-type]
    assert re.fullmatch(r"pytest_[0-9a-f]{8}_", one.prefix) and one.prefix != two.prefix


# ------------------------------------------------- a server the tests cannot have: one usage error

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--nats-server-binary=/nonexistent"], "", "--nats-server-binary=/nonexistent: no such file or directory"),
        ([], "nats_server_binary = /nonexistent\n", "nats_server_binary = /nonexistent: no such file or directory"),
        (["--nats-server-binary=no-such-nats-server"], "", "*no-such-nats-server: not found on PATH"),
        (["--nats-server-binary=/bin/true"], "", "--nats-server-binary=/bin/true: not a nats-server*"),
        (["--nats-server-binary=data.txt"], "", "--nats-server-binary=data.txt: not an executable file"),
        (["--nats-server-binary=./garbage"], "", "--nats-server-binary=./garbage: cannot run it (exec format error)"),
        (["--nats-server-url=http://example.com"], "", "*'http://example.com' is not a NATS URL (nats://host:port)"),
        (["--nats-server-url=nats://127.0.0.1:PORT"], "", "*no NATS server answers (127.0.0.1:PORT: connection refused)"),
        (["--nats-server-kinds=embedded,nats"], "", "*unknown kind 'nats'*"),
        (["--nats-server-clean=some"], "", "*invalid choice: 'some'*"),
        ([], "nats_server_clean = some\n", "nats_server_clean = some: expected one of auto, all, none*"),
    ],
)
def test_a_server_it_cannot_have_is_one_usage_error(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    """Before any test runs, one line naming the option and what is wrong with its value; no test
    runs (issue 26: ``--nats-server-binary=/nonexistent`` was a FileNotFoundError traceback in every test)."""
    port = str(_free_port())
    args = [a.replace("PORT", port) for a in args]
    message = message.replace("PORT", port)
    pytester.makeini(INI + ini)
    pytester.makepyfile(test_user=USER_TESTS)
    (pytester.path / "data.txt").write_text("not a program\n")
    garbage = pytester.path / "garbage"
    garbage.write_bytes(b"\x00\x01not a program\n")
    garbage.chmod(0o755)
    result = pytester.runpytest_subprocess("-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"] if message.startswith("*") else [f"ERROR: {message}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_a_server_that_does_not_start_is_one_line_per_test(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A nats-server that runs but cannot start with the configuration: each test that needs it
    fails with the server's own words, started once, no traceback."""
    pytester.makeini(INI)
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.nats_server(config="no_such_option_anywhere: 1")
def test_one(nc):
    pass

@pytest.mark.nats_server(config="no_such_option_anywhere: 1")
def test_two(nc):
    pass
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "pyjetstream.testing.plugin", "-p", "no:cacheprovider", f"--nats-server-binary={nats_server_binary()}"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*nats-server did not start:", '*server.conf:*unknown field "no_such_option_anywhere"', "(the nats-server server*"]
    )
    assert "Traceback" not in result.stdout.str()
