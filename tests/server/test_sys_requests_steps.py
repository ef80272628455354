"""The system account's requests at nats-server's cost (issue 24, bench_scale's ``--dim sysreq``):
counted, not timed, on an embedded server in this process.

A request is answered in the callback that received it (`sys_requests.ANSWER_IN_READ`; off: a later
turn of the event loop, the same answers), the ``ServerInfo`` header's JSON is made once
(`sys_requests._InfoHeader`), and an answer's work does not grow with the connections where
nats-server's does not: the lines of Python run for a STATSZ, VARZ, JSZ, HEALTHZ, SUBSZ or IDZ are
the same beside 10 and 1,000 connections, and a CONNZ's grow by the same lines per connection listed.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.support.steps import counting

from pyjetstream.server import sys_requests
from pyjetstream.server.conf.mapping import config_to_options
from pyjetstream.server.server import Server
from pyjetstream.server.sys_requests import SystemRequests

ACCOUNTS = {
    "server_name": "N1",
    "accounts": {"SYS": {"users": [{"user": "sys", "password": "sys"}]},
                 "APP": {"jetstream": "enabled", "users": [{"user": "app", "password": "app"}]}},
    "system_account": "SYS",
    "no_auth_user": "app",
}  # fmt: skip
FIXED_KINDS = ("STATSZ", "VARZ", "JSZ", "HEALTHZ", "SUBSZ", "IDZ")
# What may differ between two answers a moment apart: the clock's fields, and the match cache's
# (the answers themselves are routed), the memory (EXPVARZ).
_CLOCK = frozenset({"seq", "time", "now", "uptime", "idle", "mem", "cpu", "last_activity", "rtt", "num_cache",
                    "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout", "memstats"})  # fmt: skip


class _Asker:
    """A `SystemRequests` of the server's system account (its own, not subscribed: its callbacks are
    called directly), with the answers it publishes collected from an internal subscription."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.requests = SystemRequests(server, server.system_account)  # type: ignore[arg-type]
        self.answers: dict[str, bytes] = {}
        self.asked = 0
        server.system_account.subscribe_internal("_STEPS.>", self._collect)  # type: ignore[union-attr]

    def _collect(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        self.answers[subject] = payload

    def ask(self, kind: str, payload: bytes = b"") -> str:
        """Ask ``kind``; the reply subject its answer (if any) is kept under."""
        self.asked += 1
        reply = f"_STEPS.{self.asked}"
        self.requests.on_request(f"$SYS.REQ.SERVER.PING.{kind}", reply, None, payload, None)
        return reply

    async def answer(self, kind: str, payload: bytes = b"") -> bytes | None:
        reply = self.ask(kind, payload)
        for _ in range(3):  # (switch off: a later turn of the loop)
            await asyncio.sleep(0)
        return self.answers.get(reply)


@asynccontextmanager
async def _server(connections: int) -> AsyncIterator[tuple[Server, _Asker]]:
    """An embedded server with ``connections`` client connections of APP (5 subscriptions each)."""
    with tempfile.TemporaryDirectory() as tmp:
        opts = config_to_options({**ACCOUNTS, "jetstream": {"store_dir": tmp}})
        opts.host, opts.port = "127.0.0.1", -1
        server = Server(opts)
        await server.start()
        writers = []
        try:
            for i in range(connections):
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                await reader.readline()
                subs = b"".join(f"SUB m.{i}.{j} {j}\r\n".encode() for j in range(5))
                writer.write(b'CONNECT {"verbose":false,"protocol":1}\r\n' + subs + b"PING\r\n")
                await reader.readuntil(b"PONG\r\n")
                writers.append(writer)
            asker = _Asker(server)
            for kind in (*FIXED_KINDS, "CONNZ"):  # (the first request imports and registers the handlers)
                assert await asker.answer(kind) is not None, kind
            yield server, asker
        finally:
            for writer in writers:
                writer.close()
            await server.shutdown()


def _lines_run(asker: _Asker, kind: str) -> int:
    """The lines of Python run to answer one request of ``kind`` (``sys.settrace``'s line events),
    but those of the float scan of the encoded answer, which depend on its bytes (a digit then an
    ``e`` in the random server id or store directory), not on the state's size."""
    monitor = asker.requests._monitoring()
    unseen = {monitor._maybe_not_repr.__code__, monitor._float_at.__code__}
    with counting(lines_only=True, where=lambda frame: frame.f_code not in unseen) as lines:
        asker.ask(kind)
    return lines.count


async def _steps(connections: int) -> dict[str, int]:
    async with _server(connections) as (server, asker):
        assert len(server.clients) == connections
        # The fewest of three (a clock cache — formatted seconds, uptimes — may miss once).
        return {kind: min(_lines_run(asker, kind) for _ in range(3)) for kind in (*FIXED_KINDS, "CONNZ")}


async def test_an_answers_steps_do_not_grow_with_the_connections() -> None:
    """10, 100 and 1,000 connections: the same lines for every kind but CONNZ, whose lines grow by
    the same number per connection listed (nats-server describes every connection too)."""
    small, middle, large = await _steps(10), await _steps(100), await _steps(1000)
    for kind in FIXED_KINDS:
        assert small[kind] == middle[kind] == large[kind], (kind, small, middle, large)
    per_connection = (middle["CONNZ"] - small["CONNZ"]) / 90
    assert (large["CONNZ"] - middle["CONNZ"]) / 900 == pytest.approx(per_connection, rel=0.01), (small, middle, large)
    assert per_connection < 45, per_connection  # (a ConnInfo's fields, in one function: 40 lines, 74 before)


def _steady(value: Any) -> Any:
    """An answer without its clock fields (`_CLOCK`)."""
    if isinstance(value, dict):
        return {k: ("*" if k in _CLOCK else _steady(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


# Requests with options: paging, subscriptions, a filter that selects nothing (no answer), one that
# does not decode (a 400), a JSZ leader_only (a single server leads), PROFILEZ's error.
_CASES = [(kind, b"") for kind in (*FIXED_KINDS, "CONNZ", "ACCOUNTZ", "ROUTEZ", "LEAFZ", "GATEWAYZ", "RAFTZ",
                                   "IPQUEUESZ", "EXPVARZ", "PROFILEZ")] + [
    ("CONNZ", b'{"subscriptions":true,"limit":3,"offset":2,"sort":"cid"}'), ("CONNZ", b'{"sort":"nope"}'),
    ("SUBSZ", b'{"subscriptions":true,"limit":5,"test":"m.1.2"}'), ("VARZ", b'{"server_name":"elsewhere"}'),
    ("VARZ", b'{"server_name":"N1","exact_match":true}'), ("JSZ", b'{"leader_only":true}'),
    ("JSZ", b'{"accounts":true,"streams":true}'), ("HEALTHZ", b'{"js-enabled-only":true}'),
    ("STATSZ", b'{"limit":"x"}'), ("VARZ", b"{not json"), ("PROFILEZ", b'{"name":"heap"}'),
]  # fmt: skip


async def test_the_same_answers_in_the_read_and_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ANSWER_IN_READ` on and off: the same answers (but their clock fields), the same requests
    left unanswered, and each answer's bytes the compact JSON of its members in order."""
    async with _server(20) as (_, asker):
        answers = {}
        for in_read in (True, False):
            monkeypatch.setattr(sys_requests, "ANSWER_IN_READ", in_read)
            answers[in_read] = [await asker.answer(kind, payload) for kind, payload in _CASES]
        for (kind, payload), on, off in zip(_CASES, answers[True], answers[False], strict=True):
            assert (on is None) == (off is None), (kind, payload, on, off)
            if on is None or off is None:
                continue
            whole_on, whole_off = json.loads(on), json.loads(off)
            assert _steady(whole_on) == _steady(whole_off), (kind, payload)
            assert on == json.dumps(whole_on, separators=(",", ":")).encode(), (kind, payload)
        unanswered = [case for case, on in zip(_CASES, answers[True], strict=True) if on is None]
        assert unanswered == [("VARZ", b'{"server_name":"elsewhere"}')]


async def test_the_server_header_is_made_once() -> None:
    """The ``ServerInfo`` header is made at the first answer and again only when what it says of the
    server changes (a reload's tags); each answer's ``seq`` is the next one."""
    async with _server(3) as (server, asker):
        header = asker.requests._header
        seqs = []
        for kind in FIXED_KINDS * 5:
            answer = await asker.answer(kind)
            assert answer is not None
            if kind != "IDZ":  # (the bare ServerID: no header)
                seqs.append(json.loads(answer)["server"]["seq"])
        assert header.made == 1 and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        server.options.server_tags = ["blue"]
        answer = await asker.answer("VARZ")
        assert answer is not None
        info = json.loads(answer)["server"]
        assert header.made == 2 and info["tags"] == ["blue"] and list(info)[-2:] == ["seq", "time"]


async def test_the_varz_configuration_is_made_once() -> None:
    """``/varz``'s configuration fields are made at the first request and again only when the
    configuration may have changed (a reload's options and load time); the runtime ones each time."""
    async with _server(3) as (server, asker):
        varz = server.monitor_handlers["/varz"]
        first = await asker.answer("VARZ")
        for _ in range(20):
            await asker.answer("VARZ")
        assert varz.made == 1  # type: ignore[attr-defined]
        server.config_load_time_ns += 1_000_000_000  # (as a reload sets it)
        last = await asker.answer("VARZ")
        assert first is not None and last is not None and varz.made == 2  # type: ignore[attr-defined]
        before, after = json.loads(first)["data"], json.loads(last)["data"]
        assert after["config_load_time"] != before["config_load_time"]
        assert list(after) == list(before)
        assert {**_steady(after), "config_load_time": ""} == {**_steady(before), "config_load_time": ""}


def _floats_or_nones(value: Any, where: str = "") -> list[str]:
    """Where a body holds a float or a None (what `monitor.FLOATLESS` says a body does not)."""
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in _floats_or_nones(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [w for i, v in enumerate(value) for w in _floats_or_nones(v, f"{where}[{i}]")]
    return [where] if value is None or isinstance(value, float) else []


async def test_a_connz_holds_no_float() -> None:
    """Every ``/connz`` shape — open and closed connections, subscriptions listed and detailed, with
    their users and accounts, a page, each sort — is integers, strings and booleans: what lets its
    JSON, compact ($SYS) and indented (HTTP), skip the float scan (`monitor.FLOATLESS`, `SKIP_FLOAT_SCAN`)."""
    async with _server(6) as (server, asker):
        assert "/connz" in asker.requests._monitoring().FLOATLESS
        writer = next(iter(server.clients.values())).transport
        writer.close()  # (a closed connection's record)
        for _ in range(50):
            if server.closed_clients:
                break
            await asyncio.sleep(0.01)
        assert server.closed_clients
        connz = server.monitor_handlers["/connz"]
        queries = [{}, {"subs": "1"}, {"subs": "detail", "auth": "1", "state": "all"}, {"state": "closed", "subs": "detail"},
                   {"limit": "2", "offset": "1"}, *({"sort": sort, "state": "any"} for sort in ("rtt", "idle", "uptime", "msgs_to"))]  # fmt: skip
        monitor = asker.requests._monitoring()
        for query in queries:
            body = connz(query)
            assert body["connections"] and _floats_or_nones(body) == [], (query, _floats_or_nones(body))
            assert monitor.compact_json(body, floats=False) == json.dumps(body, separators=(",", ":")).encode(), query
            indented = json.dumps(body, indent=2, ensure_ascii=False).encode()  # (HTTP's)
            assert monitor.indented_json(body, floats=False) == indented, query
