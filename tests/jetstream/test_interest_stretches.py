"""An interest stream's run takes stretches (``stream_ingest.INTEREST_STRETCHES``): each stretch is
cut before a message no consumer wants (``ingest_run.Run._wanted``), which goes through
``StreamIngest.process`` and is skipped there (its sequence used up), as nats-server's
``processJetStreamMsg`` skips it.

Differential: the same pipelined traffic (subjects some consumer takes and subjects none does,
message ids repeated inside and across reads, other headers, right and wrong
``Nats-Expected-Last-Subject-Sequence``, an input transform) into an interest stream of the
embedded server with the switch on, with it off (each publish through ``process`` alone) and into
nats-server 2.15.1: every PubAck, every sequence (stored or skipped) and every stored message the
same. Then steps, not time: a read of 1,000 plain publishes into an interest stream is stored in
a few ``store_run`` calls, only the messages no consumer wants go through ``process``, and each
message costs at most one lookup in the consumers' index — with 10 consumers as with 1,000."""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import random
from pathlib import Path
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls, embedded, pub_frame
from tests.server.runs_world import frame, read_replies
from tests.support.targets import NATS_SERVER, make_target

from pyjetstream.server.jetstream import stream_ingest
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.stream import Stream
from pyjetstream.server.jetstream.stream_ingest import StreamIngest

#: i.a.* and i.b.1 have a consumer; i.b.2 and i.c have none (i.t0 is i.k0 transformed: wanted).
SUBJECTS = ["i.a.1", "i.a.2", "i.b.1", "i.b.2", "i.c", "i.k0"]
WANTED = {"i.a.1", "i.a.2", "i.b.1", "i.k0"}
EXPECT = "Nats-Expected-Last-Subject-Sequence"


def _hdr(*pairs: tuple[str, str]) -> bytes:
    return ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in pairs) + "\r\n").encode()


def traffic(seed: int, rounds: int, per_round: int) -> list[list[tuple[str, bytes | None]]]:
    """Rounds of publishes; a rough model of the stream keeps most expectations right (the
    servers are compared with each other, not with it)."""
    rng = random.Random(seed)
    seq, last = 0, {}
    out = []
    for r in range(rounds):
        msgs: list[tuple[str, bytes | None]] = []
        for i in range(per_round):
            subject = rng.choice(SUBJECTS)
            kind = rng.randrange(10)
            hdr: bytes | None = None
            stored = True
            if kind in (1, 2):
                hdr = _hdr(("Foo", "bar"))
            elif kind in (3, 4):  # an id, now and then one seen before
                n = rng.randrange(r * per_round + i) if kind == 4 and r + i else r * per_round + i
                hdr, stored = _hdr(("Nats-Msg-Id", f"id{n}")), kind == 3
            elif kind in (5, 6):  # right
                hdr = _hdr(("Foo", "x"), (EXPECT, str(last.get(subject, 0))))
            elif kind == 7:  # wrong
                hdr, stored = _hdr((EXPECT, str(last.get(subject, 0) + 3))), False
            if stored:
                seq += 1
                if subject in WANTED:
                    last[subject] = seq
            msgs.append((subject, hdr))
        out.append(msgs)
    return out


async def run_traffic(url: str, rounds: list[list[tuple[str, bytes | None]]]) -> list[Any]:
    """Stream I (interest, ``i.k0`` stored as ``i.t0``) with consumers on ``i.a.*``, ``i.b.1`` and
    ``i.t0``; each round in one write. Every PubAck, then the stream's every sequence."""
    host, port = url.removeprefix("nats://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        await reader.readline()  # INFO
        opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1}
        writer.write(f"CONNECT {json.dumps(opts)}\r\nSUB r.> 1\r\n".encode())
        cfg = {
            "name": "I",
            "subjects": ["i.>"],
            "retention": "interest",
            "duplicate_window": 60_000_000_000,
            "subject_transform": {"src": "i.k0", "dest": "i.t0"},
        }
        requests = [("STREAM.CREATE.I", cfg)] + [
            (f"CONSUMER.CREATE.I.{name}", {"stream_name": "I", "config": {"durable_name": name, "ack_policy": "explicit", "filter_subject": f}})
            for name, f in (("A", "i.a.*"), ("B", "i.b.1"), ("T", "i.t0"))
        ]  # fmt: skip
        for k, (api, body) in enumerate(requests):
            writer.write(frame(f"$JS.API.{api}", f"r.setup{k}", None, json.dumps(body).encode()))
            assert "error" not in (await read_replies(reader, 1))[f"r.setup{k}"]
        answers: list[Any] = []
        n = 0
        for msgs in rounds:
            data = bytearray()
            for subject, hdr in msgs:
                data += frame(subject, f"r.{n}", hdr, f"p{n}".encode())
                n += 1
            writer.write(bytes(data))
            got = await read_replies(reader, len(msgs))
            answers += [got[f"r.{i}"] for i in range(n - len(msgs), n)]
        return [answers, await _contents(reader, writer)]
    finally:
        writer.close()


async def _contents(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> list[Any]:
    """Stream I's state and each sequence up to its last (a skipped one: its error code)."""
    writer.write(frame("$JS.API.STREAM.INFO.I", "r.info", None, b""))
    state = (await read_replies(reader, 1))["r.info"]["state"]
    out: list[Any] = [(state["messages"], state["first_seq"], state["last_seq"])]
    for seq in range(1, state["last_seq"] + 1):
        writer.write(frame("$JS.API.STREAM.MSG.GET.I", f"r.get{seq}", None, json.dumps({"seq": seq}).encode()))
        got = (await read_replies(reader, 1))[f"r.get{seq}"]
        if "error" in got:
            out.append(got["error"]["err_code"])
            continue
        m = got["message"]
        out.append((m["subject"], m["seq"], base64.b64decode(m.get("hdrs", "")), base64.b64decode(m.get("data", ""))))
    return out


async def _embedded(rounds: list[list[tuple[str, bytes | None]]]) -> list[Any]:
    async with embedded() as server:
        return await run_traffic(server.client_url, rounds)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interest_stretches_equal_one_by_one_and_nats_server(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds = traffic(seed, rounds=5, per_round=60)
    seen = {}
    stretched = {}
    for name, on in (("on", True), ("off", False)):
        monkeypatch.setattr(stream_ingest, "INTEREST_STRETCHES", on)
        with count_calls(monkeypatch, IndexedStore, "store_run") as runs:
            seen[name] = asyncio.run(_embedded(rounds))
        stretched[name] = runs["store_run"]
    target = make_target(NATS_SERVER, tmp_path / "nats")
    try:
        seen["nats"] = asyncio.run(run_traffic(target.url, rounds))
    finally:
        target.stop()
    assert stretched["on"] >= 5 and stretched["off"] == 0, stretched  # (on: the stretches were taken)
    assert seen["on"] == seen["off"]
    assert seen["on"] == seen["nats"]
    answers, contents = seen["on"]
    codes = [a.get("error", {}).get("err_code") for a in answers]
    assert 10071 in codes and any(a.get("duplicate") for a in answers)
    assert 10037 in contents[1:]  # (skipped sequences: no consumer wanted them)
    assert sum(isinstance(c, tuple) for c in contents[1:]) > len(answers) // 3


async def _request(nc: Any, subject: str, body: dict[str, Any]) -> None:
    answer = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=30)).data)
    assert "error" not in answer, answer


async def _publish_in_one_read(port: int, frames: list[bytes]) -> None:
    """``frames`` written at once after a CONNECT that leaves publishes unchecked (not verbose,
    not pedantic), so the server reads them as runs."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await reader.readline()  # INFO
    writer.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n')
    for data in (b"", b"".join(frames) + b"PING\r\n"):
        writer.write(data)
        await writer.drain()
        while not (await reader.readline()).startswith(b"PONG"):
            pass
    writer.close()


async def _read_into_interest_stream(
    consumers: int, counters: list[collections.Counter[str]], frames: list[bytes] | None = None
) -> int:
    """1,000 plain publishes in one read into interest stream I (or ``frames``): ``i.1`` … ``i.9``
    each have a consumer, ``i.none`` (every tenth) none; ``consumers - 9`` more consumers on
    ``o.<j>`` (nothing published there). Returns how many messages it holds."""
    if frames is None:
        frames = [pub_frame(f"i.{j % 10}" if j % 10 else "i.none", b"x") for j in range(1_000)]
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _request(nc, "$JS.API.STREAM.CREATE.I", {"name": "I", "subjects": ["i.>", "o.>"], "retention": "interest"})
            for j in range(consumers):
                f = f"i.{j + 1}" if j < 9 else f"o.{j}"
                cfg = {"durable_name": f"c{j}", "ack_policy": "explicit", "filter_subject": f}
                await _request(nc, f"$JS.API.CONSUMER.CREATE.I.c{j}", {"stream_name": "I", "config": cfg})
            for counter in counters:  # (what the read costs, not the setup)
                counter.clear()
            await _publish_in_one_read(server.port, frames)
            state = server.jetstream.streams["I"].store.fast_state()
            assert state.last_seq == 1_000, state
            return state.msgs
        finally:
            await nc.close()


def test_a_read_into_an_interest_stream_is_stored_in_stretches_at_any_consumer_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps: 1,000 plain publishes (one read) into an interest stream with 10 and with 1,000
    consumers, a tenth on a subject no consumer wants. Only those go through ``process``; the
    rest are stored in one ``store_run`` a stretch; one lookup in the consumers' index a message
    (a skipped one: the walk that ended the stretch before it, the next one's start, ``process``). The same at both sizes; the switch
    off, ``process`` for all and no ``store_run``."""
    got = []
    for on, consumers in ((True, 10), (True, 1_000), (False, 10)):
        monkeypatch.setattr(stream_ingest, "INTEREST_STRETCHES", on)
        with (
            count_calls(monkeypatch, StreamIngest, "process") as process,
            count_calls(monkeypatch, IndexedStore, "store_run") as runs,
            count_calls(monkeypatch, Stream, "has_interest_for") as lookups,
        ):
            msgs = asyncio.run(_read_into_interest_stream(consumers, [process, runs, lookups]))
            got.append({"msgs": msgs, **process, **runs, **lookups})
    small, large, off = got
    assert small == large, (small, large)
    assert small["msgs"] == 900 and small["process"] <= 101 and small["store_run"] <= 101, small
    assert small["has_interest_for"] <= 1_000 + 2 * 100 + 1, small
    assert off["msgs"] == 900 and off["process"] == 1_000 and "store_run" not in off, off


def test_a_headered_read_looks_up_interest_once_a_change_of_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps: 1,000 publishes each with its own ``Nats-Msg-Id`` (the stretch's per-message path
    over header blocks), ten in a row on each subject, a tenth of the blocks on ``i.none``: one lookup in the consumers'
    index a change of subject (``Run._wanted``'s answer serves every stretch up to the message no
    consumer wants), with 10 consumers as with 1,000; the stretches and ``process`` calls as for
    plain publishes."""
    frames = [
        pub_frame(f"i.{j // 10 % 10}" if j // 10 % 10 else "i.none", b"x", b"NATS/1.0\r\nNats-Msg-Id: m%d\r\n\r\n" % j)
        for j in range(1_000)
    ]
    got = []
    for consumers in (10, 1_000):
        with (
            count_calls(monkeypatch, StreamIngest, "process") as process,
            count_calls(monkeypatch, IndexedStore, "store_run") as runs,
            count_calls(monkeypatch, Stream, "has_interest_for") as lookups,
        ):
            msgs = asyncio.run(_read_into_interest_stream(consumers, [process, runs, lookups], frames))
            got.append({"msgs": msgs, **process, **runs, **lookups})
    small, large = got
    assert small == large, (small, large)
    assert small["msgs"] == 900 and small["process"] <= 101 and small["store_run"] <= 91, small
    assert small["has_interest_for"] <= 100 + 2 * 100 + 1, small  # (1,000 before the memo)
