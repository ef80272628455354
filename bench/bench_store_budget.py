"""The per-message budget of a stored message inside the embedded server (issue #14).

    PYTHONPATH=src .venv/bin/python bench/bench_store_budget.py [--msgs 20000] [--rounds 5]

An in-process server with JetStream; a file stream and a memory stream are created over the
API, then the stream's inbound path is called directly, in turns of 1000 messages (what one
read of a pipelining publisher holds), each stage timed on its own, best of ``--rounds``:

- limits: ``JetStreamEngine.check_account_limits`` (account and server-wide storage limits);
- store: ``IndexedStore.store_msg`` inside a store batch (index append + record framing +
  write to the block file; memory: the record kept in the process);
- turn end: the batch commit (one ``write`` of the turn's records) — per message;
- puback: routing a PubAck (``Account.publish_internal`` → ``Server.route``) to a reply subject
  nobody listens on (the lookup, no framing);
- inbound: ``StreamIngest.on_msg`` for the turn plus ``WriteBatch.end`` (every check of
  ``processJetStreamMsg``, the store, the PubAck built and routed to a reply nobody listens on);
- run: the same turn as one run (``StreamIngest.ingest_run``: what the server does with a read of
  a pipelining publisher), unique reply subjects.

µs of process CPU time per message (``time.process_time``: steadier than wall-clock when the
machine is shared); sockets, parsing and the PubAck's framing to a connection are not in these
figures (see ``bench_route_budget.py`` for those).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

from pyjetstream import _compiled
from pyjetstream.api.codec import finish_pub_ack
from pyjetstream.client import connect
from pyjetstream.server.server import Server

TURN = 1000


def best(rounds: int, fn: Any) -> float:
    return min(fn() for _ in range(rounds))


async def budget(server: Server, name: str, n: int, rounds: int, payload: bytes) -> dict[str, float]:
    stream: Any = server.jetstream.streams[name]  # type: ignore[union-attr]
    store: Any = stream.store
    engine = stream.engine
    storage = stream.cfg.storage
    subject = f"{name}.x"
    rec = store.record_size(len(subject), 0, len(payload))

    def limits() -> float:
        t = time.process_time()
        for _ in range(n):
            engine.check_account_limits(storage, rec)
        return (time.process_time() - t) / n * 1e6

    def store_only() -> float:
        t = time.process_time()
        for _ in range(n // TURN):
            with store.batch():
                for _ in range(TURN):
                    store.store_msg(subject, b"", payload, None, 0)
        return (time.process_time() - t) / n * 1e6

    def puback() -> float:
        ack = finish_pub_ack(stream.ingest.ack_prefix, 1)
        publish = stream.server.publish_internal
        t = time.process_time()
        for _ in range(n):
            publish("_INBOX.nobody.1", ack)
        return (time.process_time() - t) / n * 1e6

    def inbound() -> float:
        t = time.process_time()
        on_inbound = stream.ingest.on_msg
        for _ in range(n // TURN):
            for _ in range(TURN):
                on_inbound(subject, "_INBOX.nobody.1", None, payload, None)
            stream.writes.end()
        return (time.process_time() - t) / n * 1e6

    def run() -> float:
        payloads = [payload] * TURN
        replies = [f"_INBOX.nobody.{i}" for i in range(TURN)]
        t = time.process_time()
        ingest_run = stream.ingest.ingest_run
        subjects: list[str] = [subject] * TURN
        hdrs: list[bytes | None] = [None] * TURN
        for _ in range(n // TURN):
            ingest_run(subjects, replies, hdrs, payloads, None)
        return (time.process_time() - t) / n * 1e6

    out = {"limits": best(rounds, limits), "store": best(rounds, store_only)}
    out["puback"] = best(rounds, puback)
    out["inbound"] = best(rounds, inbound)
    out["run"] = best(rounds, run)
    stream.purge()
    return out


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1")
        await server.start()
        try:
            nc = await connect(server.client_url if hasattr(server, "client_url") else f"nats://127.0.0.1:{server.port}")
            for name, storage in (("F", "file"), ("M", "memory")):
                body = {"name": name, "subjects": [f"{name}.>"], "storage": storage}
                await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(body).encode())
            await nc.close()
            payload = b"x" * args.size
            print(f"pyjetstream: {_compiled.status} (PYJETSTREAM_PURE=1 for pure Python)")
            print(f"µs per stored message, {args.size} B payload, best of {args.rounds}, turns of {TURN}")
            print(f"{'stream':8} {'limits':>8} {'store':>8} {'puback':>8} {'inbound':>8} {'run':>8}")
            for name in ("F", "M"):
                r = await budget(server, name, args.msgs, args.rounds, payload)
                print(
                    f"{name:8} {r['limits']:8.2f} {r['store']:8.2f} {r['puback']:8.2f} {r['inbound']:8.2f}"
                    f" {r['run']:8.2f}"
                )
        finally:
            await server.shutdown()


def budget_args(doc: str | None) -> argparse.Namespace:
    """The command line of the budget scripts (this one and ``bench_delivery_budget.py``)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msgs", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(budget_args(__doc__)))
