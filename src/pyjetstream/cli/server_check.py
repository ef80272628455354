"""``server check connection|stream|consumer|kv|jetstream|message``: natscli's ``server check``
health checks (``server_check_command.go``, the checks of jsm.go's ``monitor`` package), step for
step: the same thresholds and defaults, the same messages, Nagios output and exit codes
(`check_result`). A failure to connect or to load what is checked is a CRITICAL result, not
an error line: monitoring systems read the status. Thresholds a stream or consumer carries in its
metadata (``io.nats.monitor.lag-critical: 200`` …) apply unless a flag gives them.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.check_result import CheckResult, PerfData, go_duration

__all__ = ["CHECK"]

Check = Callable[[Session, argparse.Namespace, CheckResult], Awaitable[None]]
_NS = 1e9


def _seconds(text: str | None, flag: str) -> float:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.values import parse_duration

    return parse_duration(text, what=flag) / _NS if text else 0.0


def _format_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("check output")
    g.add_argument(
        "--format", default="nagios", choices=["nagios", "json", "prometheus", "text"], help="how to render the result"
    )
    g.add_argument("--namespace", default="nats_server_check", help="the prometheus namespace")
    g.add_argument("--outfile", metavar="FILE", help="write the result to FILE instead of stdout")


def _command(name: str, help: str, check_name: Callable[[argparse.Namespace], str], suite: str, run: Check,
             configure: Callable[[argparse.ArgumentParser], None], aliases: tuple[str, ...] = ()) -> Command:  # fmt: skip
    """A check command: ``run`` fills a result, whatever fails inside it is a CRITICAL line."""

    def arguments(p: argparse.ArgumentParser) -> None:
        configure(p)
        _format_arguments(p)

    async def handler(session: Session, args: argparse.Namespace) -> int:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.errors import UsageError, describe

        result = CheckResult(check_name(args), suite)
        try:
            await run(session, args, result)
        except UsageError:
            raise
        except Exception as exc:
            result.critical(f"Check failed: {describe(exc)}")
        fmt = "json" if session.json and args.format == "nagios" else args.format
        text = result.render(fmt, args.namespace)
        if args.outfile:
            tmp = Path(args.outfile).with_name(f".{Path(args.outfile).name}.tmp")
            tmp.write_text(text + "\n")
            tmp.chmod(0o600)
            tmp.replace(args.outfile)
        else:
            sys.stdout.write(text + "\n")
        return result.exit_code(fmt)

    return Command(name, help, handler, arguments, aliases=aliases)


def _over(value: float, warn: float, crit: float) -> str:
    """natscli's ``>=`` thresholds, 0 meaning unset: "crit", "warn" or ""."""
    if crit and value >= crit:
        return "crit"
    if warn and value >= warn:
        return "warn"
    return ""


# --------------------------------------------------------------------------- connection


def _connection_arguments(p: argparse.ArgumentParser) -> None:
    for what, text in (("connect", "establishing the connection"), ("rtt", "the server's RTT"),
                       ("req", "a full request round trip")):  # fmt: skip
        p.add_argument(f"--{what}-warn", default="500ms", metavar="DUR", help=f"warning threshold for {text}")
        p.add_argument(f"--{what}-critical", default="1s", metavar="DUR", help=f"critical threshold for {text}")


async def _check_connection(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckConnection``: connect, RTT, and a message to our own inbox and back."""
    # Deferred: CLI start-up speed (loaded only when this command runs). The client is imported before
    # the clock starts: connect_time is the connection's, as natscli's (the import alone took 0.2-0.7 s on
    # a loaded machine, past the default 0.5 s warning).
    import pyjetstream.client  # noqa: F401
    from pyjetstream.cli.errors import describe

    cw, cc = _seconds(args.connect_warn, "--connect-warn"), _seconds(args.connect_critical, "--connect-critical")
    rw, rc = _seconds(args.rtt_warn, "--rtt-warn"), _seconds(args.rtt_critical, "--rtt-critical")
    qw, qc = _seconds(args.req_warn, "--req-warn"), _seconds(args.req_critical, "--req-critical")
    start = time.perf_counter()
    try:
        client = await session.connect()
    except Exception as exc:
        r.critical(f"connection failed: {describe(exc)}")
        return
    ct = time.perf_counter() - start
    r.pd(PerfData("connect_time", ct, cw, cc, "s", "Time taken to connect to NATS"))
    level = _over(ct, cw, cc)
    if level:
        limit = cc if level == "crit" else cw
        (r.critical if level == "crit" else r.warn)(f"connected to {client.connected_url}, connect time exceeded {limit:g}")
    else:
        r.ok(f"connected to {client.connected_url} in {go_duration(ct)}")
    rtt = await client.rtt(session.timeout)
    r.pd(PerfData("rtt", rtt, rw, rc, "s", "The round-trip-time of the connection"))
    level = _over(rtt, rw, rc)
    if level:
        (r.critical if level == "crit" else r.warn)(f"rtt time exceeded {rc if level == 'crit' else rw:g}")
    else:
        r.ok(f"rtt time {go_duration(rtt)}")
    inbox = client.new_inbox()
    sub = await client.subscribe(inbox, max_msgs=1)
    payload = "".join(random.choices(string.ascii_letters + string.digits, k=100)).encode()
    start = time.perf_counter()
    await client.publish(inbox, payload)
    try:
        msg = await sub.next_msg(session.timeout)
    except Exception as exc:
        r.critical(f"did not receive from {inbox}: {describe(exc)}")
        return
    reqt = time.perf_counter() - start
    r.pd(PerfData("request_time", reqt, qw, qc, "s", "Time taken for a full Request-Reply operation"))
    if msg.data != payload:
        r.critical("did not receive expected message")
    level = _over(reqt, qw, qc)
    if level:
        (r.critical if level == "crit" else r.warn)(f"round trip request took {reqt:f}")
    else:
        r.ok(f"round trip took {reqt:f}s")


# --------------------------------------------------------------------------- stream


def _stream_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stream", required=True, help="the stream to check")
    p.add_argument("--lag-critical", type=int, metavar="MSGS", help="critical lag of any source or mirror")
    p.add_argument("--seen-critical", metavar="DUR", help="critical time since a source or mirror was seen")
    p.add_argument("--min-sources", type=int, metavar="SOURCES", help="at least this many sources")
    p.add_argument("--max-sources", type=int, metavar="SOURCES", help="at most this many sources")
    p.add_argument("--peer-expect", type=int, metavar="SERVERS", help="this many cluster replicas")
    p.add_argument("--peer-lag-critical", type=int, metavar="OPS", help="critical lag of a cluster peer")
    p.add_argument("--peer-seen-critical", metavar="DUR", help="critical time since a cluster peer was seen")
    p.add_argument("--msgs-warn", type=int, metavar="MSGS", help="warn with fewer messages than this")
    p.add_argument("--msgs-critical", type=int, metavar="MSGS", help="critical with fewer messages than this")
    p.add_argument("--subjects-warn", type=int, metavar="SUBJECTS", help="warning threshold for subjects")
    p.add_argument("--subjects-critical", type=int, metavar="SUBJECTS", help="critical threshold for subjects")


_STREAM_META = {  # io.nats.monitor.<key> → (option, parse)
    "lag-critical": ("lag_critical", int), "seen-critical": ("seen_critical", str),
    "min-sources": ("min_sources", int), "max-sources": ("max_sources", int),
    "peer-expect": ("peer_expect", int), "peer-lag-critical": ("peer_lag_critical", int),
    "peer-seen-critical": ("peer_seen_critical", str), "msgs-warn": ("msgs_warn", int),
    "msgs-critical": ("msgs_critical", int), "subjects-warn": ("subjects_warn", int),
    "subjects-critical": ("subjects_critical", int),
}  # fmt: skip


def _with_metadata(args: argparse.Namespace, metadata: dict[str, str], keys: dict[str, Any]) -> dict[str, Any]:
    """The thresholds: the flags given, else the object's ``io.nats.monitor.*`` metadata, else unset."""
    opts = {dest: getattr(args, dest) for dest, _ in keys.values()}
    for key, (dest, parse) in keys.items():
        raw = metadata.get(f"io.nats.monitor.{key}")
        if raw is not None and opts[dest] is None:
            try:
                opts[dest] = parse(raw)
            except ValueError:
                raise ValueError(f"could not configure based on metadata: io.nats.monitor.{key}: {raw!r}") from None
    return opts


async def _check_stream(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckStreamHealth``: cluster peers, messages, subjects, sources, mirror."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import describe

    js = await session.jetstream()
    try:
        info = await (await js.stream(args.stream)).info()
    except Exception as exc:
        r.critical(f"could not load info: {describe(exc)}")
        return
    o = _with_metadata(args, dict(info.config.metadata), _STREAM_META)
    seen = _seconds(o["seen_critical"], "--seen-critical")
    _stream_cluster(info, r, o["peer_expect"] or 0, o["peer_lag_critical"] or 0,
                    _seconds(o["peer_seen_critical"], "--peer-seen-critical"))  # fmt: skip
    _stream_messages(info, r, o["msgs_warn"] or 0, o["msgs_critical"] or 0)
    _stream_subjects(info, r, o["subjects_warn"] or 0, o["subjects_critical"] or 0)
    _stream_sources(info, r, o["min_sources"] or 0, o["max_sources"] or 0, o["lag_critical"] or 0, seen)
    _stream_mirror(info, r, o["lag_critical"] or 0, seen)


def _stream_cluster(info: Any, r: CheckResult, expect: int, lag: int, seen: float) -> None:
    cluster = info.cluster
    if (cluster is None or info.config.num_replicas <= 1) and expect <= 0:
        return
    if cluster is None or info.config.num_replicas <= 1:
        r.critical("Stream is not clustered")
        return
    if not cluster.leader:
        r.critical("No leader")
        return
    peers = len(cluster.replicas) + 1
    if peers != expect:
        r.critical(f"Expected {expect} replicas got {peers}")
        return
    r.ok(f"{peers} peers")
    offline = sum(1 for p in cluster.replicas if p.offline)
    lagged = sum(1 for p in cluster.replicas if lag > 0 and p.lag > lag)
    inactive = sum(1 for p in cluster.replicas if seen > 0 and p.active / _NS > seen)
    if offline:
        r.critical(f"{offline} replicas offline")
    if lag > 0:
        r.critical(f"{lagged} replicas lagged") if lagged else r.ok("replicas are current")
    if seen > 0:
        r.critical(f"{inactive} replicas inactive") if inactive else r.ok("replicas are active")


def _stream_messages(info: Any, r: CheckResult, warn: int, crit: int) -> None:
    if crit <= 0 and warn <= 0:
        return
    msgs = info.state.messages
    r.pd(PerfData("messages", msgs, warn, crit, help="Messages stored in the stream"))
    if crit > 0 and msgs <= crit:
        r.critical(f"{msgs} messages")
    elif warn > 0 and msgs <= warn:
        r.warn(f"{msgs} messages")
    else:
        r.ok(f"{msgs} messages")


def _stream_subjects(info: Any, r: CheckResult, warn: int, crit: int) -> None:
    if warn <= 0 and crit <= 0:
        return
    n = info.state.num_subjects
    r.pd(PerfData("subjects", n, warn, crit, help="Number of subjects stored in the stream"))
    if warn < crit:  # more is worse
        (r.critical if n >= crit else r.warn if n >= warn else r.ok)(f"{n} subjects")
    else:  # fewer is worse (inverted)
        (r.critical if n <= crit else r.warn if n <= warn else r.ok)(f"{n} subjects")


def _stream_sources(info: Any, r: CheckResult, least: int, most: int, lag: int, seen: float) -> None:
    sources = info.sources
    count = len(sources)
    r.pd(PerfData("sources", count, least, most, help="Number of sources being consumed by this stream"))
    if (least > 0 and count < least) or (most > 0 and count > most):
        r.critical(f"{count} sources")
    else:
        r.ok(f"{count} sources")
    if lag <= 0 and seen <= 0:
        return
    lagged = sum(1 for s in sources if lag > 0 and s.lag >= lag)
    inactive = sum(1 for s in sources if seen > 0 and s.active / _NS >= seen)
    r.pd(PerfData("sources_lagged", lagged, help="Number of sources that are behind more than the threshold"),
         PerfData("sources_inactive", inactive, help="Number of sources that are inactive"))  # fmt: skip
    r.critical(f"{lagged} sources are lagged") if lagged else r.ok(f"{count} sources current")
    r.critical(f"{inactive} sources are inactive") if inactive else r.ok(f"{count} sources active")


def _stream_mirror(info: Any, r: CheckResult, lag: int, seen: float) -> None:
    if (lag <= 0 and seen <= 0) or not info.config.name or info.sources:
        return
    if info.config.mirror is None:
        r.critical("not mirrored")
        return
    state = info.mirror
    if state is None:
        r.critical("invalid state")
        return
    r.pd(PerfData("lag", state.lag, crit=lag, help="Number of operations this peer is behind its origin"),
         PerfData("active", state.active / _NS, crit=seen, unit="s", help="Time since the mirror was active"))  # fmt: skip
    ok = True
    if lag > 0 and state.lag >= lag:
        r.critical(f"Mirror Lag {state.lag}")
        ok = False
    if seen > 0 and state.active / _NS >= seen:
        r.critical(f"Mirror Seen {go_duration(state.active / _NS)}")
        ok = False
    if ok:
        r.ok(f"Mirror {info.config.mirror.name}")


# --------------------------------------------------------------------------- consumer


def _consumer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stream", required=True, help="the stream holding the consumer")
    p.add_argument("--consumer", required=True, help="the consumer to check")
    p.add_argument("--outstanding-ack-critical", type=int, metavar="N", help="critical outstanding acks")
    p.add_argument("--waiting-critical", type=int, metavar="N", help="critical waiting pulls")
    p.add_argument("--unprocessed-critical", type=int, metavar="N", help="critical unprocessed messages")
    p.add_argument("--last-delivery-critical", metavar="DUR", help="critical time since the last delivery")
    p.add_argument("--last-ack-critical", metavar="DUR", help="critical time since the last ack")
    p.add_argument("--redelivery-critical", type=int, metavar="N", help="critical redeliveries")
    p.add_argument("--pinned", action="store_true", help="every priority group must have a pinned client")


_CONSUMER_META = {
    "outstanding-ack-critical": ("outstanding_ack_critical", int), "waiting-critical": ("waiting_critical", int),
    "unprocessed-critical": ("unprocessed_critical", int), "last-delivery-critical": ("last_delivery_critical", str),
    "last-ack-critical": ("last_ack_critical", str), "redelivery-critical": ("redelivery_critical", int),
}  # fmt: skip


def _since(t: Any) -> float | None:
    return None if t is None or int(t) <= 0 else (time.time_ns() - int(t)) / _NS


async def _check_consumer(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckConsumerHealth``: acks outstanding, waiting pulls, unprocessed, redeliveries,
    time since the last delivery and ack, pinned clients."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import describe

    js = await session.jetstream()
    try:
        info = await (await js.consumer(args.stream, args.consumer)).info()
    except Exception as exc:
        r.critical(f"could not load info: {describe(exc)}")
        return
    o = _with_metadata(args, dict(info.config.metadata), _CONSUMER_META)
    ack_c, wait_c = o["outstanding_ack_critical"] or 0, o["waiting_critical"] or 0
    unproc_c, redel_c = o["unprocessed_critical"] or 0, o["redelivery_critical"] or 0
    last_del_c = _seconds(o["last_delivery_critical"], "--last-delivery-critical")
    last_ack_c = _seconds(o["last_ack_critical"], "--last-ack-critical")
    pinned = args.pinned or info.config.metadata.get("io.nats.monitor.pinned", "").lower() == "true"
    r.pd(PerfData("ack_pending", info.num_ack_pending, crit=ack_c, help="Messages waiting to be acknowledged"),
         PerfData("pull_waiting", info.num_waiting, crit=wait_c, help="Waiting pull requests"),
         PerfData("pending", info.num_pending, crit=unproc_c, help="Messages not yet consumed"),
         PerfData("redelivered", info.num_redelivered, crit=redel_c, help="Messages being redelivered"))  # fmt: skip
    last_delivery, last_ack = _since(info.delivered.last_active), _since(info.ack_floor.last_active)
    if last_delivery is not None:
        r.pd(PerfData("last_delivery", last_delivery, crit=last_del_c, unit="s", help="Seconds since the last delivery"))
    if last_ack is not None:
        r.pd(PerfData("last_ack", last_ack, crit=last_ack_c, unit="s", help="Seconds since the last acknowledgement"))
    for crit, value, label in ((ack_c, info.num_ack_pending, "Ack Pending"), (wait_c, info.num_waiting, "Waiting Pulls"),
                               (unproc_c, info.num_pending, "Unprocessed Messages"),
                               (redel_c, info.num_redelivered, "Redelivered")):  # fmt: skip
        if crit > 0:
            (r.critical if value >= crit else r.ok)(f"{label}: {value}")
    for crit, since, what, never in ((last_del_c, last_delivery, "delivery", "No deliveries"),
                                     (last_ack_c, last_ack, "ack", "No acks")):  # fmt: skip
        if crit <= 0:
            continue
        if since is None:
            r.critical(never)
        elif since >= crit:
            r.critical(f"Last {what} {go_duration(since)} ago")
        else:
            r.ok(f"Last {what} {go_duration(since)} ago")
    _consumer_pinned(info, r, pinned)


def _consumer_pinned(info: Any, r: CheckResult, required: bool) -> None:
    groups = list(info.config.priority_groups or [])
    pinned = sum(1 for g in info.priority_groups if g.pinned_client_id)
    policy = str(info.config.priority_policy or "")
    if policy == "pinned_client":
        r.pd(PerfData("pinned_groups", pinned, help="Consumer groups with pinned clients"),
             PerfData("groups", len(groups), help="Consumer groups"))  # fmt: skip
    if not required:
        return
    if not info.priority_groups or not groups or policy != "pinned_client":
        r.critical("Not pinned client priority mode")
    elif pinned != len(groups):
        r.critical(f"{pinned} / {len(groups)} pinned clients")
    else:
        r.ok(f"{pinned} pinned clients")


# --------------------------------------------------------------------------- kv


def _kv_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bucket", required=True, help="the bucket to check")
    p.add_argument("--values-critical", type=int, default=-1, metavar="N", help="critical number of values")
    p.add_argument("--values-warn", type=int, default=-1, metavar="N", help="warning number of values")
    p.add_argument("--key", help="this key must have a value (not deleted or purged)")


async def _check_kv(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckKVBucketAndKey``."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import describe
    from pyjetstream.client.jetstream.errors import KeyDeleted, KeyNotFound, StreamNotFound

    js = await session.jetstream()
    try:
        kv = await js.key_value(args.bucket)
    except StreamNotFound:
        r.critical(f"bucket {args.bucket} not found")
        return
    except Exception as exc:
        r.critical(f"could not load bucket: {describe(exc)}")
        return
    r.ok(f"bucket {args.bucket}")
    status = await kv.status()
    warn, crit = args.values_warn, args.values_critical
    r.pd(PerfData("values", status.values, max(warn, 0), max(crit, 0), help="How many values are stored in the bucket"))
    if args.key:
        try:
            await kv.get(args.key)
            r.ok(f"key {args.key} found")
        except KeyDeleted as exc:
            purged = exc.entry is not None and str(exc.entry.operation).upper().endswith("PURGE")
            r.critical(f"key {args.key} is {'purged' if purged else 'deleted'}")
        except KeyNotFound:
            r.critical(f"key {args.key} not found")
    n = status.values
    if warn > -1 or crit > -1:
        if crit < warn:  # fewer is worse
            (r.critical if crit > -1 and n <= crit else r.warn if warn > -1 and n <= warn else r.ok)(f"{n} values")
        else:
            (r.critical if crit > -1 and n >= crit else r.warn if warn > -1 and n >= warn else r.ok)(f"{n} values")
    r.pd(PerfData("bytes", status.bytes, unit="B", help="Bytes stored in the bucket"),
         PerfData("replicas", status.stream_info.config.num_replicas))  # fmt: skip


# --------------------------------------------------------------------------- jetstream


def _js_arguments(p: argparse.ArgumentParser) -> None:
    for what, unit, warn, crit in (("mem", "memory storage", 75, 90), ("store", "disk storage", 75, 90),
                                   ("streams", "streams", -1, -1), ("consumers", "consumers", -1, -1)):  # fmt: skip
        p.add_argument(f"--{what}-warn", type=int, default=warn, metavar="PCT", help=f"warning {unit}, % of limit")
        p.add_argument(f"--{what}-critical", type=int, default=crit, metavar="PCT", help=f"critical {unit}, % of limit")
    p.add_argument("--replicas", action=argparse.BooleanOptionalAction, default=True, help="check stream replicas")
    p.add_argument("--replica-seen-critical", default="5s", metavar="DUR", help="critical time since a replica was seen")
    p.add_argument("--replica-lag-critical", type=int, default=200, metavar="OPS", help="critical replica lag")


async def _check_jetstream(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckJetStreamAccount``: usage against the account's limits, then stream replicas."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import describe

    js = await session.jetstream()
    try:
        info = await js.account_info()
    except Exception as exc:
        r.critical(f"JetStream not available: {describe(exc)}")
        return
    limits = info.limits
    for item, unit, warn, crit, most, current in (
        ("memory", "B", args.mem_warn, args.mem_critical, limits.max_memory, info.memory),
        ("storage", "B", args.store_warn, args.store_critical, limits.max_storage, info.storage),
        ("streams", "", args.streams_warn, args.streams_critical, limits.max_streams, info.streams),
        ("consumers", "", args.consumers_warn, args.consumers_critical, limits.max_consumers, info.consumers),
    ):
        pct = int(current / most * 100) if most > 0 else 0
        r.pd(PerfData(item, current, unit=unit, help=f"JetStream {item} resource usage"),
             PerfData(f"{item}_pct", pct, max(warn, 0), max(crit, 0), "%", f"JetStream {item} resource usage in percent"))  # fmt: skip
        if warn != -1 and crit != -1 and warn >= crit:
            r.critical(f"{item}: invalid thresholds")
        elif pct > 100:
            r.critical(f"{item}: exceed server limits")
        elif warn >= 0 and crit >= 0 and pct > crit:
            r.critical(f"{pct}% {item}")
        elif warn >= 0 and crit >= 0 and pct > warn:
            r.warn(f"{pct}% {item}")
    if args.replicas:
        infos = [i async for i in js.list_streams()]
        _replicas(infos, r, _seconds(args.replica_seen_critical, "--replica-seen-critical"), args.replica_lag_critical)


def _replicas(infos: list[Any], r: CheckResult, seen: float, lag: int) -> None:
    """jsm.go ``checkStreamClusterHealth``."""
    ok = no_leader = missing = lagged = not_seen = failed = 0
    for info in infos:
        if info.config.num_replicas == 1:
            ok += 1
            continue
        cluster = info.cluster
        if cluster is None:
            failed += 1
        elif not cluster.leader:
            no_leader += 1
        elif len(cluster.replicas) != info.config.num_replicas - 1:
            missing += 1
        else:
            healthy = True
            for peer in cluster.replicas:
                if peer.offline:
                    failed, healthy = failed + 1, False
                elif seen > 0 and peer.active / _NS > seen:
                    not_seen, healthy = not_seen + 1, False
                elif lag > 0 and peer.lag > lag:
                    lagged, healthy = lagged + 1, False
            ok += healthy
    r.pd(PerfData("replicas_ok", ok, help="Streams with healthy cluster state"),
         PerfData("replicas_no_leader", no_leader, help="Streams with no leader elected"),
         PerfData("replicas_missing_replicas", missing, help="Streams with fewer known replicas than configured"),
         PerfData("replicas_lagged", lagged, crit=lag, help=f"Streams with > {lag} lagged replicas"),
         PerfData("replicas_not_seen", not_seen, crit=seen, unit="s", help="Streams with replicas not seen lately"),
         PerfData("replicas_fail", failed, help="Streams unhealthy cluster state"))  # fmt: skip
    unhealthy = failed + missing + no_leader + not_seen + lagged
    if unhealthy:
        r.critical(f"{unhealthy} unhealthy streams")


# --------------------------------------------------------------------------- message


def _message_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stream", required=True, help="the stream holding the message")
    p.add_argument("--subject", default=">", help="the subject to read the last message of")
    p.add_argument("--age-warn", metavar="DUR", help="warning threshold for the message's age")
    p.add_argument("--age-critical", metavar="DUR", help="critical threshold for the message's age")
    p.add_argument("--content", default=".", metavar="REGEX", help="a regular expression the body must match")
    p.add_argument("--body-timestamp", action="store_true", help="the body is a unix time: use it as the age")


async def _check_message(session: Session, args: argparse.Namespace, r: CheckResult) -> None:
    """jsm.go ``CheckStreamMessage``: the last message on a subject, its age and content."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    import re

    from pyjetstream.cli.errors import CliError, describe
    from pyjetstream.client.jetstream.errors import MsgNotFound
    from pyjetstream.protocol.subjects import is_valid_literal_subject

    if not is_valid_literal_subject(args.subject):
        raise CliError(f"invalid subject {args.subject!r}")
    warn, crit = _seconds(args.age_warn, "--age-warn"), _seconds(args.age_critical, "--age-critical")
    js = await session.jetstream()
    try:
        stream = await js.stream(args.stream)
        msg = await stream.get_last_msg_for_subject(args.subject, direct=False)
    except MsgNotFound:
        r.critical("no message found")
        return
    except Exception as exc:
        r.critical(f"msg load failed: {describe(exc)}")
        return
    stamp = int(msg.time) / _NS
    if args.body_timestamp:
        try:
            stamp = float(int(msg.data.strip()))
        except ValueError as exc:
            r.critical(f"invalid timestamp body: {exc}")
            return
    age = round(time.time() - stamp, 3)
    r.pd(PerfData("age", age, warn, crit, "s", "The age of the message"),
         PerfData("size", len(msg.data), unit="B", help="The size of the message"))  # fmt: skip
    if crit > 0 and age > crit:
        r.critical(f"{go_duration(age)} old")
    elif warn > 0 and age > warn:
        r.warn(f"{go_duration(age)} old")
    if args.content:
        try:
            pattern = re.compile(args.content.encode())
        except re.error as exc:
            r.critical(f"content regex compile failed: {exc}")
            return
        if not pattern.search(msg.data):
            r.critical(f"does not match regex: {args.content}")
    r.ok_if_clean(f"Valid message on {args.stream} > {args.subject}")


CHECK = Group(
    "pyjetstream server check",
    "health checks with Nagios output and exit codes (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)",
    [
        _command("connection", "the connection: connect time, RTT, a round trip", lambda a: "Connection",
                 "connections", _check_connection, _connection_arguments, ("conn",)),
        _command("stream", "a stream's sources, mirror, cluster peers, messages and subjects", lambda a: a.stream,
                 "stream", _check_stream, _stream_arguments),
        _command("consumer", "a consumer's acks, pulls, pending, redeliveries and activity",
                 lambda a: f"{a.stream}_{a.consumer}", "consumer", _check_consumer, _consumer_arguments),
        _command("kv", "a key-value bucket (and a key in it)", lambda a: a.bucket, "kv", _check_kv, _kv_arguments),
        _command("jetstream", "the account's JetStream usage against its limits, and stream replicas",
                 lambda a: "JetStream", "jetstream", _check_jetstream, _js_arguments, ("js",)),
        _command("message", "the last message on a subject: its age and content", lambda a: "Stream Message",
                 "message", _check_message, _message_arguments),
    ],
)
