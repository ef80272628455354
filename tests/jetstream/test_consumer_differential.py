"""Differential consumer scenarios: the same steps against nats-server and our server, every
answer compared after normalising what legitimately varies (times, ids, inbox names, the random
part of flow control subjects, ``ts``, the servers' own ``_nats.ver`` / ``_nats.level``).

Each scenario records a transcript: API replies, delivered messages (subject, ack reply, header
block, payload), statuses and advisories. The transcripts must be identical. Cases where 2.10
answers differently from 2.9.10, and timing-sensitive ones (redelivery order under load), are
tested in the other consumer test modules instead.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, Sub, headers
from tests.support.targets import EMBEDDED, NATS_SERVER, make_target

Out = list[str]


def normalise(line: str) -> str:
    line = re.sub(r'"(created|ts|last_active|timestamp|opt_start_time)":"[^"]*"', r'"\1":"T"', line)
    line = line.replace(',"ts":"T"', "")
    line = re.sub(r'"id":"[^"]*"', '"id":"ID"', line)
    # The answering server's own version and API level (ADR-44 metadata); _nats.req.level is compared.
    line = re.sub(r'"_nats\.(ver|level)":"[^"]*"', r'"_nats.\1":"SERVER"', line)
    # A stream's identity hashes its creation time (2.15): compared as present, not by value.
    line = re.sub(r"Nats-Stream-Identity: \w+", "Nats-Stream-Identity: ID", line)
    line = re.sub(r"(\$JS\.ACK\.[^.]+\.[^.]+\.\d+\.\d+\.\d+)\.\d+\.", r"\1.TS.", line)
    line = re.sub(r"\$JS\.FC\.([^.]+)\.([^.]+)\.\w{4}", r"$JS.FC.\1.\2.XXXX", line)
    return line


def number_inboxes(lines: Out) -> Out:
    """Name each inbox by the order it first shows in the transcript (``_RAWINBOX.X.<n>``): the
    client's own counter also counts the unrecorded polls (``pending``), which a loaded machine
    repeats more on one server than on the other."""
    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"_RAWINBOX.X.{len(names) + 1}")

    return [re.sub(r"_RAWINBOX\.\d+\.\d+", name, line) for line in lines]


def cfg(stream: str = "S", **kw: Any) -> dict[str, Any]:
    kw.setdefault("ack_policy", "explicit")
    return {"stream_name": stream, "config": kw}


async def api(c: RawClient, out: Out, subj: str, body: Any = b"") -> Msg:
    r = await c.request(subj, body if isinstance(body, bytes) else json.dumps(body).encode())
    out.append(f"{subj} -> {r.hdr!r} {r.data.decode()}")
    return r


def fmt(m: Msg) -> str:
    return f"{m.subject} | {m.reply} | {m.hdr!r} | {m.data!r}"


#: How long a message the scenario waits for may take on a loaded machine (it usually takes ms).
SLOW = 10.0


async def drain(
    sub: Sub,
    out: Out,
    quiet: float | None = None,
    expect: int = 0,
    until_status: bool = True,
    limit: int = 50,
) -> None:
    """Record what ``sub`` receives, up to ``limit`` messages.

    ``quiet=None``: nats-server ends this with a status (404, 408, 409...), and each message up to
    it is waited for up to ``SLOW``, so load can delay the transcript but not change it.
    ``quiet=t``: the drain ends after ``t`` seconds without a message (or at a status, with
    ``until_status``); the first ``expect`` messages, what nats-server sends before it goes quiet,
    are still waited for up to ``SLOW``, so only the silence after them is timed.
    """
    for i in range(limit):
        try:
            m = await sub.next(SLOW if quiet is None or i < expect else quiet)
        except TimeoutError:
            out.append("  (quiet)")
            return
        out.append("  " + fmt(m))
        if until_status and m.status and m.status != "100":
            return


async def pull(
    c: RawClient,
    out: Out,
    consumer: str,
    body: Any,
    label: str,
    quiet: float | None = None,
    expect: int = 0,
    stream: str = "S",
) -> None:
    """One pull request and what it gets (``quiet`` and ``expect`` as for ``drain``)."""
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    out.append(f"PULL {label} {body!r}")
    c.pull(stream, consumer, inbox, body)
    await drain(sub, out, quiet, expect)
    sub.unsubscribe()


def bound(info_msg: Msg) -> bool:
    return bool(json.loads(info_msg.data).get("push_bound", False))


async def push_bound(c: RawClient, out: Out, label: str, consumer: str, expect: bool) -> None:
    """Record consumer ``S.<consumer>``'s ``push_bound`` after a subscription change.

    nats-server learns of the change in a goroutine (the sublist's interest notification), so
    the answer is read again until it is ``expect``, what nats-server answers, for up to ``SLOW``.
    The first read comes 0.1 s after the change: time for a change that should not happen to show.
    """
    await c.flush()
    await asyncio.sleep(0.1)
    deadline = time.monotonic() + SLOW
    subject = f"$JS.API.CONSUMER.INFO.S.{consumer}"
    while True:
        now = bound(await c.request(subject))
        if now == expect or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    out.append(f"{label} {now}")


async def pending(c: RawClient, counts: dict[str, int], stream: str = "S") -> None:
    """Wait, unrecorded, until each consumer's ``num_pending`` is as given (what nats-server
    settles on), for up to ``SLOW``. nats-server sends a PubAck before it tells the consumers of
    the new message (``processJetStreamMsg`` pushes it on ``mset.sigq`` for
    ``signalConsumersLoop``), so an INFO or a ``no_wait`` pull right after a publish can find the
    consumer not yet told: 404 No Messages where there are messages."""
    deadline = time.monotonic() + SLOW
    for name, count in counts.items():
        subject = f"$JS.API.CONSUMER.INFO.{stream}.{name}"
        while json.loads((await c.request(subject)).data).get("num_pending") != count:
            if time.monotonic() > deadline:
                return  # the transcripts will show the difference
            await asyncio.sleep(0.02)


async def stream_state(c: RawClient, out: Out, name: str = "S", settled: int | None = None) -> None:
    """Record the stream's state; with ``settled``, once it holds that many messages (up to
    ``SLOW``): nats-server removes a message an ack-none delivery or a consumer delete left
    without interest in a goroutine (``mset.ackq``), after answering."""
    deadline = time.monotonic() + SLOW
    while True:
        r = await c.request(f"$JS.API.STREAM.INFO.{name}", b"")
        st = json.loads(r.data)["state"]
        if settled is None or st["messages"] == settled or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    out.append(
        f"state msgs={st['messages']} first={st['first_seq']} last={st['last_seq']} consumers={st['consumer_count']}"
    )


async def s_create_errors(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    await c.publish_many("s.a", 3)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.C1", cfg(durable_name="X"))
    await api(c, out, A + "CREATE.S.C1.s.b", cfg(filter_subject="s.a"))
    await api(c, out, A + "CREATE.S.C9.s.a", cfg(filter_subject="s.a"))
    await api(c, out, A + "CREATE.S.C2", cfg(backoff=[1000000000]))
    await api(c, out, A + "CREATE.S.C2", cfg(backoff=[1000000000, 2000000000], max_deliver=3))
    await api(c, out, A + "CREATE.S", cfg(durable_name="D"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg())
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="E"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="D"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="D", deliver_policy="new"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="D", ack_policy="all"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="D", max_ack_pending=5, description="x"))
    await api(c, out, A + "DURABLE.CREATE.S.D", cfg(durable_name="D", deliver_subject="x.y"))
    await api(c, out, A + "CREATE.S.P", cfg(deliver_subject="push.p"))
    await api(c, out, A + "CREATE.S.P", cfg(deliver_subject="push.q"))
    await api(c, out, A + "CREATE.S.P", cfg())
    await api(c, out, A + "MSG.NEXT.S.P", b"")
    await api(c, out, A + "CREATE.S.W", cfg(filter_subject="t.x"))
    await api(c, out, A + "CREATE.S.W", cfg(filter_subject="s.a.>"))
    await api(c, out, A + "CREATE.S.W", cfg(filter_subject=">"))
    await api(c, out, A + "CREATE.S.W2", cfg(filter_subject="*.a"))
    await api(c, out, A + "CREATE.S.W", cfg(filter_subject="s..a"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="s.x"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_policy="last_per_subject"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_policy="by_start_time"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_policy="by_start_sequence"))
    await api(
        c,
        out,
        A + "CREATE.S.W",
        cfg(deliver_policy="by_start_sequence", opt_start_seq=2, opt_start_time="2020-01-01T00:00:00Z"),
    )
    await api(c, out, A + "CREATE.S.W", cfg(deliver_policy="last", opt_start_seq=2))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_policy="new", opt_start_time="2020-01-01T00:00:00Z"))
    await api(
        c,
        out,
        A + "CREATE.S.W",
        cfg(deliver_policy="by_start_time", opt_start_time="2020-01-01T00:00:00Z", opt_start_seq=1),
    )
    await api(c, out, A + "CREATE.S.W", cfg(opt_start_seq=3))
    await api(c, out, A + "CREATE.S.W", cfg(sample_freq="abc"))
    await api(c, out, A + "CREATE.S.W", cfg(sample_freq="-5"))
    await api(c, out, A + "CREATE.S.W", cfg(sample_freq="50%"))
    await api(c, out, A + "DELETE.S.W", b"")
    await api(c, out, A + "CREATE.S.W", cfg(num_replicas=3))
    await api(c, out, A + "CREATE.NOPE.W", cfg("NOPE", num_replicas=3))
    await api(c, out, A + "CREATE.S.W", cfg(num_replicas=-1))
    await api(c, out, A + "CREATE.S.W", cfg(name="a.b"))
    await api(c, out, A + "CREATE.S", cfg(name="a.b"))
    await api(c, out, A + "CREATE.S", cfg(name="Y", durable_name="Z"))
    await api(c, out, A + "CREATE.S", cfg(name="Y"))
    await api(c, out, A + "CREATE.S.W", cfg(flow_control=True))
    await api(c, out, A + "CREATE.S.W", cfg(idle_heartbeat=1000))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="x.y", idle_heartbeat=1000))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="x.*"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="x..y"))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="x.y", max_waiting=3))
    await api(c, out, A + "CREATE.S.W", cfg(deliver_subject="x.y", ack_policy="none", max_ack_pending=3))
    await api(c, out, A + "CREATE.S.W", cfg(rate_limit_bps=100))
    await api(c, out, A + "CREATE.S.W", cfg(max_batch=-1))
    await api(c, out, A + "CREATE.S.W", cfg(max_waiting=-1))
    await api(c, out, A + "CREATE.S.W", cfg(max_expires=10))
    await api(c, out, A + "CREATE.S.W", cfg(description="x" * 5000))
    await api(c, out, A + "CREATE.S.W", b"{bad")
    await api(c, out, A + "CREATE.S.W", b"")
    await api(c, out, A + "CREATE.S.W", b"{}")
    await api(c, out, A + "CREATE.NOPE.W", {"stream_name": "NOPE", "config": {}})
    await api(c, out, A + "CREATE.S.W", {"stream_name": "T", "config": {}})
    await api(c, out, A + "CREATE.S.W/x", cfg())
    await api(c, out, A + "CREATE.S", cfg(direct=True))
    await api(c, out, A + "CREATE.S.DD", cfg(deliver_subject="d.d", direct=True))
    await api(c, out, A + "INFO.S.W", b"")
    await api(c, out, A + "INFO.S.W", b"x")
    await api(c, out, A + "INFO.S.NOPE", b"")
    await api(c, out, A + "INFO.NOPE.W", b"")
    await api(c, out, A + "INFO.NOPE.W", b"x")
    await api(c, out, A + "DELETE.S.W", b"")
    await api(c, out, A + "DELETE.S.W", b"")
    await api(c, out, A + "DELETE.S.C2", b"x")
    await api(c, out, A + "DELETE.NOPE.C2", b"")
    await api(c, out, A + "NAMES.S", b"")
    await api(c, out, A + "NAMES.S", {"offset": 2})
    await api(c, out, A + "NAMES.S", {"offset": 200})
    await api(c, out, A + "NAMES.S", b"{bad")
    await api(c, out, A + "NAMES.NOPE", b"")
    await api(c, out, A + "LIST.S", {"offset": 3})
    await api(c, out, A + "LIST.NOPE", b"")


async def s_max_consumers_wq(c: RawClient, out: Out) -> None:
    await c.add_stream("M", ["m.>"], max_consumers=1)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.M.A", cfg("M"))
    await api(c, out, A + "CREATE.M.B", cfg("M"))
    await api(c, out, A + "CREATE.M.A", cfg("M", max_ack_pending=20))
    await c.add_stream("Q", ["q.>"], retention="workqueue")
    await api(c, out, A + "CREATE.Q.A", cfg("Q", ack_policy="none"))
    await api(c, out, A + "CREATE.Q.A", cfg("Q", ack_policy="all"))
    await api(c, out, A + "CREATE.Q.A", cfg("Q", deliver_policy="new"))
    await api(c, out, A + "CREATE.Q.A", cfg("Q"))
    await api(c, out, A + "CREATE.Q.B", cfg("Q"))
    await api(c, out, A + "CREATE.Q.B", cfg("Q", filter_subject="q.x"))
    await api(c, out, A + "DELETE.Q.A")
    await api(c, out, A + "CREATE.Q.B", cfg("Q", filter_subject="q.x"))
    await api(c, out, A + "CREATE.Q.C", cfg("Q", filter_subject="q.*"))
    await api(c, out, A + "CREATE.Q.C", cfg("Q", filter_subject="q.y"))
    await api(c, out, A + "CREATE.Q.D", cfg("Q", filter_subject="q.>"))
    await api(
        c, out, A + "CREATE.Q.E", cfg("Q", deliver_subject="pq", ack_policy="none", filter_subject="q.z")
    )


async def s_pull_statuses(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    await c.publish_many("s.a", 5)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.C", cfg(max_batch=20, max_expires=2_000_000_000, max_bytes=10000))
    await pull(c, out, "C", {"batch": 2, "no_wait": True}, "nowait2", quiet=0.6, expect=2)
    await pull(c, out, "C", {"batch": 10, "no_wait": True}, "nowait10")
    await pull(c, out, "C", {"batch": 1, "no_wait": True}, "nowait-empty")
    await pull(c, out, "C", {"batch": 1, "no_wait": True, "expires": 200_000_000}, "nowait-expires")
    await pull(c, out, "C", {"batch": 3, "expires": 200_000_000}, "expires")
    await pull(c, out, "C", {"batch": 30}, "maxbatch")
    await pull(c, out, "C", {"batch": 3, "expires": 3_000_000_000}, "maxexpires")
    await pull(c, out, "C", {"batch": 3, "max_bytes": 20000}, "maxbytes-limit")
    await pull(
        c, out, "C", {"batch": 3, "expires": 100_000_000, "idle_heartbeat": 60_000_000}, "hb-too-large"
    )
    await pull(c, out, "C", {"batch": 3, "idle_heartbeat": 60_000_000}, "hb-no-expires")
    await pull(c, out, "C", b"{bad", "badjson")
    await pull(c, out, "C", b"abc", "garbage", quiet=0.3)
    await c.publish_many("s.b", 4, "x")
    await pending(c, {"C": 4})  # the ack subjects' pending counts are what nats-server settles on
    await pull(c, out, "C", b"2", "int2", quiet=0.6, expect=2)
    await pull(c, out, "C", {"batch": 5, "max_bytes": 5}, "maxbytes-small")
    await pull(c, out, "C", {"batch": 5, "max_bytes": 100}, "maxbytes-100", quiet=0.6, expect=2)
    await pull(c, out, "C", {"batch": 1, "max_bytes": 1000}, "maxbytes-batch1", quiet=0.6)
    # Two heartbeats (250 and 500 ms) before the 408 at 700 ms: each server re-arms its heartbeat
    # after sending one, so they drift late under load; 200 ms of margin keeps the count at two.
    await pull(c, out, "C", {"batch": 5, "expires": 700_000_000, "idle_heartbeat": 250_000_000}, "hb")
    await api(c, out, A + "INFO.S.C")


async def s_pull_waiting(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.C", cfg(max_waiting=1))
    i1, i2 = c.new_inbox(), c.new_inbox()
    s1, s2 = c.subscribe(i1), c.subscribe(i2)
    c.pull("S", "C", i1, {"batch": 2, "expires": 2_000_000_000})
    await c.flush()
    c.pull("S", "C", i2, {"batch": 1, "expires": 2_000_000_000})
    out.append("second:")
    await drain(s2, out)
    await api(c, out, A + "INFO.S.C")
    await c.publish_js("s.x", b"one")
    out.append("first:")
    await drain(s1, out, quiet=0.3, expect=1, until_status=False)
    await api(c, out, A + "INFO.S.C")
    await api(c, out, A + "DELETE.S.C")
    out.append("first after delete:")
    await drain(s1, out)
    # requests pending: a no_wait request while a waiting request still wants more than is pending.
    # The waiting request first takes "one" (seen before going on, so the answer does not depend on
    # how soon either server delivers); max_ack_pending=1 then keeps "two" pending for it.
    await api(c, out, A + "CREATE.S.D", cfg(max_ack_pending=1))
    s3 = c.subscribe(i1 + "x")
    c.pull("S", "D", i1 + "x", {"batch": 5, "expires": 1_500_000_000})
    await drain(s3, out, until_status=False, limit=1)
    await c.publish_js("s.x", b"two")
    await pending(c, {"D": 1})
    await pull(c, out, "D", {"batch": 1, "no_wait": True}, "nowait-requests-pending")
    await drain(s3, out)
    # no interest: unsubscribed inbox request is dropped
    i4 = c.new_inbox()
    c.pull("S", "D", i4, {"batch": 5, "expires": 5_000_000_000})
    await c.flush()
    await api(c, out, A + "INFO.S.D")


async def s_max_deliver(c: RawClient, out: Out) -> None:
    adv = c.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>")
    await c.add_stream("S", ["s.>"])
    await c.publish_many("s.a", 2)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.B", cfg(ack_wait=300_000_000, max_deliver=2))
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("S", "B", inbox, {"batch": 10, "expires": 1_500_000_000})
    await drain(sub, out)
    await api(c, out, A + "INFO.S.B")
    await asyncio.sleep(0.5)
    await api(c, out, A + "INFO.S.B")
    for m in adv.drain():
        out.append("ADV " + m.subject + " " + m.data.decode())


async def s_ack_all(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    await c.publish_many("s.a", 5)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.L", cfg(ack_policy="all"))
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("S", "L", inbox, {"batch": 5})
    msgs = await sub.collect(5)
    r = await c.request(msgs[2].reply, b"")
    out.append(f"ack reply {r.data!r}")
    await api(c, out, A + "INFO.S.L")
    r = await c.request(msgs[1].reply, b"")
    out.append(f"ack reply {r.data!r}")
    await api(c, out, A + "INFO.S.L")
    r = await c.request(msgs[4].reply, b"+ACK")
    out.append(f"ack reply {r.data!r}")
    await api(c, out, A + "INFO.S.L")
    # explicit, out of order acks, ack floor movement
    await api(c, out, A + "CREATE.S.E", cfg())
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("S", "E", inbox, {"batch": 5})
    msgs = await sub.collect(5)
    for i in (1, 0, 3):
        await c.request(msgs[i].reply, b"")
        await api(c, out, A + "INFO.S.E")
    # +NXT
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.publish(msgs[2].reply, b"+NXT", inbox)
    await c.publish_js("s.b", b"later")
    await drain(sub, out, quiet=0.5, expect=1, until_status=False)
    await api(c, out, A + "INFO.S.E")
    # ack none
    await api(c, out, A + "CREATE.S.N", cfg(ack_policy="none"))
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("S", "N", inbox, {"batch": 3})
    msgs = await sub.collect(3)
    r = await c.request(msgs[0].reply, b"")
    out.append(f"ack none reply {r.data!r}")
    await api(c, out, A + "INFO.S.N")


async def s_push_interest(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    await c.publish_many("s.a", 3)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.P", cfg(deliver_subject="d.p", ack_policy="none"))
    out.append(f"bound0 {bound(await c.request(A + 'INFO.S.P'))}")
    w = c.subscribe("d.*")
    await push_bound(c, out, "bound-wildcard", "P", False)
    await drain(w, out, quiet=0.3, until_status=False)
    q = c.subscribe("d.p", queue="G")
    await push_bound(c, out, "bound-queue", "P", False)
    e = c.subscribe("d.p")
    await push_bound(c, out, "bound-exact", "P", True)
    await drain(e, out, quiet=0.3, expect=3, until_status=False)
    await api(c, out, A + "INFO.S.P")
    e.unsubscribe()
    w.unsubscribe()
    q.unsubscribe()
    await push_bound(c, out, "bound-after-unsub", "P", False)
    await api(c, out, A + "CREATE.S.G", cfg(deliver_subject="d.g", deliver_group="G", ack_policy="none"))
    e = c.subscribe("d.g")
    await push_bound(c, out, "group-plain", "G", False)
    q = c.subscribe("d.g", queue="H")
    await push_bound(c, out, "group-other", "G", False)
    q2 = c.subscribe("d.g", queue="G")
    await push_bound(c, out, "group-G", "G", True)
    await drain(q2, out, quiet=0.3, expect=3, until_status=False)
    await drain(e, out, quiet=0.3, expect=3, until_status=False)


async def s_deliver_policies(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    for i in range(9):
        await c.publish_js(
            "s." + "abc"[i % 3], f"m{i + 1}".encode(), hdr=headers(("X", str(i))) if i == 4 else None
        )
    r = await c.request("$JS.API.STREAM.MSG.GET.S", json.dumps({"seq": 5}).encode())
    t5 = json.loads(r.data)["message"]["time"]
    A = "$JS.API.CONSUMER."
    specs = {
        "ALL": dict(),
        "LAST": dict(deliver_policy="last"),
        "NEW": dict(deliver_policy="new"),
        "SEQ": dict(deliver_policy="by_start_sequence", opt_start_seq=4),
        "SEQ99": dict(deliver_policy="by_start_sequence", opt_start_seq=99),
        "TIME": dict(deliver_policy="by_start_time", opt_start_time=t5),
        "LPS": dict(deliver_policy="last_per_subject", filter_subject="s.*"),
        "LPSB": dict(deliver_policy="last_per_subject", filter_subject="s.b"),
        "LASTB": dict(deliver_policy="last", filter_subject="s.b"),
        "FB": dict(filter_subject="s.b"),
        "HO": dict(headers_only=True, ack_policy="none"),
    }
    for name, spec in specs.items():
        await api(c, out, A + f"CREATE.S.{name}", cfg(**spec))
        await pull(c, out, name, {"batch": 20, "no_wait": True}, name)
        await api(c, out, A + f"INFO.S.{name}")
    await c.publish_js("s.b", b"n1")
    await c.publish_js("s.c", b"n2")
    await pending(
        c, {name: 0 if name == "SEQ99" else 1 if name in ("LPSB", "LASTB", "FB") else 2 for name in specs}
    )
    for name in specs:
        await api(c, out, A + f"INFO.S.{name}")
        await pull(c, out, name, {"batch": 20, "no_wait": True}, name)
        await api(c, out, A + f"INFO.S.{name}")


async def s_empty_stream_policies(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    A = "$JS.API.CONSUMER."
    for name, spec in {
        "ALL": {},
        "LAST": dict(deliver_policy="last"),
        "NEW": dict(deliver_policy="new"),
        "LPS": dict(deliver_policy="last_per_subject", filter_subject="s.>"),
        "SEQ": dict(deliver_policy="by_start_sequence", opt_start_seq=10),
    }.items():
        await api(c, out, A + f"CREATE.S.{name}", cfg(**spec))
    await c.publish_many("s.x", 2)
    await pending(c, {"ALL": 2, "LAST": 2, "NEW": 2, "LPS": 2, "SEQ": 0})
    for name in ("ALL", "LAST", "NEW", "LPS", "SEQ"):
        await pull(c, out, name, {"batch": 5, "no_wait": True}, name)
        await api(c, out, A + f"INFO.S.{name}")
    await c.request("$JS.API.STREAM.PURGE.S", b"")
    await api(c, out, A + "CREATE.S.AFTER", cfg())
    await api(c, out, A + "INFO.S.ALL")
    await c.publish_many("s.y", 2)
    await pending(c, {"AFTER": 2})
    await pull(c, out, "AFTER", {"batch": 5, "no_wait": True}, "AFTER")
    await api(c, out, A + "INFO.S.AFTER")


async def s_lps_pending(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"])
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.LPS", cfg(deliver_policy="last_per_subject", filter_subject="s.>"))
    await api(c, out, A + "CREATE.S.ALL", cfg(filter_subject="s.>"))
    await c.publish_many("s.x", 2)
    await c.publish_many("s.y", 1)
    await pending(c, {"LPS": 3, "ALL": 3})
    await pull(c, out, "LPS", {"batch": 5, "no_wait": True}, "LPS")
    await pull(c, out, "ALL", {"batch": 5, "no_wait": True}, "ALL")
    await c.publish_many("s.x", 2)
    await c.publish_many("s.y", 1)
    await pending(c, {"LPS": 3})
    await api(c, out, A + "INFO.S.LPS")
    await pull(c, out, "LPS", {"batch": 5, "no_wait": True}, "LPS")


async def s_interest(c: RawClient, out: Out) -> None:
    await c.add_stream("S", ["s.>"], retention="interest")
    await c.publish_many("s.a", 2)
    await stream_state(c, out)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.S.A", cfg())
    await api(c, out, A + "CREATE.S.B", cfg(filter_subject="s.b"))
    await api(c, out, A + "CREATE.S.N", cfg(ack_policy="none", filter_subject="s.a"))
    await c.publish_many("s.a", 3)
    await c.publish_many("s.b", 2)
    await pending(c, {"A": 5, "B": 2, "N": 3})
    await stream_state(c, out)
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("S", "A", inbox, {"batch": 10})
    msgs = await sub.collect(5)
    await c.request(msgs[0].reply, b"")
    await stream_state(c, out)
    await pull(c, out, "N", {"batch": 10, "no_wait": True}, "N")
    await stream_state(c, out, settled=4)
    await c.request(msgs[3].reply, b"")
    await stream_state(c, out)
    await pull(c, out, "B", {"batch": 1, "no_wait": True}, "B", quiet=0.6, expect=1)
    await stream_state(c, out)
    await api(c, out, A + "DELETE.S.B")
    await stream_state(c, out, settled=3)
    await api(c, out, A + "DELETE.S.N")
    await api(c, out, A + "DELETE.S.A")
    await stream_state(c, out, settled=0)
    await c.publish_many("s.a", 2)
    await stream_state(c, out)


async def s_workqueue(c: RawClient, out: Out) -> None:
    await c.add_stream("W", ["w.>"], retention="workqueue")
    await c.publish_many("w.a", 3)
    await c.publish_many("w.b", 2)
    A = "$JS.API.CONSUMER."
    await api(c, out, A + "CREATE.W.A", cfg("W", filter_subject="w.a"))
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("W", "A", inbox, {"batch": 10, "no_wait": True})
    msgs = await sub.collect(3)
    await stream_state(c, out, "W")
    await c.request(msgs[1].reply, b"")
    await stream_state(c, out, "W")
    await c.request(msgs[0].reply, b"+TERM")
    await stream_state(c, out, "W")
    await api(c, out, A + "INFO.W.A")
    await api(c, out, A + "CREATE.W.B", cfg("W", filter_subject="w.b", ack_policy="all"))
    await api(c, out, A + "CREATE.W.B", cfg("W", filter_subject="w.b"))
    inbox = c.new_inbox()
    sub = c.subscribe(inbox)
    c.pull("W", "B", inbox, {"batch": 10, "no_wait": True})
    msgs = await sub.collect(2)
    await c.request(msgs[1].reply, b"")
    await stream_state(c, out, "W")
    await api(c, out, A + "DELETE.W.A")
    await stream_state(c, out, "W")


SCENARIOS: dict[str, Callable[[RawClient, Out], Awaitable[None]]] = {
    name.removeprefix("s_"): fn for name, fn in list(globals().items()) if name.startswith("s_")
}


async def transcript(url: str, scenario: Callable[[RawClient, Out], Awaitable[None]]) -> Out:
    client = await RawClient.connect(url)
    out: Out = []
    try:
        await scenario(client, out)
    finally:
        await client.close()
    return number_inboxes([normalise(line) for line in out])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_same_answers_as_nats_server(name: str, tmp_path: Path) -> None:
    results = {}
    for kind in (NATS_SERVER, EMBEDDED):
        target = make_target(kind, tmp_path / kind)
        try:
            results[kind] = await transcript(target.url, SCENARIOS[name])
        finally:
            target.stop()
    assert results[EMBEDDED] == results[NATS_SERVER]
