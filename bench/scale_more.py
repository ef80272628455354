"""More of bench_scale.py's dimensions: shapes users run that its first eight do not name.

    .venv/bin/python bench/bench_scale.py [its options] --dim streams,sources,watchers,...

Same driver, same table (``bench_scale.py``'s ``run_size``/``print_dimension``): each dimension at
three sizes ten times apart, both servers fresh side by side, server CPU from ``/proc`` (a run of
every dimension, without ``--dim``, runs these too).

- ``streams`` (100 / 1k / 10k streams, one subject each): ``STREAM.NAMES`` and ``STREAM.LIST`` paging
  (per stream listed), ``$JS.API.INFO``, publishes spread over all of them, a restart (until
  ``$JS.API.INFO`` counts every stream; the new process's CPU, per stream);
- ``sources`` (10k / 100k / 1M messages): a mirror catching up, a stream sourcing 10 streams
  catching up, and a stream sourcing one through a subject transform (per message copied);
- ``watchers`` (10 / 100 / 1k KV watchers — push consumers, ``last_per_subject``, each on its own
  literal deliver subject, all read by one connection; without flow control, whose requests the raw
  reader could miss when many consumers share the connection — one stalled watcher stalls the op)
  on one bucket): one put fanned out to all (per put);
- ``filters`` (10 / 100 / 1k ``filter_subjects`` on one consumer, over a stream of 100k messages on
  1,000 subjects): create + delete (per consumer), a push consumer's delivery (per delivered message);
- ``objects`` (1 / 10 / 100 MiB objects, chunks of 128 KiB): put and get (per MiB);
- ``ephemerals`` (100 / 1k / 10k ephemeral consumers): the inactivity clean-up of as many push
  ephemerals once the connection subscribed to their deliver subjects closes (per consumer), an
  ordered consumer created and deleted with them in place;
- ``queue`` (10 / 100 / 1k members of one queue group on one subject): a publish (per message), the
  members each on its own connection, and all on one connection (a run's queue segment either way:
  the members of one connection keep their frames in message order);
- ``subjects2`` (1k / 10k / 100k subjects, one message each): a direct get ``multi_last`` of 10
  subjects with ``up_to_seq`` (per request), ``STREAM.INFO`` with
  ``subjects_filter: ">"`` paged by ``offset`` (per subject listed), a direct get ``batch: 100`` of
  ``next_by_subj: "w.>"`` (per message), publishes with ``Nats-Expected-Last-Subject-Sequence`` and
  into a stream with ``republish`` or a ``subject_transform`` (per publish), purge by subject with ``keep: 1`` (per purge);
- ``deletes`` (10k / 100k / 1M messages on 1,000 subjects): ``STREAM.MSG.DELETE`` of random
  sequences, ``no_erase`` and secure erase (per delete), a ``by_start_time`` consumer created at the
  middle of the stream and deleted (per consumer);
- ``pauses`` (100 / 1k / 10k durable pull consumers on one stream): ``CONSUMER.PAUSE`` of one and its
  resume (per request);
- ``kvhist`` (1k / 10k / 100k keys of 3 revisions each, and 100 keys of 64, in a bucket with history 64):
  ``keys()`` (per key), the history of a 64-revision key (per call), a get of a key's first revision
  (per get);
- ``buckets`` (100 / 1k / 10k KV buckets in one account, file, history 1): a bucket's create (a
  timed build, per bucket), one more created and deleted beside them (per bucket), ``STREAM.NAMES``
  with a bucket's key subject (the stream of a subject, per request), ``STREAM.UPDATE`` of one (per
  request), puts spread over all of them (per put);
- ``expiry`` (100 / 1k / 10k durable consumers, each on its own subject, on a stream with ``max_age``
  1 s): 5,000 publishes over about a second and their expiry (per message);
- ``objstore`` (1k / 10k / 100k small objects in one object store, a chunk and an info message
  each): ``list()`` (per object), an object's info (a direct get, per request), an object's chunks
  read by an ordered consumer (per object);
- ``interest`` (10k / 100k / 1M messages in an interest stream with 100 durable pull consumers): one of
  them fetches and acks (per ack; the 99 others keep every message), ``CONSUMER.RESET`` of one that
  took nothing back to its ack floor (per request), a durable that took nothing created and deleted
  beside them (per consumer; nothing loses its last taker either way);
- ``monitor`` (10 / 100 / 1k connections, each with 100 subscriptions — 1k / 10k / 100k — and a few
  messages; both servers with a monitoring port, asked on one kept-alive HTTP connection): ``/varz``,
  ``/connz`` ``limit=10`` at the last page, sorted by ``msgs_to``, with ``subs=1``, all of it (per
  connection listed), ``/subsz`` and a middle page of ``/subsz?subs=1`` (per request);
- ``jsz`` (100 / 1k / 10k durable pull consumers, 100 a stream: 1 / 10 / 100 file streams of 10
  messages): ``/jsz``, ``/jsz?streams=1`` (per stream listed), ``/jsz?consumers=1`` with and without
  ``config=1`` (per consumer listed), ``$JS.API.INFO`` (per request);
- ``mappings`` (100 / 1k / 10k wildcard subject mappings ``mp.<i>.*`` -> ``mq.<i>.{{wildcard(1)}}``, the
  configuration's ``mappings``; session 13): a publish mapped by the last one (new subjects each, and
  100 subjects over and over: a cached result), by the first one, and one no mapping matches (per
  publish), a restart until the last mapping maps (per mapping);
- ``imports`` (account ``IMP`` importing 100 / 1k / 10k literal stream subjects ``s.<i>`` and as many
  services ``svc.<i>`` from ``EXP``; session 13): SUB + UNSUB in the importer of one import's subject
  (per pair), a publish in the exporter through one stream import (per message), a request through one
  service import (per request), a restart until the last service import answers (per import);
- ``sysreq`` (as ``monitor``: 10 / 100 / 1k connections with 100 subscriptions each, in account ``APP``; a
  system account ``SYS``; session 13): ``$SYS.REQ.SERVER.PING.<kind>`` for ``STATSZ``, ``VARZ``,
  ``CONNZ`` (per connection listed), ``SUBSZ``, ``JSZ``, ``HEALTHZ`` (per request), one in flight;
- ``kvops`` (1k / 10k / 100k keys ``k.<i % 10>.<i // 10>`` of a KV bucket, 100 of them deleted; session
  13): ``keys()`` filtered on ``k.3.*`` (a tenth; per key listed) and on ``k.*.<j>`` (10 keys; per
  call), ``purge_deletes(older_than)`` of young markers — a watch of every key and a purge keeping each
  marker, as nats.go's ``PurgeDeletes`` (per key of the bucket);
- ``nsources`` (a stream ``AGG`` sourcing 10 / 100 / 1k streams of 10 messages each; session 13): its
  catch-up (a timed build, per source), publishes into origins picked at random until ``AGG`` holds them
  (per message), ``STREAM.INFO`` of ``AGG`` (per request; it lists every source), ``STREAM.NAMES`` and
  ``STREAM.LIST`` with a subject of one origin, ``STREAM.MSG.GET`` of ``AGG`` from 1 with ``next_by_subj``
  a wildcard of the last origin's messages only (per request);
- ``dgroup`` (a push consumer with ``deliver_group`` and 10 / 100 / 1k members, each on its own connection;
  session 13): a publish delivered to one member (per message);
- ``kvbuckets`` (10 / 100 / 1k KV buckets, each watched — a push consumer, last per subject, flow control —
  on one connection; session 13): a put of a new key into one of them, until its watcher saw it (per put);
- ``ordered`` (10k / 100k / 1M file-stored messages on 1,000 subjects ``o.<a>.<b>``, after 10 on
  ``q.<i>``; session 14): an ordered push consumer's reset as nats.go makes it — a fresh inbox, an
  ephemeral consumer from a sequence near the end, unfiltered (the last 100) and filtered on one
  subject, ``o.*.3`` and ``o.99.*`` (from 1,000 back: 1, 100, 10 to send at every size), until they
  all arrived, then deleted (per reset) — and one from the middle on subjects quiet since the start
  (``q.3``, ``q.*``: nothing to send), its ``CONSUMER.INFO``, deleted (per consumer);
- ``republish`` (1k / 10k / 100k subjects; session 14): publishes onto random existing subjects of a
  stream republishing them into a stream that keeps one message a subject (``max_msgs_per_subject:
  1``: each copy replaces its subject's last), until every copy is stored; of a stream republishing
  to no stream; straight into a stream keeping one a subject (per publish).
- ``accounts`` (100 / 1k / 10k config-file accounts, each with a user and JetStream, a system account
  ``SYS``; session 15): CONNECT + PING + close as the last account's user (per connection), a publish
  in one account to its subscriber, into its stream (pipelined, and one at a time: per publish), its
  ``$JS.API.INFO``, a stream created and deleted in it (per pair), ``$SYS.REQ.SERVER.PING.STATSZ`` and
  ``$SYS.REQ.ACCOUNT.<last>.CONNZ`` (per request), a restart until the last account's user stores a
  message (per account).
- restarts beyond messages (``messages`` and ``gaps`` restart a stream of messages): a clean stop and a
  ``kill -9``, each until the new process answers for all of the state, per unit of it (the new
  process's CPU until then; resident memory after): ``rconsumers`` (100 / 1k / 10k durable pull
  consumers on one stream, a tenth of them with 10 pending acks; ready when ``STREAM.INFO`` counts
  them and ``CONSUMER.INFO`` gives the last one's pending), ``rkeys`` (1k / 10k / 100k keys of a KV
  bucket, one revision each; ready when ``STREAM.INFO`` counts the messages and subjects and the last
  key's get answers), ``rstreams`` (10 / 100 / 1k file streams of 10 messages each; ready when
  ``$JS.API.INFO`` counts them and the last one's ``STREAM.INFO`` its messages), ``racks`` (1k / 10k /
  100k pending acks of one consumer; ready when ``CONSUMER.INFO`` gives them all).
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tests.support.targets as bs_targets

import bench_scale as bs
from bench_scale import (
    P16,
    SECOND,
    Ctx,
    Deliveries,
    Dimension,
    Op,
    batched_requests,
    consume_push,
    create_kv_bucket,
    create_stream,
    list_pages,
    pubs,
    subject_of,
    timed_build,
)
from rawnats import ManyConns, RawConn, header_block, pub_frame, publish_window, wait_for

# ---- streams


def build_streams(ctx: Ctx) -> None:
    n = ctx.size

    def create() -> int:
        calls = [
            (f"$JS.API.STREAM.CREATE.ST{i}", {"name": f"ST{i}", "subjects": [f"st.{i}"], "storage": "file"})
            for i in range(n)
        ]
        batched_requests(ctx, calls, "stream create")
        return n

    timed_build(ctx, "create", "stream create", "stream", create)


def _account_info(ctx: Ctx) -> int:
    k = ctx.n(200)
    for _ in range(k):
        ctx.api.api("INFO")
    return k


def _pub_spread(ctx: Ctx) -> int:
    k, n = ctx.n(20_000), ctx.size
    return ctx.publish(pubs(f"st.{i % n}" for i in range(k)), k)


def _restart_streams(ctx: Ctx) -> int:
    ctx.restart_until(False, lambda: _answers(ctx, "INFO", {"streams": ctx.size}))
    return int(ctx.size)


def ops_streams() -> list[Op]:
    return [
        Op("names", "STREAM.NAMES paging", "stream listed", lambda c: list_pages(c, "STREAM.NAMES", "streams")),
        Op("list", "STREAM.LIST paging", "stream listed", lambda c: list_pages(c, "STREAM.LIST", "streams")),
        Op("info", "$JS.API.INFO (account info)", "request", _account_info),
        Op("pub_spread", "publish spread over all streams", "publish", _pub_spread),
        Op("restart", "restart after a clean stop", "stream", _restart_streams, once=True, restart=True),
    ]


# ---- sources


def build_sources(ctx: Ctx) -> None:
    m = ctx.size
    create_stream(ctx, "SRC", subjects=["src.>"])
    ctx.publish(pubs(f"src.{i % 100}" for i in range(m)), m)
    for j in range(10):
        create_stream(ctx, f"SRC{j}", subjects=[f"s10.{j}.>"])
        ctx.publish(pubs(f"s10.{j}.{i % 100}" for i in range(m // 10)), m // 10)


def _catch_up(ctx: Ctx, name: str, config: dict[str, Any]) -> int:
    create_stream(ctx, name, **config)
    m = ctx.size
    while ctx.stream_state(name)["messages"] < m:
        if not ctx.left():
            raise bs.Partial(ctx.stream_state(name)["messages"])
        time.sleep(0.05)
    return int(m)


def _delete(name: str) -> Any:
    return lambda c: c.api.api(f"STREAM.DELETE.{name}", check=False)


def ops_sources() -> list[Op]:
    sources = {"sources": [{"name": f"SRC{j}"} for j in range(10)]}
    transform = {"src": "src.*", "dest": "tx.{{wildcard(1)}}"}
    transformed = {"sources": [{"name": "SRC", "subject_transforms": [transform]}]}
    return [
        Op(
            "mirror",
            "a mirror catching up",
            "message",
            lambda c: _catch_up(c, "MIR", {"mirror": {"name": "SRC"}}),
            cleanup=_delete("MIR"),
        ),
        Op(
            "sources10",
            "sourcing 10 streams, catching up",
            "message",
            lambda c: _catch_up(c, "AGG", sources),
            cleanup=_delete("AGG"),
        ),
        Op(
            "transform",
            "a source with a subject transform, catching up",
            "message",
            lambda c: _catch_up(c, "STX", transformed),
            cleanup=_delete("STX"),
        ),
    ]


# ---- KV watchers


def build_watchers(ctx: Ctx) -> None:
    n = ctx.size
    create_kv_bucket(ctx, "W", 1)
    ctx.publish(pubs(f"$KV.W.k{i}" for i in range(100)), 100)
    dlv = Deliveries(ctx)
    # one literal subscription each: a wildcard one does not bind a push consumer (nats-server either)
    dlv.conn.send(b"".join(f"SUB _W.{i} {i}\r\n".encode() for i in range(n)))
    dlv.conn.flush()
    ctx.state["dlv"] = dlv

    def create() -> int:
        calls = [
            (
                f"$JS.API.CONSUMER.CREATE.KV_W.w{i}",
                {
                    "stream_name": "KV_W",
                    "config": {
                        "name": f"w{i}",
                        "deliver_subject": f"_W.{i}",
                        "filter_subject": "$KV.W.>",
                        "deliver_policy": "last_per_subject",
                        "ack_policy": "none",
                        "mem_storage": True,
                        "max_deliver": 1,
                        "inactive_threshold": 600 * SECOND,
                    },
                },
            )
            for i in range(n)
        ]
        batched_requests(ctx, calls, "watcher create")
        ctx.wait(lambda: dlv.conn.deliveries, 100 * n)
        return n

    timed_build(ctx, "create", "watcher create (+ its 100 keys)", "watcher", create)


def _put_fanout(ctx: Ctx) -> int:
    k, n = ctx.n(200), ctx.size
    dlv = ctx.state["dlv"]
    base = dlv.conn.deliveries
    # new keys: a put replacing one not yet delivered (max_msgs_per_subject 1) is rightly skipped
    tag = ctx.uid("p")
    ctx.publish(pubs(f"$KV.W.{tag}.{i}" for i in range(k)), k)
    ctx.wait(lambda: dlv.conn.deliveries - base, k * n)
    return k


def ops_watchers() -> list[Op]:
    return [Op("put", "a put fanned out to every watcher", "put", _put_fanout)]


# ---- filter_subjects


def build_filters(ctx: Ctx) -> None:
    m = ctx.n(100_000)
    create_stream(ctx, "F", subjects=["f.>"])
    ctx.publish(pubs(f"f.{i % 1000}" for i in range(m)), m)
    ctx.state["m"] = m


def _filters(ctx: Ctx) -> list[str]:
    k = ctx.size
    return [f"f.{j * (1000 // k)}" for j in range(k)]


def _create_delete(ctx: Ctx) -> int:
    k = ctx.n(100)
    for i in range(k):
        name = f"cf{i}"
        cfg = {"name": name, "ack_policy": "explicit", "filter_subjects": _filters(ctx)}
        ctx.api.api(f"CONSUMER.CREATE.F.{name}", {"stream_name": "F", "config": cfg})
        ctx.api.api(f"CONSUMER.DELETE.F.{name}")
    return k


def _deliver(ctx: Ctx) -> int:
    want = ctx.state["m"] * ctx.size // 1000
    return consume_push(ctx, "F", {"filter_subjects": _filters(ctx)}, want)


def ops_filters() -> list[Op]:
    return [
        Op("create", "consumer create + delete", "consumer", _create_delete),
        Op("push", "push consumer delivering the matches", "message", _deliver),
    ]


# ---- object store

CHUNK = 128 * 1024


def build_objects(ctx: Ctx) -> None:
    create_stream(
        ctx, "OBJ_O", subjects=["$O.O.C.>", "$O.O.M.>"], allow_rollup_hdrs=True, allow_direct=True, discard="new"
    )


def _put_object(ctx: Ctx) -> int:
    mib = ctx.size
    chunk = b"o" * CHUNK
    uid = ctx.uid("obj")
    ctx.state["obj"] = uid
    count = mib * (1 << 20) // CHUNK
    frames = (pub_frame(f"$O.O.C.{uid}", chunk, "_PA.1") for _ in range(count))
    publish_window(ctx.pub, frames, count, window=32, timeout=max(ctx.left(), 1.0), chunk=8)
    meta = json.dumps({"name": uid, "bucket": "O", "nuid": uid, "size": mib << 20, "chunks": count}).encode()
    ctx.publish(iter([pub_frame(f"$O.O.M.{uid}", meta, "_PA.1")]), 1)
    ctx.state["chunks"] = count
    return int(mib)


def _get_object(ctx: Ctx) -> int:
    cfg = {
        "filter_subject": f"$O.O.C.{ctx.state['obj']}",
        "flow_control": True,
        "idle_heartbeat": 5 * SECOND,
        "mem_storage": True,
        "max_deliver": 1,
    }
    consume_push(ctx, "OBJ_O", cfg, ctx.state["chunks"])
    return int(ctx.size)


def ops_objects() -> list[Op]:
    return [
        Op("put", "object put (128 KiB chunks)", "MiB", _put_object, once=True),
        Op("get", "object get (ordered push consumer)", "MiB", _get_object),
    ]


# ---- ephemeral consumers


def build_ephemerals(ctx: Ctx) -> None:
    create_stream(ctx, "E", subjects=["e.>"], max_consumers=3 * ctx.size + 1000)
    ctx.publish(pubs(f"e.{i % 10}" for i in range(1000)), 1000)
    timed_build(ctx, "create", "ephemeral create", "consumer", lambda: _make_ephemerals(ctx, 3600))


def _make_ephemerals(ctx: Ctx, threshold: int) -> int:
    config = {"ack_policy": "explicit", "inactive_threshold": threshold * SECOND}
    calls = [("$JS.API.CONSUMER.CREATE.E", {"stream_name": "E", "config": config})] * ctx.size
    batched_requests(ctx, calls, "ephemeral create")
    return int(ctx.size)


def _cleaned(ctx: Ctx) -> int:
    """The interest goes (`_prepare_ephemerals`' connection closes): every consumer's delete timer
    starts now, so every clean-up falls in the timed window."""
    ctx.state.pop("interest").close()
    while ctx.api.api("STREAM.INFO.E")["state"]["consumer_count"] > ctx.size:
        if not ctx.left():
            raise bs.Partial(0)
        time.sleep(0.1)
    return int(ctx.size)


def _ordered(ctx: Ctx) -> int:
    k = ctx.n(200)
    for _ in range(k):
        consume_push(
            ctx,
            "E",
            {"filter_subject": "e.3", "flow_control": True, "idle_heartbeat": 5 * SECOND, "mem_storage": True},
            100,
        )
    return k


def _prepare_ephemerals(ctx: Ctx) -> None:
    """``ctx.size`` ephemeral push consumers, each delivering to a subject a connection subscribes
    to, from new messages (none come). While that interest lasts no inactivity timer runs (nats-server
    ``updateDeliveryInterest``), so however long the creates take none is deleted before `_cleaned`
    takes the interest away. (Pull ephemerals' timers ran from their creates: at 10,000, under load,
    a server could delete them all before the window opened and measure nothing.)"""
    n = ctx.size
    interest = RawConn(ctx.port)  # not in ctx.conns: `_cleaned` closes it
    interest.send(b"".join(f"SUB ed.{i} {i}\r\n".encode() for i in range(n)))
    interest.flush()
    ctx.state["interest"] = interest
    base = {"ack_policy": "explicit", "deliver_policy": "new", "inactive_threshold": 3 * SECOND}
    calls = [
        ("$JS.API.CONSUMER.CREATE.E", {"stream_name": "E", "config": {**base, "deliver_subject": f"ed.{i}"}})
        for i in range(n)
    ]
    batched_requests(ctx, calls, "ephemeral create")


def ops_ephemerals() -> list[Op]:
    return [
        Op("ordered", "ordered consumer create + 100 msgs + delete", "consumer", _ordered),
        Op(
            "cleanup",
            "inactivity clean-up once their interest goes (3 s)",
            "consumer",
            _cleaned,
            prepare=_prepare_ephemerals,
            wall=False,
        ),
    ]


# ---- queue group


def build_queue(ctx: Ctx) -> None:
    """The members: each on its own connection (``many``, read by one thread), and all on one (``one``)."""
    n = ctx.size
    many = ManyConns(ctx.port, n)
    ctx.conns.append(many)
    for i in range(n):
        many.send(i, b"SUB qm g 1\r\n")
    many.flush()
    one = ctx.conn()
    one.send(b"".join(f"SUB qo g {i}\r\n".encode() for i in range(n)))
    one.flush()
    ctx.state["members"] = {"qm": many, "qo": one}


def _queue_pub(ctx: Ctx, subject: str) -> int:
    k = ctx.n(500_000) // 1000 * 1000
    members = ctx.state["members"][subject]
    pub = ctx.state.setdefault("qpub", ctx.conn())
    chunk = pub_frame(subject, P16) * 1000
    base = members.msgs
    for _ in range(k // 1000):
        pub.send(chunk)
    return ctx.wait(lambda: members.msgs - base, k)


def ops_queue() -> list[Op]:
    return [
        Op("pub", "publish to the group (a connection each)", "message", lambda c: _queue_pub(c, "qm")),
        Op("pub_one", "publish to the group (all on one connection)", "message", lambda c: _queue_pub(c, "qo")),
    ]


# ---- subjects, more shapes (explore3)


def build_subjects2(ctx: Ctx) -> None:
    """Stream ``W``: one message on each of ``n`` subjects ``w.<j>``, then one more on each of the
    first 1,000 (the purges with ``keep``); stream ``R`` republishes ``r.>`` to ``rp.>``."""
    n = ctx.size
    extra = min(n, 1000)
    create_stream(ctx, "W", subjects=["w.>"], allow_direct=True)
    ctx.publish(pubs(f"w.{j}" for j in range(n)), n)
    ctx.publish(pubs(f"w.{j}" for j in range(extra)), extra)
    ctx.state["last"] = {j: (n + 1 + j if j < extra else j + 1) for j in range(n)}
    create_stream(ctx, "R", subjects=["r.>"], republish={"src": "r.>", "dest": "rp.>"})
    ctx.publish(pubs(f"r.{j}" for j in range(n)), n)
    create_stream(ctx, "T", subjects=["t.>"], subject_transform={"src": "t.*", "dest": "tx.{{wildcard(1)}}"})
    ctx.publish(pubs(f"t.{j}" for j in range(n)), n)


#: Subjects the paged ``STREAM.INFO`` row lists at least (all of them, again, until this many):
#: ~0.4-0.9 µs a subject listed on both servers, so 500,000 are ~20-45 clock ticks. 20,000 were 1-5
#: (7-13 at 100,000 subjects, one pass), and session 16's run flagged the row on them.
INFO_LISTED = 500_000


def _info_all(ctx: Ctx) -> int:
    """STREAM.INFO ``subjects_filter: ">"``, paged with ``offset`` until every subject was listed
    (`INFO_LISTED` at least: every subject again until then)."""
    listed = 0
    while listed < max(ctx.size, ctx.n(INFO_LISTED)):
        offset = 0
        while offset < ctx.size:
            info = ctx.api.api("STREAM.INFO.W", {"subjects_filter": ">", "offset": offset})
            got = len(info["state"].get("subjects") or {})
            if not got:
                raise RuntimeError(f"STREAM.INFO paging stopped at {offset}: {str(info)[:200]}")
            listed, offset = listed + got, offset + got
    return listed


def _direct_batch(ctx: Ctx) -> int:
    """Direct get ``batch: 100`` of ``next_by_subj: "w.>"`` from a random sequence (per message)."""
    k = ctx.n(500)
    conn = ctx.state.get("dbconn")
    if conn is None:
        conn = ctx.state["dbconn"] = ctx.conn()
        conn.sub("_DB.*", 1)
        conn.flush()
    top = ctx.size + min(ctx.size, 1000) - 100
    frames = [
        pub_frame(
            "$JS.API.DIRECT.GET.W",
            json.dumps({"seq": random.randrange(1, top), "batch": 100, "next_by_subj": "w.>"}).encode(),
            f"_DB.{i}",
        )
        for i in range(k)
    ]
    base = conn.deliveries
    for i in range(0, k, 20):
        conn.send(b"".join(frames[i : i + 20]))
        ctx.wait(lambda: conn.deliveries - base, 100 * min(i + 20, k))
    return 100 * k


def _multi_last_upto(ctx: Ctx) -> int:
    """Direct get ``multi_last`` of 10 random subjects among the first 1,000 (two messages each)
    with ``up_to_seq`` at the end of the first pass: each subject's earlier message (per request)."""
    k, n = ctx.n(2000), ctx.size
    conn = ctx.state.get("mlconn")
    if conn is None:
        conn = ctx.state["mlconn"] = ctx.conn()
        conn.sub("_ML.*", 1)
        conn.flush()
    bodies = [
        json.dumps({"multi_last": [f"w.{j}" for j in random.sample(range(min(n, 1000)), 10)], "up_to_seq": n})
        for _ in range(k)
    ]
    base = conn.deliveries
    for i in range(0, k, 20):
        conn.send(b"".join(pub_frame("$JS.API.DIRECT.GET.W", b.encode(), f"_ML.{i}") for b in bodies[i : i + 20]))
        ctx.wait(lambda: conn.deliveries - base, 10 * min(i + 20, k))
    return k


def _pub_expect_subject(ctx: Ctx) -> int:
    """Publishes with ``Nats-Expected-Last-Subject-Sequence`` right for a random subject."""
    k, last = ctx.n(SUBJECT_PUBS), ctx.state["last"]
    seq = ctx.stream_state("W")["last_seq"]
    frames = []
    for _ in range(k):
        j = random.randrange(ctx.size)
        head = header_block(Nats_Expected_Last_Subject_Sequence=str(last[j]))
        seq += 1
        last[j] = seq
        frames.append(pub_frame(f"w.{j}", P16, "_PA.1", head))
    return ctx.publish(iter(frames), k)


def _purge_keep(ctx: Ctx) -> int:
    """STREAM.PURGE ``{"filter": "w.<j>", "keep": 1}`` of the first 1,000 subjects (two messages each)."""
    k = min(ctx.size, 1000)
    answers = ctx.requests([("$JS.API.STREAM.PURGE.W", {"filter": f"w.{j}", "keep": 1}) for j in range(k)])
    if any(not a.get("success") for a in answers):
        raise RuntimeError(f"purge keep: {answers[0]}")
    return k


#: Publishes of the publish rows: 100,000, ~50-100 clock ticks at 5-10 µs (20,000 were 10-20, a
#: tick 5-10% of the figure, and session 9's and 11's runs flagged different rows of them).
SUBJECT_PUBS = 100_000


def ops_subjects2() -> list[Op]:
    return [
        Op("multi_last_upto", "direct get multi_last 10 subj. with up_to_seq", "request", _multi_last_upto),
        Op("info_all", 'STREAM.INFO subjects_filter ">" (paged)', "subject listed", _info_all),
        Op("direct_batch", 'direct get batch 100, next_by_subj "w.>"', "message", _direct_batch),
        Op("expect_subj", "publish, Nats-Expected-Last-Subject-Sequence", "publish", _pub_expect_subject),
        Op(
            "republish",
            "publish, stream with republish",
            "publish",
            lambda c: c.publish(
                pubs(f"r.{random.randrange(c.size)}" for _ in range(c.n(SUBJECT_PUBS))), c.n(SUBJECT_PUBS)
            ),
        ),
        Op(
            "transform",
            "publish, stream with subject_transform",
            "publish",
            lambda c: c.publish(
                pubs(f"t.{random.randrange(c.size)}" for _ in range(c.n(SUBJECT_PUBS))), c.n(SUBJECT_PUBS)
            ),
        ),
        Op("purge_keep", "purge by subject, keep 1", "purge", _purge_keep, once=True),
    ]


# ---- message deletes and start by time (explore3)


def build_deletes(ctx: Ctx) -> None:
    m = ctx.size
    create_stream(ctx, "D", subjects=["d.>"])
    ctx.publish(pubs(f"d.{i % 1000}" for i in range(m // 2)), m // 2)
    time.sleep(0.01)
    ctx.state["mid"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{time.time_ns() % 10**9:09d}Z"
    time.sleep(0.01)
    ctx.publish(pubs(f"d.{i % 1000}" for i in range(m // 2, m)), m - m // 2)
    seqs = random.sample(range(1, m + 1), min(20_000, m // 2))
    ctx.state["del"] = seqs


def _msg_delete(ctx: Ctx, erase: bool) -> int:
    half = len(ctx.state["del"]) // 2
    seqs = ctx.state["del"][half:] if erase else ctx.state["del"][:half]
    calls = [("$JS.API.STREAM.MSG.DELETE.D", {"seq": s, "no_erase": not erase}) for s in seqs]
    answers = ctx.requests(calls)
    if any(not a.get("success") for a in answers):
        raise RuntimeError(f"msg delete: {answers[0]}")
    return len(seqs)


def _by_start_time(ctx: Ctx) -> int:
    k = ctx.n(100)
    for _ in range(k):
        name = ctx.uid("t")
        cfg = {"name": name, "deliver_policy": "by_start_time", "opt_start_time": ctx.state["mid"]}
        ctx.api.api(f"CONSUMER.CREATE.D.{name}", {"stream_name": "D", "config": cfg})
        ctx.api.api(f"CONSUMER.DELETE.D.{name}")
    return k


def ops_deletes() -> list[Op]:
    return [
        Op(
            "by_start_time",
            "consumer create (by_start_time, the middle) + delete",
            "consumer",
            _by_start_time,
        ),
        Op(
            "msg_delete",
            "STREAM.MSG.DELETE random seq (no_erase)",
            "delete",
            lambda c: _msg_delete(c, False),
            once=True,
        ),
        Op(
            "msg_erase",
            "STREAM.MSG.DELETE random seq (secure erase)",
            "delete",
            lambda c: _msg_delete(c, True),
            once=True,
        ),
    ]


# ---- paused consumers (explore3)


def build_pauses(ctx: Ctx) -> None:
    n = ctx.size
    create_stream(ctx, "PZ", subjects=["pz.>"], max_consumers=n + 1000)
    ctx.publish(pubs(f"pz.{i % 10}" for i in range(1000)), 1000)
    calls = [
        (
            f"$JS.API.CONSUMER.CREATE.PZ.p{i}",
            {"stream_name": "PZ", "config": {"durable_name": f"p{i}", "ack_policy": "explicit"}},
        )
        for i in range(n)
    ]
    timed_build(
        ctx,
        "create",
        "durable pull consumer create",
        "consumer",
        lambda: (batched_requests(ctx, calls, "create"), n)[1],
    )


def _pause_resume(ctx: Ctx) -> int:
    k = ctx.n(1000)
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    names = [f"p{random.randrange(ctx.size)}" for _ in range(k)]
    answers = ctx.requests([(f"$JS.API.CONSUMER.PAUSE.PZ.{c}", {"pause_until": until}) for c in names])
    answers += ctx.requests([(f"$JS.API.CONSUMER.PAUSE.PZ.{c}", {}) for c in names])
    if any("error" in a for a in answers):
        bad = next(i for i, a in enumerate(answers) if "error" in a)
        raise RuntimeError(f"pause {bad} {names[bad % k]}: {answers[bad]}")
    return 2 * k


def ops_pauses() -> list[Op]:
    return [Op("pause", "CONSUMER.PAUSE / resume of one", "request", _pause_resume)]



# ---- an interest stream's acks as its messages grow (explore3)


def build_interest(ctx: Ctx) -> None:
    """Stream ``IA`` (interest retention) with 100 durable pull consumers, then ``m`` messages."""
    m = ctx.size
    create_stream(ctx, "IA", subjects=["ia.>"], retention="interest")
    calls = [
        (
            f"$JS.API.CONSUMER.CREATE.IA.c{i}",
            {"stream_name": "IA", "config": {"durable_name": f"c{i}", "ack_policy": "explicit"}},
        )
        for i in range(100)
    ]
    batched_requests(ctx, calls, "create")
    ctx.publish(pubs(f"ia.{i % 100}" for i in range(m)), m, window=5000)
    ctx.state["acked"] = 0


def _ack_one_of_100(ctx: Ctx) -> int:
    """Consumer ``c0`` fetches the next 50,000 and acks each (99 others still to ack them): per ack,
    until its ack floor passed them."""
    k = min(ctx.n(50_000), ctx.size - ctx.state["acked"])
    dlv = ctx.state.get("dlv")
    if dlv is None:
        dlv = ctx.state["dlv"] = Deliveries(ctx, auto_ack=True)
        dlv.conn.sub("_IA.*", 1)
        dlv.conn.flush()
    body = json.dumps({"batch": k, "no_wait": True}).encode()
    base = dlv.acked
    dlv.conn.send(pub_frame("$JS.API.CONSUMER.MSG.NEXT.IA.c0", body, "_IA.1"))
    ctx.wait(lambda: dlv.acked - base, k)
    ctx.state["acked"] += k
    want = ctx.state["acked"]
    while ctx.api.api("CONSUMER.INFO.IA.c0")["ack_floor"]["stream_seq"] < want:
        if not ctx.left():
            raise bs.Partial(0)
        time.sleep(0.01)
    return k


def _reset_lagging(ctx: Ctx) -> int:
    """``CONSUMER.RESET`` of ``c1`` (nothing taken yet, as the 98 others) back to its ack floor, one
    request at a time (per request): nothing loses interest, the stream keeps every message."""
    k = ctx.n(200)
    for i in range(k):
        if not ctx.left():
            raise bs.Partial(i)
        reply = ctx.api.api("CONSUMER.RESET.IA.c1", timeout=ctx.left() + 60)
        if "error" in reply:
            raise RuntimeError(f"reset: {reply['error']}")
    return k


def _delete_lagging(ctx: Ctx) -> int:
    """A durable consumer that took nothing created and deleted beside the 100 (99 of them
    lagging too: each message still has takers), per consumer."""
    k = ctx.n(100)
    cfg = {"durable_name": "lag", "ack_policy": "explicit"}
    for i in range(k):
        if not ctx.left():
            raise bs.Partial(i)
        ctx.api.api("CONSUMER.CREATE.IA.lag", {"stream_name": "IA", "config": cfg})
        reply = ctx.api.api("CONSUMER.DELETE.IA.lag", timeout=ctx.left() + 60)
        if not reply.get("success"):
            raise RuntimeError(f"delete: {reply}")
    return k


def ops_interest() -> list[Op]:
    return [
        Op("ack_one", "ack by one of 100 consumers (fetch + ack)", "acked msg", _ack_one_of_100),
        Op("reset", "CONSUMER.RESET of a lagging consumer to its ack floor", "request", _reset_lagging),
        Op("lag_delete", "create + delete of a lagging consumer (others lag)", "consumer", _delete_lagging),
    ]


# ---- a KV bucket with history 64 (explore3)


def build_kvhist(ctx: Ctx) -> None:
    """Bucket ``H`` (history 64): ``n`` keys of 3 revisions each, and 100 keys of 64."""
    n = ctx.size
    create_kv_bucket(ctx, "H", 64)
    for _ in range(3):
        ctx.publish(pubs(f"$KV.H.k{j}" for j in range(n)), n, window=5000)
    ctx.publish(pubs(f"$KV.H.h{j % 100}" for j in range(6400)), 6400)
    ctx.state["last"] = ctx.stream_state("KV_H")["last_seq"]


def _kv_keys64(ctx: Ctx) -> int:
    return bs.kv_watch(ctx, "H", ctx.size + 100, True)


def _history64(ctx: Ctx) -> int:
    return bs.kv_history(ctx, "H", ctx.n(100), 64)


def _get_old_revision(ctx: Ctx) -> int:
    """A direct get of a random key's first revision (by sequence: ``kv.get(key, revision)``)."""
    k, n = ctx.n(20_000), ctx.size
    conn = ctx.state.get("hconn")
    if conn is None:
        conn = ctx.state["hconn"] = ctx.conn()
        conn.sub("_KH.*", 1)
        conn.flush()
    frames = [
        pub_frame("$JS.API.DIRECT.GET.KV_H", json.dumps({"seq": random.randrange(1, n + 1)}).encode(), f"_KH.{i}")
        for i in range(k)
    ]
    base = conn.deliveries
    for i in range(0, k, 100):
        conn.send(b"".join(frames[i : i + 100]))
        ctx.wait(lambda: conn.deliveries - base, min(i + 100, k))
    return k


def ops_kvhist() -> list[Op]:
    return [
        Op("keys", "KV keys() (headers only, 3 revisions a key)", "key", _kv_keys64),
        Op("history", "KV history of a key (64 revisions)", "call", _history64),
        Op("get_rev", "KV get of a key's first revision (direct get seq)", "get", _get_old_revision),
    ]


# ---- KV buckets in one account (explore4)


def _bucket_config(name: str) -> dict[str, Any]:
    """``KV_<name>`` as nats.go's ``CreateKeyValue`` makes it (history 1)."""
    return {
        "name": f"KV_{name}",
        "subjects": [f"$KV.{name}.>"],
        "max_msgs_per_subject": 1,
        "allow_direct": True,
        "allow_rollup_hdrs": True,
        "deny_delete": True,
        "discard": "new",
        "storage": "file",
    }


def build_buckets(ctx: Ctx) -> None:
    """``n`` KV buckets ``b<i>`` (file), created in batches (a timed build: per bucket)."""
    n = ctx.size

    def create() -> int:
        calls = [(f"$JS.API.STREAM.CREATE.KV_b{i}", _bucket_config(f"b{i}")) for i in range(n)]
        batched_requests(ctx, calls, "bucket create")
        return n

    timed_build(ctx, "create", "KV bucket create", "bucket", create)


def _bucket_create_delete(ctx: Ctx) -> int:
    """One more bucket created and deleted beside them (per bucket)."""
    k = ctx.n(50)
    for _ in range(k):
        ctx.api.api("STREAM.CREATE.KV_extra", _bucket_config("extra"))
        ctx.api.api("STREAM.DELETE.KV_extra")
    return k


def _bucket_update(ctx: Ctx) -> int:
    """``STREAM.UPDATE`` of a random bucket (its description changed), per request."""
    k, n = ctx.n(100), ctx.size
    for i in range(k):
        cfg = _bucket_config(f"b{random.randrange(n)}") | {"description": f"d{i}"}
        ctx.api.api(f"STREAM.UPDATE.{cfg['name']}", cfg)
    return k


def _bucket_put_spread(ctx: Ctx) -> int:
    """KV puts (``$KV.b<i>.k``) spread over every bucket, per put."""
    k, n = ctx.n(20_000), ctx.size
    return ctx.publish(pubs(f"$KV.b{i % n}.k" for i in range(k)), k)


def _bucket_by_subject(ctx: Ctx) -> int:
    """``STREAM.NAMES`` with a random bucket's key subject (a client's look-up of the stream of a
    subject: nats.go ``StreamNameBySubject``), per request."""
    k, n = ctx.n(200), ctx.size
    for _ in range(k):
        reply = ctx.api.api("STREAM.NAMES", {"subject": f"$KV.b{random.randrange(n)}.k"})
        if reply.get("total") != 1:
            raise RuntimeError(f"names: {reply}")
    return k


def ops_buckets() -> list[Op]:
    return [
        Op("create_delete", "create + delete of one more bucket", "bucket", _bucket_create_delete),
        Op("by_subject", "STREAM.NAMES of a bucket's key subject", "request", _bucket_by_subject),
        Op("update", "STREAM.UPDATE of a bucket", "request", _bucket_update),
        Op("put_spread", "KV put spread over all buckets", "put", _bucket_put_spread),
    ]


# ---- objects of one object store (explore4)


def build_objstore(ctx: Ctx) -> None:
    """Object store ``O`` (stream ``OBJ_O`` as nats.go makes it) with ``n`` small objects: each a
    chunk on ``$O.O.C.<id>`` and its info on ``$O.O.M.<name>``, as a put writes them."""
    n = ctx.size
    create_stream(
        ctx,
        "OBJ_O",
        subjects=["$O.O.C.>", "$O.O.M.>"],
        allow_direct=True,
        allow_rollup_hdrs=True,
        discard="new",
    )
    rollup = header_block(Nats_Rollup="sub")
    frames = (
        pub_frame(f"$O.O.C.c{i // 2}", P16, "_PA.1")
        if i % 2 == 0
        else pub_frame(f"$O.O.M.o{i // 2}", b'{"name":"o%d","chunks":1}' % (i // 2), "_PA.1", rollup)
        for i in range(2 * n)
    )
    ctx.publish(frames, 2 * n, window=5000)


def _obj_list(ctx: Ctx) -> int:
    """``list()``: an ordered push consumer on ``$O.O.M.>``, the last message of each, per object."""
    cfg = {"filter_subject": "$O.O.M.>", "deliver_policy": "last_per_subject", "flow_control": True}
    return consume_push(ctx, "OBJ_O", cfg | {"idle_heartbeat": 5 * SECOND, "mem_storage": True}, ctx.size)


def _obj_info(ctx: Ctx) -> int:
    """``info(name)``: a direct get of a random object's last info message, per request."""
    k, n = ctx.n(5000), ctx.size
    conn = ctx.state.get("oconn")
    if conn is None:
        conn = ctx.state["oconn"] = ctx.conn()
        conn.sub("_OI.*", 1)
        conn.flush()
    body = [json.dumps({"last_by_subj": f"$O.O.M.o{random.randrange(n)}"}).encode() for _ in range(k)]
    base = conn.deliveries
    for i in range(0, k, 100):
        conn.send(b"".join(pub_frame("$JS.API.DIRECT.GET.OBJ_O", b, f"_OI.{i}") for b in body[i : i + 100]))
        ctx.wait(lambda: conn.deliveries - base, min(i + 100, k))
    return k


def _obj_get(ctx: Ctx) -> int:
    """``get(name)``'s read of a random object's chunks: an ordered push consumer on its chunk
    subject, per object."""
    k, n = ctx.n(100), ctx.size
    for _ in range(k):
        cfg = {"filter_subject": f"$O.O.C.c{random.randrange(n)}", "flow_control": True}
        consume_push(ctx, "OBJ_O", cfg | {"idle_heartbeat": 5 * SECOND, "mem_storage": True}, 1)
    return k


def ops_objstore() -> list[Op]:
    return [
        Op("list", "object store list() (last info per object)", "object", _obj_list),
        Op("info", "object info (direct get last_by_subj)", "request", _obj_info),
        Op("get", "object get (ordered consumer on its chunks)", "object", _obj_get),
    ]


# ---- max_age expiry beside many consumers (explore4)


def build_expiry(ctx: Ctx) -> None:
    """Stream ``EX`` (file, ``max_age`` 1 s) with ``n`` durable pull consumers, each filtered to
    its own subject ``ex.<i>``, created in batches."""
    n = ctx.size
    create_stream(ctx, "EX", subjects=["ex.>"], max_age=SECOND, max_consumers=n + 100)
    calls = [
        (
            f"$JS.API.CONSUMER.CREATE.EX.c{i}",
            {"stream_name": "EX", "config": {"durable_name": f"c{i}", "ack_policy": "explicit", "filter_subject": f"ex.{i}"}},
        )
        for i in range(n)
    ]
    batched_requests(ctx, calls, "create")


def _publish_expire(ctx: Ctx) -> int:
    """5,000 publishes over ~1 s (50 batches of 100, 20 ms apart, spread over the consumers'
    subjects), then until max_age has removed them all: per message published and expired."""
    k, n = ctx.n(5000), ctx.size
    base = ctx.stream_state("EX")["last_seq"]
    for i in range(0, k, 100):
        ctx.publish(pubs(f"ex.{(base + j) % n}" for j in range(i, min(i + 100, k))), min(100, k - i))
        time.sleep(0.02)
    ctx.wait_messages("EX", 0, poll=0.1)
    return k


def ops_expiry() -> list[Op]:
    return [Op("expire", "publish at ~5k/s into max_age 1 s, all expired", "message", _publish_expire, wall=False)]


# ---- monitoring at scale (explore5): /connz, /subsz, /varz, /jsz as connections, subscriptions,
#      streams and consumers grow


def _http(ctx: Ctx, path: str) -> bytes:
    """A GET of the monitoring port on one kept-alive connection (the server's work, not a connect)."""
    conn = ctx.state.get("http")
    if conn is None:
        conn = ctx.state["http"] = http.client.HTTPConnection("127.0.0.1", ctx.target.http_port, timeout=120)
        ctx.conns.append(conn)  # closed with the context
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"GET {path}: {answer.status} {body[:200]!r}")
    return body


def _gets(path: Callable[[Ctx], str], count: int, per: Callable[[Ctx], int] = lambda c: 1) -> Callable[[Ctx], int]:
    """An op: ``count`` GETs of ``path(ctx)``, counted ``per(ctx)`` each (per item listed, or per request)."""

    def run(ctx: Ctx) -> int:
        k = ctx.n(count)
        for _ in range(k):
            _http(ctx, path(ctx))
        return k * per(ctx)

    return run


def build_monitor(ctx: Ctx) -> None:
    """``n`` connections (one reader), each with 100 subscriptions ``m.<i>.<j>`` and ``i % 7``
    messages sent to its own first one (so that the message counts differ)."""
    n = ctx.size
    many = ManyConns(ctx.port, n)
    ctx.conns.append(many)
    for i in range(n):
        subs = b"".join(f"SUB m.{i}.{j} {j}\r\n".encode() for j in range(100))
        many.send(i, subs + pub_frame(f"m.{i}.0", P16) * (i % 7))
    many.flush()


def ops_monitor() -> list[Op]:
    last = lambda c: f"/connz?offset={c.size - 10}&limit=10"  # noqa: E731
    return [
        Op("varz", "/varz", "request", _gets(lambda c: "/varz", 100)),
        Op("connz_end", "/connz limit 10, the last page", "request", _gets(last, 50)),
        Op("connz_sorted", "/connz sort=msgs_to limit 10", "request", _gets(lambda c: "/connz?sort=msgs_to&limit=10", 50)),
        Op("connz_subs", "/connz subs=1 limit 10", "request", _gets(lambda c: "/connz?subs=1&limit=10", 50)),
        Op("connz_all", "/connz (every connection)", "connection listed", _gets(lambda c: "/connz", 10, lambda c: c.size)),
        Op("subsz", "/subsz", "request", _gets(lambda c: "/subsz", 100)),
        Op("subsz_page", "/subsz subs=1 limit 100, a middle page", "request",
           _gets(lambda c: f"/subsz?subs=1&offset={c.size * 50}&limit=100", 10)),
    ]  # fmt: skip


def build_jsz(ctx: Ctx) -> None:
    """``n`` durable pull consumers, 100 a stream (``n / 100`` file streams of 10 messages each)."""
    n, streams = ctx.size, max(ctx.size // 100, 1)
    ctx.state["streams"] = streams
    for s in range(streams):
        create_stream(ctx, f"JZ{s}", subjects=[f"jz.{s}.>"])
    ctx.publish(pubs(f"jz.{i % streams}.{i}" for i in range(10 * streams)), 10 * streams)
    calls = [
        (
            f"$JS.API.CONSUMER.CREATE.JZ{i % streams}.c{i}",
            {"stream_name": f"JZ{i % streams}", "config": {"durable_name": f"c{i}", "ack_policy": "explicit"}},
        )
        for i in range(n)
    ]
    batched_requests(ctx, calls, "consumer create")


def ops_jsz() -> list[Op]:
    streams = lambda c: c.state["streams"]  # noqa: E731
    return [
        Op("jsz", "/jsz", "request", _gets(lambda c: "/jsz", 100)),
        Op("jsz_streams", "/jsz streams=1", "stream listed", _gets(lambda c: "/jsz?streams=1", 20, streams)),
        Op("jsz_consumers", "/jsz consumers=1", "consumer listed", _gets(lambda c: "/jsz?consumers=1", 3, lambda c: c.size)),
        Op("jsz_config", "/jsz consumers=1&config=1", "consumer listed",
           _gets(lambda c: "/jsz?consumers=1&config=1", 3, lambda c: c.size)),
        Op("js_info", "$JS.API.INFO (account info)", "request", _account_info),
    ]  # fmt: skip


# ---- session 13 (explore6): mappings, imports, the system account's requests, KV filters


def _core_sends(ctx: Ctx, receiver: Any, frames: Iterable[bytes], k: int, window: int = 5000) -> int:
    """``k`` core publishes (no reply) on one connection, at most ``window`` not yet received by
    ``receiver`` (a count-mode connection): until it received them all."""
    pub = ctx.state.get("core_pub")
    if pub is None:
        pub = ctx.state["core_pub"] = ctx.conn()
    base, sent, it = receiver.msgs, 0, iter(frames)
    while sent < k:
        take = min(1000, k - sent)
        if sent + take - (receiver.msgs - base) > window:
            ctx.wait(lambda: receiver.msgs - base, sent + take - window)
        pub.send(b"".join(itertools.islice(it, take)))
        sent += take
    return ctx.wait(lambda: receiver.msgs - base, k)


def _mapping_settings(n: int) -> dict[str, Any]:
    """``n`` wildcard mappings ``mp.<i>.*`` -> ``mq.<i>.{{wildcard(1)}}`` (the config's ``mappings``)."""
    return {"mappings": {f'"mp.{i}.*"': f"mq.{i}.{{{{wildcard(1)}}}}" for i in range(n)}}


def build_mappings(ctx: Ctx) -> None:
    sub = ctx.conn()
    sub.sub("mq.>", 1)
    sub.sub("un.>", 2)
    sub.flush()
    ctx.state["sub"] = sub


def _pub_mapped(subject: Callable[[Ctx, int], str], count: int) -> Callable[[Ctx], int]:
    def run(ctx: Ctx) -> int:
        k, tag = ctx.n(count), ctx.uid("t")
        return _core_sends(ctx, ctx.state["sub"], (pub_frame(subject(ctx, j).format(tag=tag), P16) for j in range(k)), k)

    return run


def _mapped_ready(ctx: Ctx) -> bool:
    """The restarted server maps: a publish to the last mapping's source arrives at its destination."""
    conn = ctx.conn()
    conn.sub(f"mq.{ctx.size - 1}.ready", 1)
    conn.flush()
    conn.pub(f"mp.{ctx.size - 1}.ready", P16)
    return wait_for(lambda: conn.msgs > 0, 5.0)


def ops_mappings() -> list[Op]:
    return [
        Op("pub_last", "publish mapped by the last mapping (new subjects)", "publish",
           _pub_mapped(lambda c, j: f"mp.{c.size - 1}.{{tag}}{j}", 20_000)),
        Op("pub_last_hot", "publish mapped by the last mapping (100 subjects)", "publish",
           _pub_mapped(lambda c, j: f"mp.{c.size - 1}.h{j % 100}", 20_000)),
        Op("pub_first", "publish mapped by the first mapping (new subjects)", "publish",
           _pub_mapped(lambda c, j: f"mp.0.{{tag}}{j}", 20_000)),
        Op("pub_unmapped", "publish no mapping matches (new subjects)", "publish",
           _pub_mapped(lambda c, j: f"un.{{tag}}{j}", 20_000)),
        Op("restart", "restart (until the last mapping maps)", "mapping",
           lambda c: (c.restart_until(False, lambda: _mapped_ready(c)), c.size)[1], once=True, restart=True),
    ]  # fmt: skip


def _import_settings(n: int) -> dict[str, Any]:
    """Account ``IMP`` (no_auth_user) imports ``n`` literal stream subjects ``s.<i>`` and ``n``
    services ``svc.<i>`` from ``EXP``, which exports ``s.>`` and ``svc.>``."""
    imports = [{"stream": {"account": "EXP", "subject": f"s.{i}"}} for i in range(n)]
    imports += [{"service": {"account": "EXP", "subject": f"svc.{i}"}} for i in range(n)]
    return {
        "accounts": {
            "EXP": {"users": [{"user": "exp", "password": "exp"}], "exports": [{"stream": "s.>"}, {"service": "svc.>"}]},
            "IMP": {"users": [{"user": "imp", "password": "imp"}], "imports": imports, "jetstream": "enabled"},
        },
        "no_auth_user": "imp",
    }


def build_imports(ctx: Ctx) -> None:
    """In ``IMP``: a subscriber on ``s.>``; in ``EXP``: a publisher and a responder on ``svc.>``."""
    sub = ctx.conn()
    sub.sub("s.>", 1)
    sub.flush()
    exp = ctx.conn(user="exp", password="exp")
    responder = ctx.conn(mode="frames", user="exp", password="exp", on_frames=_respond)
    responder.sub("svc.>", 1)
    responder.flush()
    ctx.state.update(sub=sub, exp=exp, core_pub=exp)


def _respond(conn: RawConn, frames: list[Any]) -> None:
    conn.send(b"".join(pub_frame(f.reply, b"ok") for f in frames if f.reply))


def _import_sub_unsub(ctx: Ctx) -> int:
    """SUB + UNSUB in the importer of a subject inside one import (its shadow comes and goes)."""
    k, n = ctx.n(2000), ctx.size
    conn = ctx.state.setdefault("subber", ctx.conn())
    conn.send(b"".join(f"SUB s.{random.randrange(n)} x{j}\r\nUNSUB x{j}\r\n".encode() for j in range(k)))
    conn.flush()
    return k


def _import_requests(ctx: Ctx) -> int:
    k, n = ctx.n(5000), ctx.size
    answers = ctx.api.requests([(f"svc.{random.randrange(n)}", b"q") for _ in range(k)], timeout=max(ctx.left(), 1.0), window=100)
    if any(a.payload != b"ok" for a in answers):
        raise RuntimeError("service import: a request not answered ok")
    return k


def _imports_ready(ctx: Ctx) -> bool:
    frame = ctx.api.request(f"svc.{ctx.size - 1}", b"q", timeout=5.0)
    return frame.payload == b"ok"


def ops_imports() -> list[Op]:
    return [
        Op("sub_unsub", "SUB + UNSUB in the importer (one import's subject)", "pair", _import_sub_unsub),
        Op("pub_stream", "publish in the exporter through one stream import", "message",
           _pub_mapped(lambda c, j: f"s.{random.randrange(c.size)}", 100_000)),
        Op("request", "request through one service import", "request", _import_requests),
        Op("restart", "restart (until the last service import answers)", "import",
           lambda c: (_restart_imports(c), c.size)[1], once=True, restart=True),
    ]  # fmt: skip


def _restart_imports(ctx: Ctx) -> None:
    ctx.restart_until(False, lambda: _respond_again(ctx) and _imports_ready(ctx))


def _respond_again(ctx: Ctx) -> bool:
    """After a restart the exporter's responder connects again."""
    if ctx.state.get("responder_up") is not ctx.target.process:
        responder = ctx.conn(mode="frames", user="exp", password="exp", on_frames=_respond)
        responder.sub("svc.>", 1)
        responder.flush()
        ctx.state["responder_up"] = ctx.target.process
    return True


#: The system account's requests (nats-server ``$SYS.REQ.SERVER.PING.<kind>``), asked by a user of it.
SYS_ACCOUNTS = {
    "accounts": {
        "SYS": {"users": [{"user": "sys", "password": "sys"}]},
        "APP": {"users": [{"user": "app", "password": "app"}], "jetstream": "enabled"},
    },
    "system_account": "SYS",
    "no_auth_user": "app",
}


def _sys_requests(kind: str, count: int, per: Callable[[Ctx], int] = lambda c: 1) -> Callable[[Ctx], int]:
    def run(ctx: Ctx) -> int:
        k = ctx.n(count)
        conn = ctx.state.get("sys")
        if conn is None:
            conn = ctx.state["sys"] = ctx.conn(mode="frames", user="sys", password="sys")
        answers = conn.requests([(f"$SYS.REQ.SERVER.PING.{kind}", b"")] * k, timeout=max(ctx.left(), 1.0), window=1)
        if any(b'"error"' in a.payload[:200] for a in answers):
            raise RuntimeError(f"{kind}: {answers[0].payload[:200]!r}")
        return k * per(ctx)

    return run


def build_sysreq(ctx: Ctx) -> None:
    """As ``monitor``: ``n`` connections (of account APP) with 100 subscriptions each, a few messages."""
    build_monitor(ctx)
    create_stream(ctx, "SQ", subjects=["sq.>"])
    ctx.publish(pubs(f"sq.{i}" for i in range(100)), 100)


def ops_sysreq() -> list[Op]:
    return [
        Op("statsz", "$SYS.REQ.SERVER.PING.STATSZ", "request", _sys_requests("STATSZ", 1000)),
        Op("varz", "$SYS.REQ.SERVER.PING.VARZ", "request", _sys_requests("VARZ", 1000)),
        Op("connz", "$SYS.REQ.SERVER.PING.CONNZ (every connection)", "connection listed",
           _sys_requests("CONNZ", 30, lambda c: c.size + 3)),
        Op("subsz", "$SYS.REQ.SERVER.PING.SUBSZ", "request", _sys_requests("SUBSZ", 300)),
        Op("jsz", "$SYS.REQ.SERVER.PING.JSZ", "request", _sys_requests("JSZ", 1000)),
        Op("healthz", "$SYS.REQ.SERVER.PING.HEALTHZ", "request", _sys_requests("HEALTHZ", 1000)),
    ]  # fmt: skip


def build_kvops(ctx: Ctx) -> None:
    """Bucket ``B`` (history 1): ``n`` keys ``k.<i % 10>.<i // 10>``, then 100 of them deleted (a delete
    marker each, as ``kv.delete``)."""
    n = ctx.size
    create_kv_bucket(ctx, "B", 1)
    ctx.publish(pubs(f"$KV.B.{subject_of(i)}" for i in range(n)), n)
    deleted = [f"$KV.B.{subject_of(i)}" for i in range(0, n, n // 100)]
    ctx.publish(pubs(deleted, lambda i: header_block(KV_Operation="DEL"), b""), len(deleted))
    ctx.state["deleted"] = deleted


def _keys_filtered(filter_: Callable[[Ctx], str], expected: Callable[[Ctx], int], count: int) -> Callable[[Ctx], int]:
    """``keys(filters=[...])`` as nats.go's ``ListKeysFiltered`` makes it: an ordered push consumer,
    last per subject, headers only, on the filter (the deleted keys' markers come too)."""

    def run(ctx: Ctx) -> int:
        for _ in range(count):
            bs.kv_watch_filtered(ctx, "B", filter_(ctx), expected(ctx), headers_only=True)
        return count * expected(ctx)

    return run


def _purge_deletes(ctx: Ctx) -> int:
    """``purge_deletes(older_than=30 min)`` of young markers: a watch of every key, then a purge
    of each marker keeping it (``keep: 1``), as nats.go's ``PurgeDeletes``; per key of the bucket."""
    bs.kv_watch_filtered(ctx, "B", "$KV.B.>", ctx.size, headers_only=False)
    deleted = ctx.state["deleted"]
    answers = ctx.requests([("$JS.API.STREAM.PURGE.KV_B", {"filter": s, "keep": 1}) for s in deleted])
    if any("error" in a for a in answers):
        raise RuntimeError(f"purge: {answers[0]}")
    return int(ctx.size)


def ops_kvops() -> list[Op]:
    return [
        Op("keys_tenth", "keys() filtered k.3.* (a tenth)", "key listed",
           _keys_filtered(lambda c: "$KV.B.k.3.*", lambda c: c.size // 10, 1)),
        Op("keys_ten", "keys() filtered k.*.<j> (10 keys)", "request",
           _keys_filtered(lambda c: f"$KV.B.k.*.{random.randrange(c.size // 10)}", lambda c: 10, 20)),
        Op("purge_deletes", "purge_deletes(older_than): watch + 100 purges keep 1", "key", _purge_deletes),
    ]  # fmt: skip


def build_nsources(ctx: Ctx) -> None:
    """``n`` origin streams ``O<i>`` (``o.<i>.>``), 10 messages each, and ``AGG`` sourcing all of them
    (a timed build: the aggregate's catch-up, per source)."""
    n = ctx.size
    calls = [(f"$JS.API.STREAM.CREATE.O{i}", {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "file"}) for i in range(n)]
    batched_requests(ctx, calls, "origin create")
    ctx.publish(pubs(f"o.{i % n}.{i}" for i in range(10 * n)), 10 * n)

    def catch_up() -> int:
        create_stream(ctx, "AGG", sources=[{"name": f"O{i}"} for i in range(n)])
        ctx.deadline = time.monotonic() + 600
        while ctx.stream_state("AGG")["messages"] < 10 * n:
            if not ctx.left():
                raise RuntimeError("AGG did not catch up")
            time.sleep(0.05)
        return n

    timed_build(ctx, "catch_up", "a stream sourcing them all, catching up", "source", catch_up)


def _pub_sourced(ctx: Ctx) -> int:
    """Publishes into origins picked at random, until the aggregate holds them all (per message; the
    aggregate's ``STREAM.INFO``, which lists every source, asked every 0.25 s: a few ms each at 1,000)."""
    k, n = ctx.n(20_000), ctx.size
    before = ctx.stream_state("AGG")["messages"]
    ctx.publish(pubs(f"o.{random.randrange(n)}.p" for _ in range(k)), k)
    while ctx.stream_state("AGG")["messages"] < before + k:
        if not ctx.left():
            raise bs.Partial(ctx.stream_state("AGG")["messages"] - before)
        time.sleep(0.25)
    return k


def _names_filtered(api: str, key: str) -> Callable[[Ctx], int]:
    """``STREAM.NAMES`` / ``STREAM.LIST`` with a subject naming one of the origins (per request)."""

    def run(ctx: Ctx) -> int:
        k, n = ctx.n(500), ctx.size
        answers = ctx.requests([(f"$JS.API.{api}", {"subject": f"o.{random.randrange(n)}.x"}) for _ in range(k)])
        if any(len(a.get(key) or []) != 1 for a in answers):
            raise RuntimeError(f"{api} subject: not one stream: {str(answers[0])[:200]}")
        return k

    return run


def _get_next_by_subj(ctx: Ctx) -> int:
    """``STREAM.MSG.GET`` of the aggregate from sequence 1, ``next_by_subj`` a wildcard that only the
    last origin's messages match (per request)."""
    k, n = ctx.n(500), ctx.size
    body = {"seq": 1, "next_by_subj": f"o.{n - 1}.*"}
    answers = ctx.requests([("$JS.API.STREAM.MSG.GET.AGG", body)] * k)
    if any("message" not in a for a in answers):
        raise RuntimeError(f"next_by_subj: {str(answers[0])[:200]}")
    return k


def ops_nsources() -> list[Op]:
    return [
        Op("pub_sourced", "publish into one origin, until sourced", "message", _pub_sourced),
        Op("info", "STREAM.INFO of the aggregate", "request",
           lambda c: len(c.requests([("$JS.API.STREAM.INFO.AGG", {})] * c.n(200)))),
        Op("names_subject", "STREAM.NAMES subject o.<i>.x (one of the streams)", "request",
           _names_filtered("STREAM.NAMES", "streams")),
        Op("list_subject", "STREAM.LIST subject o.<i>.x (one of the streams)", "request",
           _names_filtered("STREAM.LIST", "streams")),
        Op("next_by_subj", "MSG.GET of the aggregate, next_by_subj o.<last>.* from 1", "request", _get_next_by_subj),
    ]  # fmt: skip


def build_dgroup(ctx: Ctx) -> None:
    """A push consumer delivering to queue group ``g`` on ``_DG.1`` (``deliver_group``) with ``n``
    members, each on its own connection (``many``), over stream ``DG``."""
    n = ctx.size
    create_stream(ctx, "DG", subjects=["dg.>"])
    many = ManyConns(ctx.port, n)
    ctx.conns.append(many)
    for i in range(n):
        many.send(i, b"SUB _DG.1 g 1\r\n")
    many.flush()
    ctx.state["members"] = many
    cfg = {"durable_name": "D", "deliver_subject": "_DG.1", "deliver_group": "g", "ack_policy": "none"}
    ctx.api.api("CONSUMER.CREATE.DG.D", {"stream_name": "DG", "config": cfg})


def _dgroup_pub(ctx: Ctx) -> int:
    k = ctx.n(20_000)
    members = ctx.state["members"]
    base = members.msgs
    ctx.publish(pubs("dg.x" for _ in range(k)), k)
    return ctx.wait(lambda: members.msgs - base, k)


def ops_dgroup() -> list[Op]:
    return [Op("pub", "publish, delivered to one member of the group", "message", _dgroup_pub)]


def build_kvbuckets(ctx: Ctx) -> None:
    """``n`` KV buckets ``B<i>`` (file, history 1), each watched (a push consumer, last per subject,
    as ``watch``) on one connection."""
    n = ctx.size
    calls = [(f"$JS.API.STREAM.CREATE.KV_B{i}", {**_bucket_config(f"B{i}")}) for i in range(n)]
    batched_requests(ctx, calls, "bucket create")
    dlv = Deliveries(ctx)
    dlv.conn.send(b"".join(f"SUB _KW.{i} {i}\r\n".encode() for i in range(n)))
    dlv.conn.flush()
    ctx.state["dlv"] = dlv
    calls = [
        (f"$JS.API.CONSUMER.CREATE.KV_B{i}.w", {"stream_name": f"KV_B{i}", "config": {
            "name": "w", "deliver_subject": f"_KW.{i}", "filter_subject": f"$KV.B{i}.>",
            "deliver_policy": "last_per_subject", "ack_policy": "none", "mem_storage": True, "max_deliver": 1,
            "flow_control": True, "idle_heartbeat": 5 * SECOND, "inactive_threshold": 600 * SECOND}})
        for i in range(n)
    ]  # fmt: skip
    batched_requests(ctx, calls, "watcher create")


def _kvbuckets_put(ctx: Ctx) -> int:
    k, n, tag = ctx.n(5000), ctx.size, ctx.uid("k")
    dlv = ctx.state["dlv"]
    base = dlv.conn.deliveries
    # (new keys: a key put again before its watcher saw it would be seen once, as the last of it)
    ctx.publish(pubs(f"$KV.B{random.randrange(n)}.{tag}.{j}" for j in range(k)), k)
    return ctx.wait(lambda: dlv.conn.deliveries - base, k)


def ops_kvbuckets() -> list[Op]:
    return [Op("put", "a put into one bucket, seen by its watcher", "put", _kvbuckets_put)]


# ---- restarts (restart): what one restart costs as the state grows, beyond messages


# ---- ordered consumer resets (session 14, flags5)


def build_ordered(ctx: Ctx) -> None:
    """Stream ``OR``: 10 messages on subjects ``q.<i>`` (quiet since), then ``m`` on 1,000 subjects
    ``o.<i % 1000 // 10>.<i % 10>``, file-stored."""
    m = ctx.size
    create_stream(ctx, "OR", subjects=["o.>", "q.>"])
    ctx.publish(pubs(f"q.{i}" for i in range(10)), 10)
    ctx.publish(pubs(f"o.{i % 1000 // 10}.{i % 10}" for i in range(m)), m, window=5000)
    ctx.state["last"] = m + 10


def _ordered_config(name: str, deliver: str, filter_subject: str, start: int) -> dict[str, Any]:
    """The consumer config nats.go's ordered consumer asks for, from stream sequence ``start``."""
    return {
        "name": name,
        "deliver_subject": deliver,
        "filter_subject": filter_subject,
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": start,
        "ack_policy": "none",
        "max_deliver": 1,
        "flow_control": True,
        "idle_heartbeat": 5 * SECOND,
        "mem_storage": True,
        "num_replicas": 1,
        "inactive_threshold": 5 * SECOND,
    }


def _ordered_reset(filter_subject: str, back: int, expected: int) -> Callable[[Ctx], int]:
    """An ordered push consumer's reset as nats.go's ``resetOrderedConsumer`` makes it: a fresh
    inbox, a new ephemeral consumer from the stream sequence after the last one seen (here ``back``
    messages before the end: the same ``expected`` messages to send at every size), until they all
    arrived, then deleted and the inbox dropped (per reset)."""

    def run(ctx: Ctx) -> int:
        k = ctx.n(100)
        conn = ctx.state.get("oconn")
        if conn is None:
            conn = ctx.state["oconn"] = ctx.conn()
        for _ in range(k):
            name = ctx.uid("r")
            conn.sub(f"_ORD.{name}", name)
            conn.flush()
            cfg = _ordered_config(name, f"_ORD.{name}", filter_subject, ctx.state["last"] - back + 1)
            until = conn.deliveries + expected
            ctx.api.api(f"CONSUMER.CREATE.OR.{name}", {"stream_name": "OR", "config": cfg})
            ctx.wait(lambda: conn.deliveries, until)
            ctx.api.api(f"CONSUMER.DELETE.OR.{name}")
            conn.send(f"UNSUB {name}\r\n".encode())
        return k

    return run


def _quiet_reset(filter_subject: str) -> Callable[[Ctx], int]:
    """A reset from the middle of the stream of an ordered consumer whose subjects had no message
    since the start (a watch of quiet keys): nothing to send; created, its info (no pending), deleted."""

    def run(ctx: Ctx) -> int:
        k = ctx.n(100)
        for _ in range(k):
            name = ctx.uid("q")
            cfg = _ordered_config(name, f"_ORQ.{name}", filter_subject, ctx.state["last"] // 2)
            ctx.api.api(f"CONSUMER.CREATE.OR.{name}", {"stream_name": "OR", "config": cfg})
            info = ctx.api.api(f"CONSUMER.INFO.OR.{name}")
            if info["num_pending"]:
                raise RuntimeError(f"quiet reset: {info}")
            ctx.api.api(f"CONSUMER.DELETE.OR.{name}")
        return k

    return run


def ops_ordered() -> list[Op]:
    return [
        Op("reset_all", "ordered consumer reset (no filter, the last 100) + delete", "reset",
           _ordered_reset(">", 100, 100)),
        Op("reset_lit", "ordered consumer reset (one subject, from 1,000 back: 1) + delete", "reset",
           _ordered_reset("o.7.3", 1000, 1)),
        Op("reset_wild", "ordered consumer reset (o.*.3, from 1,000 back: 100) + delete", "reset",
           _ordered_reset("o.*.3", 1000, 100)),
        Op("reset_rare", "ordered consumer reset (o.99.*, from 1,000 back: 10) + delete", "reset",
           _ordered_reset("o.99.*", 1000, 10)),
        Op("quiet_lit", "consumer from the middle on a quiet subject (q.3) + info + delete", "consumer",
           _quiet_reset("q.3")),
        Op("quiet_wild", "consumer from the middle on quiet subjects (q.*) + info + delete", "consumer",
           _quiet_reset("q.*")),
    ]  # fmt: skip



# ---- a republish into a stream that keeps one message a subject (session 14, flags5)


def build_republish(ctx: Ctx) -> None:
    """Stream ``RA`` republishes ``ra.>`` to ``rb.>``, which stream ``RB`` keeps one message a
    subject of (``max_msgs_per_subject: 1``); ``RC`` republishes ``rc.>`` to ``rd.>`` (no stream);
    ``RK`` keeps one a subject of ``rk.>``. ``n`` subjects published once into each."""
    n = ctx.size
    create_stream(ctx, "RA", subjects=["ra.>"], republish={"src": "ra.>", "dest": "rb.>"})
    create_stream(ctx, "RB", subjects=["rb.>"], max_msgs_per_subject=1)
    create_stream(ctx, "RC", subjects=["rc.>"], republish={"src": "rc.>", "dest": "rd.>"})
    create_stream(ctx, "RK", subjects=["rk.>"], max_msgs_per_subject=1)
    for prefix in ("ra", "rc", "rk"):
        ctx.publish(pubs(f"{prefix}.{j}" for j in range(n)), n)
    ctx.state["copies"] = n


def _pub_random(prefix: str, copies: bool = False) -> Callable[[Ctx], int]:
    """Publishes onto random existing subjects ``<prefix>.<j>`` (per publish); ``copies``: until
    ``RB`` stored each one's copy (the per-subject limit keeping it at ``n`` messages)."""

    def run(ctx: Ctx) -> int:
        k = ctx.n(SUBJECT_PUBS // 2)
        done = ctx.publish(pubs(f"{prefix}.{random.randrange(ctx.size)}" for _ in range(k)), k)
        if copies:
            ctx.state["copies"] += k
            want = ctx.state["copies"]
            while ctx.stream_state("RB")["last_seq"] < want:  # (a few polls: a copy is at most once)
                if not ctx.left():
                    raise bs.Partial(k)
                time.sleep(0.005)
        return done

    return run


def ops_republish() -> list[Op]:
    return [
        Op("rep_limit", "publish, republished into a max_msgs_per_subject 1 stream", "publish",
           _pub_random("ra", copies=True)),
        Op("rep_plain", "publish, republished to no stream", "publish", _pub_random("rc")),
        Op("limit", "publish into a max_msgs_per_subject 1 stream", "publish", _pub_random("rk")),
    ]  # fmt: skip

# ---- session 15 (accounts8): many accounts on one server

# A server of 10,000 accounts (JetStream in each) starts in ~6 s of CPU, and in 20 s or more of
# wall at a load of 10-16 (a store directory made for each account): wait for it as long.
bs_targets.START_TIMEOUT = max(bs_targets.START_TIMEOUT, 120.0)


def _account_settings(n: int) -> dict[str, Any]:
    """``n`` config-file accounts ``A<i>``, each with a user ``u<i>`` (password ``p<i>``) and JetStream
    enabled, a system account ``SYS`` (user ``sys``); connections without credentials are the last
    account's user (``no_auth_user``), so that the driver's own connections work in ``A<n-1>``."""
    accounts: dict[str, Any] = {"SYS": {"users": [{"user": "sys", "password": "sys"}]}}
    for i in range(n):
        accounts[f"A{i}"] = {"users": [{"user": f"u{i}", "password": f"p{i}"}], "jetstream": "enabled"}
    return {"accounts": accounts, "system_account": "SYS", "no_auth_user": f"u{n - 1}"}


def build_accounts(ctx: Ctx) -> None:
    """In the last account: stream ``AS`` on ``as.>`` (the restart's readiness), a subscriber on ``ap.>``."""
    create_stream(ctx, "AS", subjects=["as.>"])
    sub = ctx.conn()
    sub.sub("ap.>", 1)
    sub.flush()
    ctx.state["sub"] = sub


def _connect_last(ctx: Ctx) -> int:
    """CONNECT with the last account's user and password, PING / PONG, close (per connection)."""
    k, last = ctx.n(300), ctx.size - 1
    for _ in range(k):
        RawConn(ctx.port, user=f"u{last}", password=f"p{last}").close()
    return k


def _stream_requests(ctx: Ctx) -> int:
    """Publishes into the last account's stream, each waiting for its PubAck (a lone publisher's
    limit checks: one each, none shared by a run)."""
    k = ctx.n(2000)
    answers = ctx.api.requests([(f"as.{j % 100}", P16) for j in range(k)], timeout=max(ctx.left(), 1.0), window=1)
    if any(b'"seq"' not in a.payload for a in answers):
        raise RuntimeError(f"publish into AS: {answers[0].payload[:200]!r}")
    return k


def _stream_create_delete(ctx: Ctx) -> int:
    """A stream created and deleted in the last account (per pair)."""
    k = ctx.n(100)
    for _ in range(k):
        ctx.api.api("STREAM.CREATE.AX", {"name": "AX", "subjects": ["ax.>"], "storage": "file"})
        ctx.api.api("STREAM.DELETE.AX")
    return k


def _sys_request(subject: Callable[[Ctx], str], count: int) -> Callable[[Ctx], int]:
    """``count`` requests of the system account's user, one in flight (per request)."""

    def run(ctx: Ctx) -> int:
        k = ctx.n(count)
        conn = ctx.state.get("sys")
        if conn is None:
            conn = ctx.state["sys"] = ctx.conn(mode="frames", user="sys", password="sys")
        answers = conn.requests([(subject(ctx), b"")] * k, timeout=max(ctx.left(), 1.0), window=1)
        if any(b'"error"' in a.payload[:200] or not a.payload for a in answers):
            raise RuntimeError(f"{subject(ctx)}: {answers[0].payload[:200]!r}")
        return k

    return run


def _stored_in_last(ctx: Ctx) -> bool:
    """A user of the last account publishes into its stream and gets the PubAck."""
    conn = ctx.conn(mode="frames", user=f"u{ctx.size - 1}", password=f"p{ctx.size - 1}")
    frame = conn.request("as.ready", b"x", timeout=5.0)
    return b'"stream":"AS"' in frame.payload


def ops_accounts() -> list[Op]:
    return [
        Op("connect", "connect + auth + close (a user of the last account)", "connection", _connect_last),
        Op("pub", "publish in one account (its subscriber)", "publish",
           _pub_mapped(lambda c, j: f"ap.{{tag}}{j % 100}", 20_000)),
        Op("js_pub", "publish into a stream of one account", "publish",
           lambda c: c.publish(pubs(f"as.{j % 100}" for j in range(c.n(20_000))), c.n(20_000))),
        Op("js_req", "publish into a stream of one account, one at a time", "publish", _stream_requests),
        Op("js_info", "$JS.API.INFO in one account", "request", _account_info),
        Op("stream_cd", "stream create + delete in one account", "pair", _stream_create_delete),
        Op("statsz", "$SYS.REQ.SERVER.PING.STATSZ", "request",
           _sys_request(lambda c: "$SYS.REQ.SERVER.PING.STATSZ", 1000)),
        Op("acc_connz", "$SYS.REQ.ACCOUNT.<last>.CONNZ", "request",
           _sys_request(lambda c: f"$SYS.REQ.ACCOUNT.A{c.size - 1}.CONNZ", 1000)),
        Op("restart", "restart (until the last account's user stores a message)", "account",
           lambda c: (c.restart_until(False, lambda: _stored_in_last(c)), c.size)[1], once=True, restart=True),
    ]  # fmt: skip


def _answers(ctx: Ctx, api: str, want: dict[str, Any], body: dict[str, Any] | None = None) -> bool:
    """Whether ``$JS.API.<api>`` answers with each of ``want``'s dotted fields at its value."""
    info = ctx.api.api(api, body, timeout=max(ctx.left(), 1.0), check=False)
    for path, value in want.items():
        got: Any = info
        for part in path.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        if got != value:
            return False
    return True


def _fetch(ctx: Ctx, stream: str, names: list[str], batch: int) -> None:
    """Each of ``names`` (durable pull consumers) fetches ``batch`` messages, left unacknowledged."""
    conn = ctx.conn()
    conn.sub("_RF.*", 1)
    conn.flush()
    body = json.dumps({"batch": batch, "no_wait": True}).encode()
    for i in range(0, len(names), 100):
        nexts = (pub_frame(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{c}", body, "_RF.1") for c in names[i : i + 100])
        conn.send(b"".join(nexts))
        ctx.wait(lambda: conn.deliveries, batch * min(i + 100, len(names)))
    conn.close()


def build_rconsumers(ctx: Ctx) -> None:
    """Stream ``RC`` (1,000 messages) with ``n`` durable pull consumers; every tenth has 10 pending acks."""
    n = ctx.size
    create_stream(ctx, "RC", subjects=["rc.>"], max_consumers=n + 1000)
    ctx.publish(pubs(f"rc.{i % 10}" for i in range(1000)), 1000)
    config = {"ack_policy": "explicit", "ack_wait": 3600 * SECOND}
    calls = [
        (f"$JS.API.CONSUMER.CREATE.RC.c{i}", {"stream_name": "RC", "config": {"durable_name": f"c{i}", **config}})
        for i in range(n)
    ]
    batched_requests(ctx, calls, "create")
    _fetch(ctx, "RC", [f"c{i}" for i in range(0, n, 10)], 10)


def _rconsumers_ready(ctx: Ctx) -> bool:
    last = (ctx.size - 1) // 10 * 10
    return (
        _answers(ctx, "STREAM.INFO.RC", {"state.consumer_count": ctx.size})
        and _answers(ctx, f"CONSUMER.INFO.RC.c{last}", {"num_ack_pending": 10})
        and _answers(ctx, f"CONSUMER.INFO.RC.c{ctx.size - 1}", {"delivered.stream_seq": 0})
    )


def build_rkeys(ctx: Ctx) -> None:
    """Bucket ``R``: ``n`` keys of one revision each."""
    n = ctx.size
    create_kv_bucket(ctx, "R", 1)
    ctx.publish(pubs(f"$KV.R.k{j}" for j in range(n)), n, window=5000)


def _rkeys_ready(ctx: Ctx) -> bool:
    n = ctx.size
    return _answers(ctx, "STREAM.INFO.KV_R", {"state.messages": n, "state.num_subjects": n}) and _answers(
        ctx, "STREAM.MSG.GET.KV_R", {"message.seq": n}, {"last_by_subj": f"$KV.R.k{n - 1}"}
    )


def build_rstreams(ctx: Ctx) -> None:
    """``n`` file streams of 10 messages each."""
    n = ctx.size
    calls = [
        (f"$JS.API.STREAM.CREATE.RS{i}", {"name": f"RS{i}", "subjects": [f"rs.{i}"], "storage": "file"})
        for i in range(n)
    ]
    batched_requests(ctx, calls, "stream create")
    ctx.publish(pubs(f"rs.{i % n}" for i in range(10 * n)), 10 * n, window=5000)


def _rstreams_ready(ctx: Ctx) -> bool:
    return _answers(ctx, "INFO", {"streams": ctx.size}) and _answers(
        ctx, f"STREAM.INFO.RS{ctx.size - 1}", {"state.messages": 10}
    )


def build_racks(ctx: Ctx) -> None:
    """Stream ``RA``, one durable pull consumer with ``p`` pending acks."""
    p = ctx.size
    create_stream(ctx, "RA", subjects=["ra.>"])
    ctx.publish(pubs(f"ra.{i % 10}" for i in range(p + 1000)), p + 1000, window=5000)
    config = {"durable_name": "A", "ack_policy": "explicit", "ack_wait": 3600 * SECOND, "max_ack_pending": p}
    ctx.api.api("CONSUMER.CREATE.RA.A", {"stream_name": "RA", "config": config})
    _fetch(ctx, "RA", ["A"], p)


def more_restart_dimensions() -> list[Dimension]:
    return [
        Dimension(
            "rconsumers",
            "restart: durable consumers on one stream (a tenth with 10 pending acks)",
            [100, 1000, 10_000],
            [10, 100, 1000],
            build_rconsumers,
            bs.restart_ops(_rconsumers_ready, "consumer"),
        ),
        Dimension(
            "rkeys",
            "restart: keys of a KV bucket (one revision each)",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_rkeys,
            bs.restart_ops(_rkeys_ready, "key"),
        ),
        Dimension(
            "rstreams",
            "restart: file streams (10 messages each)",
            [10, 100, 1000],
            [10, 100, 100],
            build_rstreams,
            bs.restart_ops(_rstreams_ready, "stream"),
        ),
        Dimension(
            "racks",
            "restart: pending acks of one consumer",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_racks,
            bs.restart_ops(lambda c: _answers(c, "CONSUMER.INFO.RA.A", {"num_ack_pending": c.size}), "pending ack"),
        ),
    ]


def explore6_dimensions() -> list[Dimension]:
    return [
        Dimension("mappings", "subject mappings (wildcard)", [100, 1000, 10_000], [10, 100, 1000], build_mappings,
                  ops_mappings(), sized_settings=_mapping_settings),
        Dimension("imports", "stream + service imports of one account", [100, 1000, 10_000], [10, 100, 1000],
                  build_imports, ops_imports(), sized_settings=_import_settings),
        Dimension("sysreq", "connections, 100 subscriptions each ($SYS requests)", [10, 100, 1000], [10, 100, 100],
                  build_sysreq, ops_sysreq(), settings=SYS_ACCOUNTS),
        Dimension("kvops", "keys of a KV bucket (filters, purge_deletes)", [1000, 10_000, 100_000],
                  [1000, 10_000, 10_000], build_kvops, ops_kvops()),
        Dimension("nsources", "streams one stream sources", [10, 100, 1000], [10, 100, 100], build_nsources,
                  ops_nsources()),
        Dimension("dgroup", "members of a push consumer's deliver group", [10, 100, 1000], [10, 100, 100],
                  build_dgroup, ops_dgroup()),
        Dimension("kvbuckets", "KV buckets, each watched, on one connection", [10, 100, 1000], [10, 100, 100],
                  build_kvbuckets, ops_kvbuckets()),
        Dimension("ordered", "messages of a stream (ordered consumer resets)", [10_000, 100_000, 1_000_000],
                  [1000, 10_000, 100_000], build_ordered, ops_ordered()),
        Dimension("republish", "subjects republished into a stream keeping one a subject", [1000, 10_000, 100_000],
                  [100, 1000, 10_000], build_republish, ops_republish()),
        Dimension("accounts", "config-file accounts, a user and JetStream each", [100, 1000, 10_000],
                  [10, 100, 1000], build_accounts, ops_accounts(), sized_settings=_account_settings),
    ]  # fmt: skip


def more_dimensions() -> list[Dimension]:
    dims = [
        Dimension("streams", "streams in an account", [100, 1000, 10_000], [10, 100, 1000], build_streams, ops_streams()),
        Dimension(
            "sources",
            "messages a mirror / sources catch up",
            [10_000, 100_000, 1_000_000],
            [1000, 10_000, 100_000],
            build_sources,
            ops_sources(),
        ),
        Dimension("watchers", "KV watchers on one bucket", [10, 100, 1000], [10, 100, 100], build_watchers, ops_watchers()),
        Dimension("filters", "filter_subjects of one consumer", [10, 100, 1000], [10, 100, 1000], build_filters, ops_filters()),
        Dimension("objects", "object size (MiB)", [1, 10, 100], [1, 10, 10], build_objects, ops_objects()),
        Dimension(
            "ephemerals", "ephemeral consumers", [100, 1000, 10_000], [10, 100, 1000], build_ephemerals, ops_ephemerals()
        ),
        Dimension("queue", "queue group members", [10, 100, 1000], [10, 100, 1000], build_queue, ops_queue()),
        Dimension(
            "subjects2",
            "subjects (more shapes)",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_subjects2,
            ops_subjects2(),
        ),
        Dimension(
            "deletes",
            "messages (deletes, start time)",
            [10_000, 100_000, 1_000_000],
            [1000, 10_000, 100_000],
            build_deletes,
            ops_deletes(),
        ),
        Dimension("pauses", "consumers (pause)", [100, 1000, 10_000], [10, 100, 1000], build_pauses, ops_pauses()),
        Dimension(
            "kvhist", "keys of a KV bucket with history 64", [1000, 10_000, 100_000], [100, 1000, 10_000], build_kvhist, ops_kvhist()
        ),
        Dimension(
            "interest",
            "messages in an interest stream (100 consumers)",
            [10_000, 100_000, 1_000_000],
            [1000, 10_000, 100_000],
            build_interest,
            ops_interest(),
        ),
        Dimension(
            "buckets", "KV buckets in one account", [100, 1000, 10_000], [10, 100, 1000], build_buckets, ops_buckets()
        ),
        Dimension(
            "expiry",
            "consumers on a max_age stream",
            [100, 1000, 10_000],
            [10, 100, 1000],
            build_expiry,
            ops_expiry(),
        ),
        Dimension(
            "monitor",
            "connections, 100 subscriptions each (monitoring)",
            [10, 100, 1000],
            [10, 100, 100],
            build_monitor,
            ops_monitor(),
            settings={"http_port": -1},
        ),
        Dimension(
            "jsz",
            "durable consumers, 100 a stream (/jsz)",
            [100, 1000, 10_000],
            [100, 100, 1000],
            build_jsz,
            ops_jsz(),
            settings={"http_port": -1},
        ),
        Dimension(
            "objstore",
            "objects in one object store",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_objstore,
            ops_objstore(),
        ),
    ]
    dims += explore6_dimensions()
    repeat = {"names", "list", "info", "js_info"}
    for dim in dims:
        for op in dim.ops:
            op.repeat = op.key in repeat or dim.key in ("monitor", "jsz", "sysreq", "kvops")
            op.repeat = op.repeat or (dim.key == "accounts" and op.key != "restart")
            op.repeat = op.repeat or (dim.key == "nsources" and op.key != "pub_sourced")
    return dims + more_restart_dimensions()


