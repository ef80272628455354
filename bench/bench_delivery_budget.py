"""The per-message CPU budget of a delivered message inside the embedded server (issue #14).

    PYTHONPATH=src .venv/bin/python bench/bench_delivery_budget.py [--msgs 20000] [--rounds 5]

An in-process server with JetStream and a file stream of ``--msgs`` messages; the receiving
client is a ``ClientConnection`` on a transport that only counts bytes (as in
``bench_route_budget.py``), so no socket or client library is in the figures. Each stage runs on
its own, in process CPU time (``time.process_time``), best of ``--rounds``, a fresh consumer each
round:

- read: ``IndexedStore.load_next_msg`` over the stream (what the delivery loop reads; the store's);
- push, ack none / push, ack explicit: ``DeliveryLoop.run`` passes until every message went out
  (the read, the loop, the ack reply subject, the framing onto the connection);
- pull: the same for a pull consumer holding one request for every message;
- ack: the ``PUB $JS.ACK.… +ACK`` frames of a run's deliveries fed to the connection: parse,
  route, ``AckProcessor.on_ack`` and the delivery state (persisting it is off the loop).

µs of process CPU per message; bench/README.md keeps the budget they make.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

from bench_route_budget import _CountingTransport
from bench_store_budget import budget_args
from pyjetstream.server.client import ClientConnection
from pyjetstream.server.server import Server

STREAM = "D"


def connection(server: Server) -> ClientConnection:
    conn = ClientConnection(server)
    conn.connection_made(_CountingTransport())  # type: ignore[arg-type]
    conn.data_received(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')
    return conn


def api(conn: ClientConnection, subject: str, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    conn.data_received(b"PUB $JS.API.%b _INBOX.api.1 %d\r\n%b\r\n" % (subject.encode(), len(data), data))


def drain(consumer: Any, n: int) -> float:
    """CPU µs per message of ``DeliveryLoop.run`` passes until ``n`` messages went out."""
    st = consumer.state
    start_dseq = st.dseq
    t = time.process_time()
    while st.dseq - start_dseq < n:
        before = st.dseq
        consumer.delivery.run()
        if st.dseq == before:
            raise RuntimeError(f"the consumer stopped delivering: {st.dseq - start_dseq} {consumer.cfg} {consumer.push.active} {len(consumer.pull.waiting)}")
    return (time.process_time() - t) / n * 1e6


async def main(args: argparse.Namespace) -> None:
    n = args.msgs
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1")
        await server.start()
        try:
            conn = connection(server)
            conn.data_received(b"SUB _INBOX.pull.1 1\r\n")
            api(conn, f"STREAM.CREATE.{STREAM}", {"name": STREAM, "subjects": [f"{STREAM}.>"]})
            engine: Any = server.jetstream
            stream = engine.streams[STREAM]
            payload = b"x" * args.size
            for i in range(n):
                stream.ingest.on_msg(f"{STREAM}.x", "", None, payload, None)
                if i % 1000 == 999:
                    stream.writes.end()
            stream.writes.end()
            store = stream.store

            def read() -> float:
                t = time.process_time()
                seq = 1
                for _ in range(n):
                    seq = store.load_next_msg(f"{STREAM}.x", seq)[1] + 1
                return (time.process_time() - t) / n * 1e6

            figures: dict[str, list[float]] = {}
            sid = 1
            for r in range(args.rounds):
                figures.setdefault("read", []).append(read())
                for kind, cfg in (
                    ("push, ack none", {"deliver_subject": f"push.n{r}", "ack_policy": "none"}),
                    ("push, ack explicit", {"deliver_subject": f"push.a{r}", "ack_policy": "explicit"}),
                    ("pull, ack explicit", {"ack_policy": "explicit"}),
                ):
                    name = f"C{r}{kind[:4]}{cfg['ack_policy'][0]}"
                    if "deliver_subject" in cfg:  # a push consumer is bound to a literal subscription
                        sid += 1
                        conn.data_received(b"SUB %b %d\r\n" % (cfg["deliver_subject"].encode(), sid))
                    api(conn, f"CONSUMER.CREATE.{STREAM}.{name}", {"stream_name": STREAM, "config": {"durable_name": name, "max_ack_pending": -1, **cfg}})
                    consumer = stream.consumers[name]
                    if kind.startswith("pull"):
                        consumer.pull.process_request("_INBOX.pull.1", json.dumps({"batch": n, "expires": 60_000_000_000}).encode())
                    figures.setdefault(kind, []).append(drain(consumer, n))
                    if cfg["ack_policy"] == "explicit":
                        pending = sorted(consumer.state.pending.items())
                        frames = [
                            b"PUB $JS.ACK.%b.%b.1.%d.%d.0.0 4\r\n+ACK\r\n" % (STREAM.encode(), name.encode(), seq, p[0])
                            for seq, p in pending
                        ]
                        chunks = [b"".join(frames[i : i + 1000]) for i in range(0, len(frames), 1000)]
                        t = time.process_time()
                        for chunk in chunks:
                            conn.data_received(chunk)
                        figures.setdefault("ack (" + kind.split(",")[0] + ")", []).append((time.process_time() - t) / n * 1e6)
                        if consumer.state.pending:
                            raise RuntimeError("acks not applied")
                    api(conn, f"CONSUMER.DELETE.{STREAM}.{name}", {})
                    conn.flush_out()
            print(f"µs CPU per delivered message, {args.size} B payload, {n} messages, best of {args.rounds}")
            for key, values in figures.items():
                print(f"{key:24} {min(values):6.2f}")
        finally:
            await server.shutdown()


if __name__ == "__main__":
    asyncio.run(main(budget_args(__doc__)))
