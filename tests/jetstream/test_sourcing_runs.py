"""A mirror's and a source's feed take their consumer's deliveries a run at a time (``takes_deliveries``:
the delivery pass reads the origin in runs and calls the feed for each message, never routing one) and
store each run's copies in one pass (``StreamIngest.process_sourced_run``: one ``store_run`` per run):
counted in store reads and store calls (steps, not time), and the copies equal to those of the
one-at-a-time, routed path (``ServerOptions.runs`` off), timestamps included. Embedded only and in-process (the counters are the server's own);
mirrors and sources are behaviour-tested against both targets in test_stream_sourcing.py."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from typing import Any

import nats
from nats.js.api import StreamConfig, StreamSource

from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.server import Server

MSGS = 3_000
STAMP = re.compile(rb"(Nats-Stream-Source: [^\r]*) \S+\r\n")


class StoreCalls:
    """``store_msg`` and ``store_run`` calls (and the messages a run stored) per store."""

    def __init__(self, monkeypatch: Any) -> None:
        self.calls: dict[int, list[int]] = {}
        real_msg, real_run = IndexedStore.store_msg, IndexedStore.store_run

        def store_msg(store: IndexedStore, *args: Any, **kw: Any) -> Any:
            self.calls.setdefault(id(store), [0, 0, 0])[0] += 1
            return real_msg(store, *args, **kw)

        def store_run(store: IndexedStore, *args: Any, **kw: Any) -> Any:
            out = real_run(store, *args, **kw)
            counts = self.calls.setdefault(id(store), [0, 0, 0])
            counts[1] += 1
            counts[2] += len(out[1])
            return out

        monkeypatch.setattr(IndexedStore, "store_msg", store_msg)
        monkeypatch.setattr(IndexedStore, "store_run", store_run)

    def of(self, store: object) -> list[int]:
        """``[store_msg calls, store_run calls, messages stored by store_run]``."""
        return self.calls.get(id(store), [0, 0, 0])


def count_reads(store: Any) -> list[int]:
    """The store's ``load_next_msgs`` calls from now on (the one item of the list returned)."""
    reads = [0]
    real = store.load_next_msgs

    def counting(*args: Any, **kw: Any) -> Any:
        reads[0] += 1
        return real(*args, **kw)

    store.load_next_msgs = counting
    return reads


async def catch_up(runs: bool, calls: StoreCalls | None = None) -> tuple[int, list[Any], list[Any], list[Any]]:
    """Store reads of the origin while a mirror and a source catch up ``MSGS`` messages (some with
    headers, some deleted), what each copied, and (with ``calls``) each copy's store calls."""
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1", runs=runs)
        await server.start()
        nc = await nats.connect(server.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="SRC", subjects=["src.>"])
            for i in range(MSGS):
                await nc.publish(f"src.{i % 7}", str(i).encode(), headers={"K": str(i)} if i % 3 else None)
            await nc.flush()
            deadline = asyncio.get_running_loop().time() + 60
            while (await js.stream_info("SRC")).state.last_seq < MSGS:
                assert asyncio.get_running_loop().time() < deadline, "the origin was not filled"
                await asyncio.sleep(0.02)
            for seq in range(100, 200, 10):
                await js.delete_msg("SRC", seq)
            reads = count_reads(server.jetstream_engines()[0].streams["SRC"].store)
            await js.add_stream(StreamConfig(name="MIR", mirror=StreamSource(name="SRC")))
            await js.add_stream(StreamConfig(name="AGG", sources=[StreamSource(name="SRC")]))
            for name in ("MIR", "AGG"):
                deadline = asyncio.get_running_loop().time() + 60
                while (await js.stream_info(name)).state.messages < MSGS - 10:
                    assert asyncio.get_running_loop().time() < deadline, f"{name} did not catch up"
                    await asyncio.sleep(0.05)
            engine = server.jetstream_engines()[0]
            stored = [calls.of(engine.streams[name].store) if calls is not None else [] for name in ("MIR", "AGG")]
            copies = []
            for name in ("MIR", "AGG"):
                target = engine.streams[name].store
                state = target.fast_state()
                msgs = []
                for seq in range(state.first_seq, state.last_seq + 1):
                    try:
                        m = target.load_msg(seq)
                    except Exception:
                        continue
                    msgs.append((m.seq, m.subject, m.hdr, m.data, m.ts))
                copies.append(msgs)
            origin = engine.streams["SRC"].store
            # A mirror's copy keeps the origin's timestamp (stored with it, a run at a time or not).
            assert [m[4] for m in copies[0]] == [origin.load_msg(m[0]).ts for m in copies[0]]
            return reads[0], copies[0], copies[1], stored
        finally:
            await nc.close()
            await server.shutdown()


def unstamped(msgs: list[Any]) -> list[Any]:
    """A source's copies without their sequences and the origin's identity (each server its own)."""
    return [(subject, STAMP.sub(rb"\1", hdr or b""), data) for _, subject, hdr, data, _ in msgs]


def origin_times(msgs: list[Any]) -> list[Any]:
    """A mirror's copies as the origin's: sequence and timestamp its own (each run fills its own
    origin, so the two runs' timestamps differ: compared against the origin, not each other)."""
    return [(seq, subject, hdr, data) for seq, subject, hdr, data, _ in msgs]


async def test_feeds_read_their_origin_in_runs(monkeypatch: Any) -> None:
    calls = StoreCalls(monkeypatch)
    reads_runs, mirror_runs, sourced_runs, stored = await catch_up(runs=True, calls=calls)
    reads_one, mirror_one, sourced_one, _ = await catch_up(runs=False)
    assert len(mirror_runs) == len(sourced_runs) == MSGS - 10
    assert origin_times(mirror_runs) == origin_times(mirror_one)
    assert unstamped(sourced_runs) == unstamped(sourced_one)
    # Store calls: each run of copies one store_run (up to DELIVER_BATCH copies, fewer where flow
    # control or a deleted origin message cuts it), next to none of the one store_msg per copy.
    for (msg_calls, run_calls, in_runs), copied in zip(stored, (mirror_runs, sourced_runs), strict=True):
        assert in_runs + msg_calls == len(copied), (msg_calls, run_calls, in_runs)
        assert msg_calls <= 40 and run_calls <= MSGS // 100 + 40, (msg_calls, run_calls, in_runs)
    # Two feeds, each a few runs of up to DELIVER_BATCH messages (flow control may cut one short),
    # against one read per message copied the routed way.
    assert reads_one >= 2 * (MSGS - 10)
    assert reads_runs <= 2 * (MSGS // 100) + 40, reads_runs


#: A mirror in INTERNAL of PUBLIC's stream S: the consumer API and the deliveries imported (the
#: shape of test_cross_account_js's MIRROR_CONF, less its filter-subject exports).
CROSS_ACCOUNT = {
    "accounts": {
        "PUBLIC": {
            "jetstream": "enabled",
            "users": [{"user": "public", "password": "pwd"}],
            "exports": [
                {"service": "$JS.API.CONSUMER.CREATE.>", "response_type": "stream", "accounts": ["INTERNAL"]},
                {"service": "$JS.FC.>"},
                {"stream": "shared.public.>", "accounts": ["INTERNAL"]},
            ],
        },
        "INTERNAL": {
            "jetstream": "enabled",
            "users": [{"user": "internal", "password": "pwd"}],
            "imports": [
                {"service": {"account": "PUBLIC", "subject": "$JS.API.CONSUMER.CREATE.>"},
                 "to": "JS.PUBLIC.CONSUMER.CREATE.>"},
                {"service": {"account": "PUBLIC", "subject": "$JS.FC.>"}, "to": "$JS.FC.>"},
                {"stream": {"account": "PUBLIC", "subject": "shared.public.>"}, "to": "shared.public.>"},
            ],
        },
    },
}  # fmt: skip


async def test_a_mirror_across_accounts_reads_its_origin_in_runs(monkeypatch: Any) -> None:
    """The mirror's deliver subscription reaches the origin's account as a stream import's shadow
    (`subscription.Shadow`), made as the subscription is added: it takes the deliveries in runs, as
    in one account, because ``takes_deliveries`` is set before that (``subscribe_internal``)."""
    from pyjetstream.server.conf.mapping import config_to_options

    calls = StoreCalls(monkeypatch)
    opts = config_to_options(CROSS_ACCOUNT)
    opts.host, opts.port, opts.store_dir, opts.jetstream = "127.0.0.1", -1, tempfile.mkdtemp(), True
    server = Server(opts)
    await server.start()
    pub = await nats.connect(server.client_url, user="public", password="pwd")
    internal = await nats.connect(server.client_url, user="internal", password="pwd")
    try:
        await pub.jetstream().add_stream(name="S", subjects=["public.>"])
        for i in range(MSGS):
            await pub.publish(f"public.{i % 7}", str(i).encode())
        await pub.flush()
        public, private = server.accounts["PUBLIC"].jetstream, server.accounts["INTERNAL"].jetstream
        origin = public.streams["S"].store
        deadline = asyncio.get_running_loop().time() + 60
        while origin.fast_state().msgs < MSGS:
            assert asyncio.get_running_loop().time() < deadline, "the origin was not filled"
            await asyncio.sleep(0.02)
        reads = count_reads(origin)
        mirror = {"name": "S", "external": {"api": "JS.PUBLIC", "deliver": "shared.public"}}
        reply = await internal.request("$JS.API.STREAM.CREATE.M", json.dumps({"name": "M", "mirror": mirror}).encode())
        assert json.loads(reply.data).get("config", {}).get("name") == "M", reply.data
        while private.streams["M"].store.fast_state().msgs < MSGS:
            assert asyncio.get_running_loop().time() < deadline + 60, "the mirror did not catch up"
            await asyncio.sleep(0.05)
        msg_calls, run_calls, in_runs = calls.of(private.streams["M"].store)
        assert in_runs + msg_calls == MSGS and msg_calls <= 40, (msg_calls, run_calls, in_runs)
        assert reads[0] <= MSGS // 100 + 40, reads
    finally:
        await pub.close()
        await internal.close()
        await server.shutdown()
