"""Many accounts on one server (issue 24, bench_scale's ``--dim accounts``): what a CONNECT, a
publish into a stream or a ``$SYS`` request costs does not grow with the accounts configured.

`server_jetstream.ServerJetStream` holds the JetStream accounts' engines and their usage summed (nats-server's
``s.js``: ``js.accounts``, ``js.memUsed`` / ``js.storeUsed``): `Server.jetstream` no longer builds the
list of every account's engine (each CONNECT's INFO, each ``$SYS`` answer's header), and a publish's
check of the server-wide ``max_file_store`` / ``max_memory_store`` no longer sums every other
account's usage. Counted, not timed, on an embedded server in this process: the lines of the
server's Python run for an operation beside 100 and 1,000 accounts, and the engines a publish's
limit check counts (`ServerJetStream.counted`). The differential test proves the same answers
with the running sums on and off (`server_jetstream.TOTALS`), near the server's limits.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.support.steps import counting

import pyjetstream.server as server_package
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.server import monitor
from pyjetstream.server.conf.mapping import config_to_options
from pyjetstream.server.jetstream import engine as engine_module
from pyjetstream.server.jetstream import monitoring, server_jetstream
from pyjetstream.server.jetstream.stream_index import StreamIndex
from pyjetstream.server.server import Server

SERVER_CODE = str(Path(server_package.__file__).parent)


def _config(n: int) -> dict[str, Any]:
    """``n`` accounts ``A<i>`` with a user ``u<i>`` (password ``p<i>``) and JetStream each, and a
    system account ``SYS``; no credentials: the last account's user."""
    accounts: dict[str, Any] = {"SYS": {"users": [{"user": "sys", "password": "sys"}]}}
    for i in range(n):
        accounts[f"A{i}"] = {"users": [{"user": f"u{i}", "password": f"p{i}"}], "jetstream": "enabled"}
    return {"accounts": accounts, "system_account": "SYS", "no_auth_user": f"u{n - 1}"}


@asynccontextmanager
async def _server(n: int, **jetstream: Any) -> AsyncIterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        opts = config_to_options({**_config(n), "jetstream": {"store_dir": tmp, **jetstream}})
        opts.host, opts.port = "127.0.0.1", -1
        server = Server(opts)
        await server.start()
        try:
            yield server
        finally:
            await server.shutdown()


class _Conn:
    """A raw client connection in this event loop: requests answered on ``_R.<n>``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.asked = 0

    @classmethod
    async def open(cls, port: int, user: str = "", password: str = "") -> _Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await reader.readline()
        auth = f',"user":"{user}","pass":"{password}"' if user else ""
        writer.write(f'CONNECT {{"verbose":false,"protocol":1{auth}}}\r\nSUB _R.* 1\r\nPING\r\n'.encode())
        await reader.readuntil(b"PONG\r\n")
        return cls(reader, writer)

    async def request(self, subject: str, payload: bytes = b"") -> bytes:
        self.asked += 1
        self.writer.write(f"PUB {subject} _R.{self.asked} {len(payload)}\r\n".encode() + payload + b"\r\n")
        head = await self.head()
        body = await self.reader.readexactly(int(head.split()[-1]) + 2)
        return body[:-2]

    async def head(self) -> bytes:
        """The next MSG line, the server's PINGs answered on the way (its first comes 2 s after
        CONNECT: a run on a loaded machine can take longer than that)."""
        while (head := await self.reader.readuntil(b"\r\n")) == b"PING\r\n":
            self.writer.write(b"PONG\r\n")
        assert head.startswith(b"MSG "), head
        return head

    async def api(self, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(await self.request(f"$JS.API.{subject}", json.dumps(body or {}).encode()))
        return answer

    def close(self) -> None:
        self.writer.close()


async def _server_lines(op: Callable[[], Awaitable[Any]]) -> int:
    """The lines of the server's own Python (``pyjetstream/server``) run while ``op`` runs."""
    with counting(lines_only=True, where=lambda frame: frame.f_code.co_filename.startswith(SERVER_CODE)) as lines:
        await op()
    return lines.count


async def _steps(n: int) -> dict[str, int]:
    """The server's lines for a CONNECT + PING + close of the last account's user, a publish into
    its stream (with the PubAck), its ``$JS.API.INFO``, the system account's ``CONNZ`` and ``SUBSZ``
    of it (the account looked up, not found in a pass over all) and its ``STATSZ`` of the server (the subscriptions, JetStream's usage, reservations and API counts
    of every account: `Server.subscriptions`, `ServerJetStream.stats`)."""
    async with _server(n) as server:
        app = await _Conn.open(server.port)
        assert "error" not in await app.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        sys_conn = await _Conn.open(server.port, "sys", "sys")

        async def connect() -> None:
            conn = await _Conn.open(server.port, f"u{n - 1}", f"p{n - 1}")
            conn.close()
            for _ in range(5):  # (its close handled)
                await asyncio.sleep(0)

        async def publish() -> None:
            assert b'"seq"' in await app.request("s.1", b"hello")

        async def js_info() -> None:
            assert "error" not in await app.api("INFO")

        async def connz() -> None:
            assert b"\"connections\"" in await sys_conn.request(f"$SYS.REQ.ACCOUNT.A{n - 1}.CONNZ")

        async def statsz() -> None:
            assert b'"statsz"' in await sys_conn.request("$SYS.REQ.SERVER.PING.STATSZ")

        async def subsz() -> None:
            assert b'"subscriptions_list"' in await sys_conn.request(f"$SYS.REQ.ACCOUNT.A{n - 1}.SUBSZ")

        ops = {"connect": connect, "publish": publish, "js_info": js_info, "connz": connz, "statsz": statsz,
               "subsz": subsz}  # fmt: skip
        for op in ops.values():  # (the first of each imports and caches what it needs)
            await op()
        # The fewest of three (a clock cache — a formatted second — may miss once).
        steps = {name: min([await _server_lines(op) for _ in range(3)]) for name, op in ops.items()}
        app.close()
        sys_conn.close()
        return steps


async def test_an_operations_steps_do_not_grow_with_the_accounts() -> None:
    small, large = await _steps(100), await _steps(1000)
    for op in small:
        assert large[op] <= small[op] + 10, (op, small, large)


async def _engines_counted(n: int, publishes: int) -> tuple[int, int]:
    """The engines the limit checks of ``publishes`` publishes (one at a time, each acknowledged)
    counted, after a first one; and the bytes of the tables of the sets of engines a read walks
    (a set emptied in place keeps its table, and a walk visits every slot: C steps no line shows)."""
    async with _server(n) as server:
        app = await _Conn.open(server.port)
        assert "error" not in await app.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        await app.request("s.0", b"first")
        before = server.js.counted
        for i in range(publishes):
            assert b'"seq"' in await app.request(f"s.{i}", b"x" * 10)
        app.close()
        tables = sys.getsizeof(server.js._unknown) + sys.getsizeof(server.js._estimated)
        return server.js.counted - before, tables


async def test_a_publish_does_not_count_the_other_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A publish's server-wide limit check reads the running sums: no engine counted beside 100
    or 1,000 accounts; the walk (`TOTALS` off) counts every other account's engine each time."""
    small, large = await _engines_counted(100, 20), await _engines_counted(1000, 20)
    assert small == large and small[0] == 0, (small, large)  # (all 1,000 engines unknown at the start)
    monkeypatch.setattr(server_jetstream, "TOTALS", False)
    assert (await _engines_counted(100, 5))[0] == 5 * 99


# ---- the running sums answer as the walk


async def _limits_run(seed: int) -> list[Any]:
    """Three accounts near the server's limits (``max_file_store`` 9,000, ``max_memory_store``
    6,000 bytes): a seeded run of publishes (one at a time and pipelined), message deletes,
    purges, stream deletes and creates, acknowledgements of an interest stream in each; each
    answer (stored, or the error code), and the server's usage after each step as ``/varz``
    would count it and as the walk counts it."""
    rng = random.Random(seed)
    out: list[Any] = []
    async with _server(3, max_file_store=9_000, max_memory_store=6_000) as server:
        conns = [await _Conn.open(server.port, f"u{i}", f"p{i}") for i in range(3)]
        for conn in conns:
            for name, storage in (("F", "file"), ("M", "memory")):
                assert "error" not in await conn.api(f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name.lower()}.>"], "storage": storage})
        for step in range(120):
            conn, roll = rng.choice(conns), rng.random()
            kind = rng.choice("fm")
            if roll < 0.55:
                answer = json.loads(await conn.request(f"{kind}.{step}", b"x" * rng.randrange(100, 1500)))
                out.append(answer.get("error", {}).get("err_code") or answer.get("seq"))
            elif roll < 0.7:  # a pipelined burst: one run of the stream's ingest
                k = rng.randrange(2, 8)
                first = conn.asked + 1
                conn.writer.write(b"".join(f"PUB {kind}.{step} _R.{first + j} 300\r\n".encode() + b"y" * 300 + b"\r\n" for j in range(k)))
                conn.asked += k
                for _ in range(k):
                    head = await conn.head()
                    out.append(json.loads((await conn.reader.readexactly(int(head.split()[-1]) + 2))[:-2]).get("seq"))
            elif roll < 0.82:
                info = await conn.api(f"STREAM.INFO.{kind.upper()}")
                first, last = info["state"]["first_seq"], info["state"]["last_seq"]
                if last >= first and info["state"]["messages"]:
                    seq = rng.randint(first, last)
                    out.append((await conn.api(f"STREAM.MSG.DELETE.{kind.upper()}", {"seq": seq})).get("success"))
            elif roll < 0.9:
                out.append((await conn.api(f"STREAM.PURGE.{kind.upper()}", {"keep": rng.randrange(3)})).get("purged"))
            elif roll < 0.95:  # re-created, or updated, with a reservation (or none); an error or two
                name = kind.upper()
                cfg = {"name": name, "subjects": [f"{kind}.>"], "storage": "file" if kind == "f" else "memory",
                       "max_bytes": rng.choice([-1, 1000, 2500])}  # fmt: skip
                if rng.random() < 0.5:
                    out.append((await conn.api(f"STREAM.DELETE.{name}")).get("success"))
                    out.append((await conn.api(f"STREAM.CREATE.{name}", cfg)).get("error", {}).get("err_code"))
                else:
                    out.append((await conn.api(f"STREAM.UPDATE.{name}", cfg)).get("error", {}).get("err_code"))
            else:
                out.append((await conn.api("STREAM.INFO.NONE")).get("error", {}).get("err_code"))
            engines = server.jetstream_engines()
            walked = [sum(e.usage()[i] for e in engines) for i in (0, 1)]
            out.append((server.js.total(), tuple(walked)))
            # /varz's and STATSZ's JetStream stats: the running sums', and the walk's (`monitoring._stats`).
            stats = monitoring.varz(engines[0])["stats"]
            out.append((stats, monitoring._stats(engines)))
        for conn in conns:
            conn.close()
    return out


@pytest.mark.parametrize("seed", range(3))
async def test_the_running_sums_answer_as_the_walk(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    summed = await _limits_run(seed)
    assert any(isinstance(a, int) and a in (10023, 10047) for a in summed), summed  # (the limits reached)
    assert all(entry[0] == entry[1] for entry in summed if isinstance(entry, tuple)), summed
    reserved = [entry[0]["reserved_memory"] + entry[0]["reserved_storage"] for entry in summed
                if isinstance(entry, tuple) and isinstance(entry[0], dict)]  # fmt: skip
    assert max(reserved) > 0 and 10059 in summed, summed  # (reservations come and go; an API error)
    monkeypatch.setattr(server_jetstream, "TOTALS", False)
    assert await _limits_run(seed) == summed


async def test_the_subscription_count_is_every_sublists(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Server.subscriptions` (STATSZ's and ``/varz``'s ``subscriptions``) is the sum of every
    account's sublist count (`monitor.SUBSCRIPTIONS_COUNTED` off) as clients of several accounts
    subscribe, unsubscribe and go, and JetStream consumers come and go."""
    rng = random.Random(7)
    async with _server(4) as server:
        conns = [await _Conn.open(server.port, f"u{i % 4}", f"p{i % 4}") for i in range(6)]
        assert "error" not in await conns[0].api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        seen = []
        for step in range(80):
            conn, roll = rng.choice(conns), rng.random()
            if roll < 0.5:
                conn.writer.write(f"SUB x.{step} q{step % 3} {1000 + step}\r\nSUB y.* {2000 + step}\r\n".encode())
            elif roll < 0.8:
                conn.writer.write(f"UNSUB {1000 + rng.randrange(step + 1)}\r\n".encode())
            elif roll < 0.9:
                cfg = {"durable_name": f"D{step}", "deliver_subject": f"dl.{step}", "ack_policy": "explicit"}
                await conns[0].api(f"CONSUMER.CREATE.S.D{step}", cfg)
            elif len(conns) > 2:
                conns.remove(conn)
                conn.close()
                conns.append(await _Conn.open(server.port, f"u{step % 4}", f"p{step % 4}"))
            await conns[0].request("$JS.API.INFO")  # (the server has read what was sent before)
            for _ in range(3):
                await asyncio.sleep(0)
            counted = monitor._subscriptions(server)
            monkeypatch.setattr(monitor, "SUBSCRIPTIONS_COUNTED", False)
            summed = monitor._subscriptions(server)
            monkeypatch.setattr(monitor, "SUBSCRIPTIONS_COUNTED", True)
            assert counted == summed, (step, counted, summed)
            seen.append(counted)
        assert len(set(seen)) > 10, seen
        for conn in conns:
            conn.close()


class _Engine:
    """An engine as `ServerJetStream` sees one: a name, a cached usage, reservations, API counts."""

    def __init__(self, name: str, used: tuple[int, int], reserved: int) -> None:
        self.account_name, self._used, self.totals = name, used, None
        self.stream_index = StreamIndex()
        self.stream_index.add("S", StreamConfig(name="S", subjects=[name], max_bytes=reserved))
        self.api_total, self.api_errors = 3, 1

    def cached_usage(self) -> tuple[int, int]:
        return self._used

    def usage_is_estimate(self) -> bool:
        return False


def test_an_engine_replaced_no_longer_counts() -> None:
    """An account's engine added again (a second start of its JetStream) takes the first one's place
    in the sums: usage, reservations, API counts."""
    js = server_jetstream.ServerJetStream()
    first, other, again = _Engine("A", (10, 20), 100), _Engine("B", (1, 2), 5), _Engine("A", (30, 40), 7)
    for engine in (first, other, again):
        js.add(engine)  # type: ignore[arg-type]
    assert js.engines == {"A": again, "B": other} and first.totals is None
    assert js.stats() == (31, 42, 0, 12, 6, 2)


@pytest.mark.parametrize("accounts", [10, 100])
async def test_a_start_checks_the_store_directory_once(monkeypatch: pytest.MonkeyPatch, accounts: int) -> None:
    """nats-server makes its test file in the store directory once (``enableJetStream``), not once an
    account; each account's directory is still made."""
    checks: list[str] = []
    check = engine_module.check_store_dir
    monkeypatch.setattr(engine_module, "check_store_dir", lambda d: checks.append(str(d)) or check(d))
    async with _server(accounts) as server:
        assert len(checks) == 1 and len(server.js.engines) == accounts
        assert _all_made([e.streams_dir for e in server.js.engines.values()])


def _all_made(directories: list[str]) -> bool:
    return all(os.path.isdir(d) for d in directories)
