"""Differential fuzzing (issue #15): the same random, well-formed JetStream API traffic sent to the
embedded server and to nats-server 2.15.1, the answers compared field by field.

A *case* is a short sequence of steps on a small universe of names (streams ``S``/``T``/``U`` …,
consumers ``C``/``D`` …, subjects ``a``/``a.b``/``a.*`` …) so that requests meet each other's
state: stream create/update/info/delete/purge/names/list/msg get/msg delete, consumer create
(ephemeral, durable, filtered, multi-filter, push, pull)/info/delete/pause/reset/unpin/names/list,
direct gets, publishes with the JetStream headers, pulls with ``no_wait`` and acks of what they
delivered, and ``$JS.API.INFO``; config fields are drawn from valid and edge values (0/-1/huge
limits, every enum, overlapping and wildcard subjects, edge names, durations, placement, republish,
subject transforms, sources and mirrors, metadata, compression, the allow_* flags and the 2.11-2.15
fields). Each case runs on both servers from an empty account; what naturally differs (times,
server ids and names, ephemeral consumer names, API statistics, the racy state of sourcing
streams) is normalised, everything else — error code, err_code and description included — must be
equal. A difference is re-run to rule out timing, shrunk (steps, then config keys, removed while
the same difference remains) and printed as a reproducer; each distinct difference is printed once.

``KNOWN`` lists the deliberate differences (each named in the README's compatibility section):
they are counted, not failed.

Usage: ``python scripts/difffuzz.py --budget 600 [--seed N] [--cases N] [--json]``; exits 1 when an
unlisted difference was found. The same seed gives the same cases (``--cases`` makes a run fixed). Run from the repository (the embedded server is ``python -m pyjetstream
serve``, the reference is ``nats-server`` beside the interpreter or on PATH).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyjetstream.testing.process import ServerProcess, server_command, start_on_loopback

NS = 1_000_000_000
ZERO_TIME = "0001-01-01T00:00:00Z"
WAIT = 5.0  # seconds for one answer: generous, finite; a missing answer is a difference

# --- servers ------------------------------------------------------------------------------------


class Server:
    """A server started from a NATS config file with a fresh store and a ports file."""

    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self.workdir = workdir
        self.process: ServerProcess | None = None
        self.port = 0

    def start(self) -> Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        store = self.workdir / "store"
        conf = self.workdir / "server.conf"
        conf.write_text(f"port: -1\njetstream {{\n  store_dir: {json.dumps(str(store))}\n}}\n")
        self.process, url = start_on_loopback([*server_command(self.kind), "-c", str(conf)], self.workdir, timeout=30)
        self.port = int(url.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.process = None


# --- a blocking raw client ----------------------------------------------------------------------


@dataclass
class Msg:
    subject: str
    reply: str
    hdr: bytes | None
    data: bytes

    @property
    def status(self) -> str:
        if not self.hdr:
            return ""
        parts = self.hdr.split(b"\r\n", 1)[0].decode().split(" ", 2)
        return parts[1] if len(parts) > 1 else ""


class Conn:
    """One socket, one ``_DF.>`` inbox subscription; requests are answered on ``_DF.<n>``."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.buf = b""
        self._line(time.monotonic() + WAIT)
        self.sock.sendall(
            b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
            b"SUB _DF.> 1\r\nPING\r\n"
        )
        while self._line(time.monotonic() + WAIT) != b"PONG":
            pass
        self.n = 0

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except TimeoutError:
            raise
        except OSError as exc:
            raise ConnectionError(str(exc)) from exc
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self, deadline: float) -> bytes:
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n + 2:
            self._fill(deadline)
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def _next(self, deadline: float) -> Msg:
        while True:
            line = self._line(deadline)
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            parts = line.split()
            if not parts:
                continue
            if parts[0] == b"MSG":
                reply = parts[3].decode() if len(parts) == 5 else ""
                return Msg(parts[1].decode(), reply, None, self._read(int(parts[-1]), deadline))
            if parts[0] == b"HMSG":
                reply = parts[3].decode() if len(parts) == 6 else ""
                hlen, total = int(parts[-2]), int(parts[-1])
                raw = self._read(total, deadline)
                return Msg(parts[1].decode(), reply, raw[:hlen], raw[hlen:])
            if parts[0] == b"-ERR":
                raise ConnectionError(line.decode())

    def send(self, subject: str, data: bytes, hdrs: list[tuple[str, str]] | None, reply: str) -> None:
        if hdrs is not None:
            hb = ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs) + "\r\n").encode()
            self.sock.sendall(
                b"HPUB %s %s %d %d\r\n%s%s\r\n"
                % (subject.encode(), reply.encode(), len(hb), len(hb) + len(data), hb, data)
            )
        else:
            self.sock.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), reply.encode(), len(data), data))

    def request(
        self, subject: str, data: bytes, hdrs: list[tuple[str, str]] | None = None, timeout: float = WAIT,
        many: bool = False, most: int = 0,
    ) -> list[Msg]:
        """The answer (or, with ``many``, every answer up to a status, a gap of 0.5 s or the deadline)."""
        self.n += 1
        inbox = f"_DF.{self.n}"
        self.send(subject, data, hdrs, inbox)
        deadline = time.monotonic() + timeout
        got: list[Msg] = []
        while True:
            try:
                msg = self._next(deadline if not got else min(deadline, time.monotonic() + 0.5))
            except TimeoutError:
                return got
            if msg.subject != inbox:
                continue
            got.append(msg)
            if not many or msg.status or (msg.hdr is None and msg.data.startswith(b"{")) or len(got) == most:
                return got


# --- the generator --------------------------------------------------------------------------------

STREAMS = ["S", "T", "U"]
EDGE_STREAMS = ["Ü-ñ_x", "a" * 255, "A" * 256, "S.x", "S*", "S>", "$S", "s"]
CONSUMERS = ["C", "D", "E"]
EDGE_CONSUMERS = ["c-1_x", "Ü", "C.x", "C*", "C>", "a" * 255, "b" * 257]
SUBJECTS = ["a", "a.b", "a.*", "a.>", "b.>", "*.c", "c", "b.x", "a.b.c", "d.*.e", "e"]
EDGE_SUBJECTS = [">", "*", "a..b", "", "a b", "a.>.b", "$JS.API.x", "_INBOX.x", "$SYS.x", "a\tb", "ü.x", "*.>"]
PUB_SUBJECTS = ["a", "a.b", "a.x", "b.x", "x.c", "c", "a.b.c", "d.q.e", "e", "zz"]
DURATIONS = [0, -1, 1, 1_000_000, 100_000_000, NS, 2 * NS, 30 * NS, 120 * NS, 3600 * NS, 10**18, 2**63 - 1]
LIMITS = [0, -1, 1, 2, 5, 100, 1 << 20, 2**31, 2**63 - 1, -2]
FUTURE = "2099-01-01T00:00:00Z"
PAST = "2001-01-01T00:00:00Z"


def pick(rng: random.Random, common: list[Any], edge: list[Any], p_edge: float = 0.1) -> Any:
    return rng.choice(edge) if edge and rng.random() < p_edge else rng.choice(common)


class Gen:
    """Random cases over a small universe; tracks what it created so later steps meet it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        # How many optional fields a config sets: a case is sparse, typical or dense.
        self.density = rng.choice([0.04, 0.12, 0.12, 0.3])
        self.streams: dict[str, dict[str, Any]] = {}
        self.consumers: dict[str, set[str]] = {}

    # values
    def stream_name(self) -> str:
        r = self.rng
        if self.streams and r.random() < 0.7:
            return r.choice(sorted(self.streams))
        return pick(r, STREAMS, EDGE_STREAMS, 0.08)

    def consumer_name(self, stream: str) -> str:
        r = self.rng
        known = sorted(self.consumers.get(stream, ()))
        if known and r.random() < 0.7:
            return r.choice(known)
        return pick(r, CONSUMERS, EDGE_CONSUMERS, 0.08)

    def subject(self, p_edge: float = 0.06) -> str:
        return pick(self.rng, SUBJECTS, EDGE_SUBJECTS, p_edge)

    def subjects(self) -> list[str]:
        r = self.rng
        n = r.choice([0, 1, 1, 1, 2, 2, 3])
        return [self.subject() for _ in range(n)]

    def duration(self) -> int:
        return self.rng.choice(DURATIONS)

    def limit(self) -> int:
        return self.rng.choice(LIMITS)

    def metadata(self) -> dict[str, str]:
        r = self.rng
        return {r.choice(["k", "owner", "_nats.x", "_nats.req.level", "x" * 10]): r.choice(["v", "", "1"])
                for _ in range(r.randint(0, 2))}

    def transform(self) -> dict[str, str]:
        r = self.rng
        return r.choice([
            {"src": "a.*", "dest": "x.{{wildcard(1)}}"},
            {"src": "a.>", "dest": "x.>"},
            {"src": "", "dest": "y.>"},
            {"src": "a.*", "dest": "x.$1"},
            {"src": "a.*", "dest": "x.{{wildcard(2)}}"},
            {"src": "b.*", "dest": "{{partition(3,1)}}.b"},
            {"src": "a.b", "dest": "a.b"},
            {"src": "a.*", "dest": ""},
            {"src": ">", "dest": "z.>"},
            {"src": "a.*.*", "dest": "x.{{partition(3)}}.{{wildcard(2)}}.$1"},
            {"src": "a.*", "dest": r.choice(["x.{{left(1,2)}}", "x.{{right(1, 2)}}", "x.{{random(5)}}",
                                             "x.{{split(1,-)}}", "x.{{splitFromLeft(1,2)}}", "x.{{sliceFromRight(1,2)}}",
                                             "x.{{wildcard()}}", "x.{{wildcard(1,2)}}", "x.{{nope(1)}}",
                                             "x.{{partition(a)}}", "x.{{split(1)}}", "x.{{left(1,2,3)}}",
                                             "x.{{wildcard(0)}}", "x.$2", "x.$a", "x.{{Wildcard(1)}}"])},
            {"src": "a.b", "dest": r.choice(["x.{{wildcard(1)}}", "x.{{partition(2)}}", "x.{{random(3)}}"])},
        ])

    def source(self) -> dict[str, Any]:
        r = self.rng
        src: dict[str, Any] = {"name": self.stream_name()}
        for key, make in (
            ("opt_start_seq", lambda: r.choice([0, 1, 5])),
            ("opt_start_time", lambda: r.choice([PAST, FUTURE])),
            ("filter_subject", lambda: self.subject()),
            ("subject_transforms", lambda: [
                {"src": self.subject(), "dest": r.choice(["m.>", "m.{{wildcard(1)}}", "m"])}
                for _ in range(r.randint(1, 2))]),
            ("external", lambda: {"api": r.choice(["$JS.hub.API", "$JS.API", ""]), "deliver": r.choice(["", "dx"])}),
            ("domain", lambda: r.choice(["hub", ""])),
        ):
            if r.random() < 0.15:
                src[key] = make()
        return src

    def stream_config(self, name: str) -> dict[str, Any]:
        r = self.rng
        cfg: dict[str, Any] = {"name": name}
        if r.random() < 0.9:
            cfg["subjects"] = self.subjects()
        options: list[tuple[str, Callable[[], Any]]] = [
            ("description", lambda: r.choice(["", "d", "x" * 4097])),
            ("retention", lambda: pick(r, ["limits", "interest", "workqueue"], ["Limits", "forever", ""])),
            ("max_consumers", self.limit),
            ("max_msgs", self.limit),
            ("max_bytes", self.limit),
            ("max_age", self.duration),
            ("max_msgs_per_subject", self.limit),
            ("max_msg_size", lambda: r.choice([0, -1, 1, 10, 1 << 20, 2**31 - 1, 2**31, 8 << 20])),
            ("discard", lambda: pick(r, ["old", "new"], ["New", "OLD", "oldest"])),
            ("storage", lambda: pick(r, ["file", "memory"], ["disk", "Memory"])),
            ("num_replicas", lambda: r.choice([0, 1, 1, 3, -1, 6])),
            ("no_ack", lambda: r.random() < 0.5),
            ("duplicate_window", self.duration),
            ("placement", lambda: r.choice([{}, {"cluster": ""}, {"cluster": "c1"}, {"tags": ["a"]},
                                            {"cluster": "", "tags": []}, {"preferred": "n1"}])),
            ("mirror", self.source),
            ("sources", lambda: [self.source() for _ in range(r.randint(0, 2))]),
            ("compression", lambda: pick(r, ["none", "s2"], ["S2", "zstd", ""])),
            ("first_seq", lambda: r.choice([0, 1, 10, 2**63 - 1, -1])),
            ("subject_transform", self.transform),
            ("republish", lambda: r.choice([
                {"src": self.subject(), "dest": r.choice(["rp.>", "rp.x", "a.>", "rp.{{wildcard(1)}}"])},
                {"dest": "rp.>", "headers_only": True},
                {"src": ">", "dest": ">"},
                {"src": "a.>", "dest": ""},
            ])),
            ("allow_direct", lambda: r.random() < 0.6),
            ("mirror_direct", lambda: r.random() < 0.5),
            ("discard_new_per_subject", lambda: r.random() < 0.5),
            ("sealed", lambda: r.random() < 0.3),
            ("deny_delete", lambda: r.random() < 0.5),
            ("deny_purge", lambda: r.random() < 0.5),
            ("allow_rollup_hdrs", lambda: r.random() < 0.6),
            ("consumer_limits", lambda: r.choice([{}, {"inactive_threshold": self.duration()},
                                                  {"max_ack_pending": self.limit()},
                                                  {"inactive_threshold": self.duration(), "max_ack_pending": self.limit()}])),
            ("allow_msg_ttl", lambda: r.random() < 0.6),
            ("subject_delete_marker_ttl", self.duration),
            ("allow_msg_counter", lambda: r.random() < 0.5),
            ("allow_atomic", lambda: r.random() < 0.5),
            ("allow_msg_schedules", lambda: r.random() < 0.5),
            ("persist_mode", lambda: pick(r, ["default", "async"], ["sync", "", "ASYNC"])),
            ("allow_batched", lambda: r.random() < 0.5),
            ("metadata", self.metadata),
        ]
        for key, make in options:
            if r.random() < (0.05 if key in ("mirror", "sources", "sealed", "description") else self.density):
                cfg[key] = make()
        return cfg

    def consumer_config(self, stream: str, name: str | None, durable: bool) -> dict[str, Any]:
        r = self.rng
        cfg: dict[str, Any] = {}
        if name is not None:
            cfg["durable_name" if durable else "name"] = name
        cfg["ack_policy"] = pick(r, ["explicit", "none", "all"], ["flow_control", "Explicit", "some"], 0.1)
        if r.random() < 0.3:
            cfg["deliver_subject"] = r.choice(["dlv.x", "dlv.y", "dlv.*", "a.b", "_DF.push"])
        options: list[tuple[str, Callable[[], Any]]] = [
            ("description", lambda: "d"),
            ("deliver_policy", lambda: pick(r, ["all", "last", "new", "by_start_sequence", "by_start_time",
                                                "last_per_subject"], ["All", "first"])),
            ("opt_start_seq", lambda: r.choice([0, 1, 3, 100])),
            ("opt_start_time", lambda: r.choice([PAST, FUTURE])),
            ("ack_wait", self.duration),
            ("max_deliver", lambda: r.choice([0, -1, 1, 2, 5])),
            ("backoff", lambda: r.choice([[], [NS], [NS, 2 * NS], [0], [-1], [NS, NS, NS, NS, NS, NS]])),
            ("filter_subject", self.subject),
            ("filter_subjects", lambda: [self.subject() for _ in range(r.randint(0, 3))]),
            ("replay_policy", lambda: pick(r, ["instant", "original"], ["fast"])),
            ("rate_limit_bps", lambda: r.choice([0, 1024])),
            ("sample_freq", lambda: r.choice(["", "50%", "100", "x"])),
            ("max_waiting", self.limit),
            ("max_ack_pending", self.limit),
            ("flow_control", lambda: r.random() < 0.5),
            ("headers_only", lambda: r.random() < 0.5),
            ("max_batch", self.limit),
            ("max_expires", self.duration),
            ("max_bytes", self.limit),
            ("deliver_group", lambda: r.choice(["q", "", "q.x"])),
            ("idle_heartbeat", self.duration),
            ("inactive_threshold", self.duration),
            ("num_replicas", lambda: r.choice([0, 1, 3, -1])),
            ("mem_storage", lambda: r.random() < 0.5),
            ("direct", lambda: r.random() < 0.3),
            ("metadata", self.metadata),
            ("pause_until", lambda: r.choice([FUTURE, PAST, ZERO_TIME])),
            ("priority_groups", lambda: r.choice([["g"], ["g", "h"], [""], ["g.x"], ["g"] * 2, ["a" * 17]])),
            ("priority_policy", lambda: pick(r, ["none", "overflow", "pinned_client", "prioritized"], ["pinned"])),
            ("priority_timeout", self.duration),
        ]
        for key, make in options:
            if r.random() < self.density:
                cfg[key] = make()
        return cfg

    # steps
    def step(self) -> dict[str, Any]:
        r = self.rng
        kind = r.choices(
            ["screate", "supdate", "sinfo", "sdelete", "spurge", "snames", "slist", "msgget", "msgdel",
             "ccreate", "cinfo", "cdelete", "cpause", "creset", "cunpin", "cnames", "clist", "direct",
             "pub", "next", "ack", "info"],
            [12, 6, 5, 2, 3, 2, 2, 3, 2, 10, 3, 2, 2, 2, 1, 1, 1, 4, 16, 3, 2, 1],
        )[0]
        return getattr(self, "_" + kind)()

    def _screate(self) -> dict[str, Any]:
        name = pick(self.rng, STREAMS, EDGE_STREAMS, 0.08)
        cfg = self.stream_config(name)
        subj = name
        if self.rng.random() < 0.04:
            subj = self.rng.choice(STREAMS)
        if name not in self.streams:
            self.streams[name] = cfg
        return req(f"STREAM.CREATE.{subj}", cfg)

    def _supdate(self) -> dict[str, Any]:
        name = self.stream_name()
        base = copy.deepcopy(self.streams.get(name) or {"name": name})
        new = self.stream_config(name)
        r = self.rng
        for key in r.sample(sorted(new), k=min(len(new), r.randint(1, 3))):
            base[key] = new[key]
        if r.random() < 0.2 and len(base) > 1:
            base.pop(r.choice([k for k in base if k != "name"]))
        return req(f"STREAM.UPDATE.{name}", base)

    def _sinfo(self) -> dict[str, Any]:
        r = self.rng
        body: Any = r.choice([b"", {}, {"subjects_filter": r.choice([">", "a.*", "a"])}, {"deleted_details": True},
                              {"subjects_filter": ">", "offset": r.choice([0, 1, 5])}])
        return req(f"STREAM.INFO.{self.stream_name()}", body)

    def _sdelete(self) -> dict[str, Any]:
        name = self.stream_name()
        return req(f"STREAM.DELETE.{name}", b"")

    def _spurge(self) -> dict[str, Any]:
        r = self.rng
        body: Any = r.choice([b"", {}, {"filter": self.subject()}, {"seq": r.choice([0, 1, 3, 100])},
                              {"keep": r.choice([0, 1, 2])}, {"filter": "a.*", "keep": 1},
                              {"seq": 2, "keep": 1}, {"filter": "a", "seq": 3}])
        return req(f"STREAM.PURGE.{self.stream_name()}", body)

    def _snames(self) -> dict[str, Any]:
        r = self.rng
        return req("STREAM.NAMES", r.choice([b"", {}, {"subject": self.subject()}, {"offset": r.choice([0, 1, 5])}]))

    def _slist(self) -> dict[str, Any]:
        r = self.rng
        return req("STREAM.LIST", r.choice([b"", {}, {"subject": self.subject()}, {"offset": r.choice([0, 1, 5])}]))

    def _msgget(self) -> dict[str, Any]:
        r = self.rng
        body = r.choice([{"seq": r.choice([0, 1, 2, 3, 50])}, {"last_by_subj": r.choice([*PUB_SUBJECTS, "a.*", ">"])},
                         {"next_by_subj": r.choice([*PUB_SUBJECTS, "a.*"]), "seq": r.choice([0, 1, 2])},
                         {"seq": 1, "last_by_subj": "a"}, {}])
        return req(f"STREAM.MSG.GET.{self.stream_name()}", body)

    def _msgdel(self) -> dict[str, Any]:
        r = self.rng
        body = {"seq": r.choice([0, 1, 2, 3, 50])}
        if r.random() < 0.3:
            body["no_erase"] = r.random() < 0.5
        return req(f"STREAM.MSG.DELETE.{self.stream_name()}", body)

    def _ccreate(self) -> dict[str, Any]:
        r = self.rng
        stream = self.stream_name()
        form = r.choices(["ephemeral", "named", "durable_api", "filtered", "durable_cfg"], [2, 5, 2, 2, 2])[0]
        name = pick(r, CONSUMERS, EDGE_CONSUMERS, 0.08)
        if form == "ephemeral":
            cfg = self.consumer_config(stream, None, False)
            subj = f"CONSUMER.CREATE.{stream}"
        elif form == "durable_api":
            cfg = self.consumer_config(stream, name, True)
            subj = f"CONSUMER.DURABLE.CREATE.{stream}.{name}"
        elif form == "filtered":
            cfg = self.consumer_config(stream, name, r.random() < 0.5)
            filt = r.choice([*PUB_SUBJECTS, "a.*", "a.>"])
            if r.random() < 0.7:
                cfg["filter_subject"] = filt
            subj = f"CONSUMER.CREATE.{stream}.{name}.{filt}"
        elif form == "durable_cfg":
            cfg = self.consumer_config(stream, name, True)
            subj = f"CONSUMER.CREATE.{stream}.{name}"
        else:
            cfg = self.consumer_config(stream, name, False)
            subj = f"CONSUMER.CREATE.{stream}.{name}"
        if form != "ephemeral":
            self.consumers.setdefault(stream, set()).add(name)
        body: dict[str, Any] = {"stream_name": stream if r.random() > 0.04 else "X", "config": cfg}
        if r.random() < 0.2:
            body["action"] = pick(r, ["create", "update", ""], ["delete"])
        if r.random() < 0.15:
            body["pedantic"] = True
        return req(subj, body)

    def _cinfo(self) -> dict[str, Any]:
        s = self.stream_name()
        return req(f"CONSUMER.INFO.{s}.{self.consumer_name(s)}", b"")

    def _cdelete(self) -> dict[str, Any]:
        s = self.stream_name()
        return req(f"CONSUMER.DELETE.{s}.{self.consumer_name(s)}", b"")

    def _cpause(self) -> dict[str, Any]:
        s = self.stream_name()
        r = self.rng
        return req(f"CONSUMER.PAUSE.{s}.{self.consumer_name(s)}",
                   r.choice([b"", {}, {"pause_until": FUTURE}, {"pause_until": PAST}, {"pause_until": ZERO_TIME}]))

    def _creset(self) -> dict[str, Any]:
        s = self.stream_name()
        r = self.rng
        return req(f"CONSUMER.RESET.{s}.{self.consumer_name(s)}",
                   r.choice([b"", {}, {"seq": r.choice([0, 1, 2, 5, 100])}, {"seq": -1}]))

    def _cunpin(self) -> dict[str, Any]:
        s = self.stream_name()
        r = self.rng
        return req(f"CONSUMER.UNPIN.{s}.{self.consumer_name(s)}", r.choice([b"", {}, {"group": "g"}, {"group": "x"},
                                                                          {"group": ""}]))

    def _cnames(self) -> dict[str, Any]:
        return req(f"CONSUMER.NAMES.{self.stream_name()}", self.rng.choice([b"", {}, {"offset": 1}]))

    def _clist(self) -> dict[str, Any]:
        return req(f"CONSUMER.LIST.{self.stream_name()}", self.rng.choice([b"", {}, {"offset": 1}]))

    def _direct(self) -> dict[str, Any]:
        r = self.rng
        s = self.stream_name()
        if r.random() < 0.2:
            return {"op": "direct", "subject": f"$JS.API.DIRECT.GET.{s}.{r.choice(PUB_SUBJECTS)}", "body": b""}
        body = r.choice([
            {"seq": r.choice([0, 1, 2, 3, 50])}, {"last_by_subj": r.choice([*PUB_SUBJECTS, "a.*"])},
            {"next_by_subj": r.choice([*PUB_SUBJECTS, "a.*", ">"]), "seq": r.choice([0, 1, 2])},
            {"seq": 1, "batch": r.choice([1, 2, 5])}, {"multi_last": [r.choice(["a.*", ">", "a"])]},
            {"seq": 1, "batch": 3, "max_bytes": r.choice([1, 100])}, {}, {"seq": 1, "no_hdr": True},
            {"start_time": PAST}, {"multi_last": ["a.>"], "up_to_seq": 2}, {"seq": 1, "last_by_subj": "a"},
        ])
        return {"op": "direct", "subject": f"$JS.API.DIRECT.GET.{s}", "body": body}

    def _pub(self) -> dict[str, Any]:
        r = self.rng
        hdrs: list[tuple[str, str]] = []
        header_makers: list[tuple[str, Callable[[], str]]] = [
            ("Nats-Msg-Id", lambda: r.choice(["m1", "m2", "m3", ""])),
            ("Nats-Expected-Stream", lambda: self.stream_name()),
            ("Nats-Expected-Last-Sequence", lambda: str(r.choice([0, 1, 2, 3, -1]))),
            ("Nats-Expected-Last-Subject-Sequence", lambda: str(r.choice([0, 1, 2, 3]))),
            ("Nats-Expected-Last-Subject-Sequence-Subject", lambda: r.choice(["a", "a.*", "b.x", ">"])),
            ("Nats-Expected-Last-Msg-Id", lambda: r.choice(["m1", "m2", ""])),
            ("Nats-TTL", lambda: r.choice(["1h", "never", "0", "-1", "x", "60", "1s"])),
            ("Nats-Rollup", lambda: r.choice(["sub", "all", "other"])),
            ("Nats-Incr", lambda: r.choice(["1", "-5", "+2", "x", "0", "99999999999999999999999"])),
            ("Nats-Schedule", lambda: r.choice(["@at 2099-01-01T00:00:00Z", "@every 1h", "@hourly", "x",
                                                "0 0 * * * *", "@at 2001-01-01T00:00:00Z"])),
            ("Nats-Schedule-Target", lambda: r.choice(["a.b", "b.x", "zz", "a.*"])),
            ("Nats-Schedule-TTL", lambda: r.choice(["1h", "x"])),
            ("Nats-Required-Api-Level", lambda: r.choice(["0", "5", "6", "x"])),
            ("Nats-Batch-Id", lambda: r.choice(["b1", ""])),
            ("Nats-Batch-Sequence", lambda: r.choice(["1", "2"])),
            ("Nats-Batch-Commit", lambda: r.choice(["1", "eob"])),
            ("Nats-Marker-Reason", lambda: "MaxAge"),
        ]
        for name, make in header_makers:
            if r.random() < 0.08:
                hdrs.append((name, make()))
        data = r.choice([b"", b"x", b"hello", b"1" * 100, b'{"val":"1"}'])
        return {"op": "pub", "subject": r.choice(PUB_SUBJECTS), "data": data, "hdrs": hdrs if hdrs else None}

    def _next(self) -> dict[str, Any]:
        s = self.stream_name()
        r = self.rng
        body = {"batch": r.choice([1, 2, 3]), "no_wait": True}
        if r.random() < 0.2:
            body["group"] = "g"
        return {"op": "next", "subject": f"$JS.API.CONSUMER.MSG.NEXT.{s}.{self.consumer_name(s)}", "body": body}

    def _ack(self) -> dict[str, Any]:
        return {"op": "ack", "data": self.rng.choice(["+ACK", "-NAK", "+TERM", "+WPI", "+NXT", '-NAK {"delay":1000000000}'])}

    def _info(self) -> dict[str, Any]:
        return req("INFO", b"")

    def case(self, length: int) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for _ in range(self.rng.randint(1, 2)):  # most cases start from at least one stream
            name = self.rng.choice(STREAMS)
            cfg = {"name": name, "subjects": self.subjects() or [self.rng.choice(SUBJECTS)]}
            if self.rng.random() < 0.5:
                cfg.update({k: v for k, v in self.stream_config(name).items() if k != "subjects"})
            self.streams[name] = cfg
            steps.append(req(f"STREAM.CREATE.{name}", cfg))
        while len(steps) < length:
            steps.append(self.step())
        return steps


def req(subject: str, body: Any) -> dict[str, Any]:
    return {"op": "req", "subject": "$JS.API." + subject, "body": body}


# --- running and normalising ---------------------------------------------------------------------

TIME_KEYS = {"created", "first_ts", "last_ts", "time", "ts", "last_active", "pinned_ts"}
_EPH_RE = re.compile(r"^[A-Za-z0-9]{8}$")
_TS_HDR_RE = re.compile(r"(Nats-Time-Stamp|Nats-Schedule-Next|Nats-Pin-Id|Nats-Stream-Identity): [^\r]*")
_ACK_RE = re.compile(r"^(\$JS\.ACK\.(?:[^.]+\.)+)(\d+)\.(\d+)$")


def _encode(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    return json.dumps(body).encode()


class Runner:
    """Runs a case on one server and returns its normalised observations."""

    def __init__(self, conn: Conn, store: Path | None = None) -> None:
        self.conn = conn
        self.store = store
        self.ephemerals: dict[str, str] = {}
        self.last_delivered: Msg | None = None

    def reset(self) -> None:
        """An empty account: every stream deleted (consumers go with them), and their directories
        gone from ``store``: nats-server removes a deleted stream's renamed ``.<name>`` directory
        in a goroutine, and a create of that name before the removal ends recovers its blocks (a
        "new" stream holding the last case's messages: a difference that is nats-server's race,
        as tests/jetstream/differential.py ``reset`` says)."""
        for _ in range(3):
            got = self.conn.request("$JS.API.STREAM.NAMES", b"")
            names = (json.loads(got[0].data).get("streams") or []) if got else []
            if not names:
                break
            for name in names:
                self.conn.request(f"$JS.API.STREAM.DELETE.{name}", b"")
        deadline = time.monotonic() + 30
        while self.store is not None and _being_removed(self.store) and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.store is not None:
            _remove_failed_deletes(self.store)

    def run(self, steps: list[dict[str, Any]]) -> list[Any]:
        self.ephemerals = {}
        self.last_delivered = None
        # drain anything left over (late deliveries of a previous case)
        with contextlib.suppress(TimeoutError):
            while True:
                self.conn._next(time.monotonic() + 0.001)
        return [self.normalise(self.step(s)) for s in steps]

    def step(self, s: dict[str, Any]) -> Any:
        c = self.conn
        op = s["op"]
        if op == "req":
            # CONSUMER.RESET is answered by the consumer itself: nobody answers for a missing one
            # (both servers), so a short wait there keeps the run fast.
            wait = 1.0 if ".CONSUMER.RESET." in s["subject"] else WAIT
            got = c.request(s["subject"], _encode(s["body"]), timeout=wait)
            return self.describe(got[0]) if got else "no answer"
        if op == "pub":
            got = c.request(s["subject"], s["data"], s.get("hdrs"), timeout=1.0)
            return self.describe(got[0]) if got else "no answer"
        if op == "direct":
            body = s["body"]
            many = isinstance(body, dict) and bool(body.get("batch") or body.get("multi_last"))
            got = c.request(s["subject"], _encode(body), many=many, timeout=2.0)
            return [self.describe(m) for m in got] if got else "no answer"
        if op == "next":
            got = c.request(s["subject"], _encode(s["body"]), many=True, timeout=2.0, most=s["body"]["batch"])
            for m in got:
                if m.reply.startswith("$JS.ACK."):
                    self.last_delivered = m
            return [self.describe(m) for m in got] if got else "no answer"
        if op == "ack":
            m = self.last_delivered
            if m is None:
                return "nothing to ack"
            got = c.request(m.reply, s["data"].encode(), timeout=0.3)
            return [self.describe(x) for x in got]
        raise ValueError(op)

    def describe(self, m: Msg) -> Any:
        out: dict[str, Any] = {}
        if m.hdr is not None:
            out["hdr"] = _TS_HDR_RE.sub(r"\1: <v>", m.hdr.decode(errors="replace"))
        if m.reply:
            ack = _ACK_RE.match(m.reply)
            out["reply"] = f"{ack.group(1)}<ts>.{ack.group(3)}" if ack else m.reply
        try:
            out["json"] = json.loads(m.data) if m.data.startswith(b"{") else None
        except ValueError:
            out["json"] = None
        if out["json"] is None:
            del out["json"]
            out["data"] = m.data.decode(errors="replace")
        if list(out) == ["json"]:
            return out["json"]
        return out

    def normalise(self, value: Any, path: str = "") -> Any:
        if isinstance(value, list):
            items = [self.normalise(v, path) for v in value]
            if path.endswith("consumers") and all(isinstance(i, str) for i in items):
                items.sort()
            return items
        if isinstance(value, str):
            if value in self.ephemerals:
                return self.ephemerals[value]
            for name, alias in self.ephemerals.items():  # named inside a text (an error description)
                value = value.replace(name, alias)
            return value
        if not isinstance(value, dict):
            return value
        if value.get("type") == "io.nats.jetstream.api.v1.consumer_create_response" and "name" in value:
            cfg = value.get("config") or {}
            if not cfg.get("durable_name") and _EPH_RE.match(value["name"]) and value["name"] not in CONSUMERS:
                self.ephemerals.setdefault(value["name"], f"<eph{len(self.ephemerals)}>")
        out: dict[str, Any] = {}
        cfg = value.get("config") if isinstance(value.get("config"), dict) else {}
        sourcing = bool(cfg.get("mirror") or cfg.get("sources"))
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if key in TIME_KEYS and isinstance(item, str):
                out[key] = item if item == ZERO_TIME else "<time>"
            elif key in ("pause_remaining",) and isinstance(item, int):
                out[key] = "<dur>" if item > 0 else item
            elif key in ("api",) and path == "":
                out[key] = "<api stats>"
            elif key == "cluster" and isinstance(item, dict):
                out[key] = {k: ("<server>" if k == "leader" else v) for k, v in item.items()}
            elif key == "metadata" and isinstance(item, dict):
                out[key] = {k: ("<server>" if k in ("_nats.ver", "_nats.level") else v) for k, v in item.items()}
            elif sourcing and key in ("state", "mirror", "sources"):
                out[key] = "<sourcing>"  # a sourcing stream's progress races its origins
            elif key in ("pinned_client_id",):
                out[key] = "<pin>"
            else:
                out[key] = self.normalise(item, sub)
        if isinstance(out.get("name"), str) and out["name"] in self.ephemerals:
            out["name"] = self.ephemerals[out["name"]]
        return out


def _remove_failed_deletes(store: Path) -> None:
    """A stream directory left without its ``meta.inf`` after every stream was deleted: nats-server
    2.15.1 answers the delete of a stream named with 255 characters with success, but its
    ``filestore.Delete`` removes the meta file and then cannot rename the directory (``.<name>`` is
    256 characters: ENAMETOOLONG), so the blocks stay and a later create of that name recovers
    them. Removed here so no case starts with another's messages (the difference itself is in
    ``KNOWN``)."""
    for streams in [*store.glob("jetstream/*/streams"), *store.glob("*/streams")]:
        for stream_dir in list(streams.iterdir()) if streams.is_dir() else []:
            if stream_dir.is_dir() and not stream_dir.name.startswith(".") and not (stream_dir / "meta.inf").exists():
                shutil.rmtree(stream_dir, ignore_errors=True)


def _being_removed(store: Path) -> bool:
    """A deleted stream's directory still being removed (``streams/.<name>``)."""
    try:
        return any(store.glob("jetstream/*/streams/.*")) or any(store.glob("*/streams/.*"))
    except FileNotFoundError:  # (a directory the glob walks went away under it: look again)
        return True


# --- comparing, shrinking, reporting -------------------------------------------------------------


@dataclass
class Pair:
    ours: Runner
    theirs: Runner
    requests: int = 0

    def run(self, steps: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        self.ours.reset()
        self.theirs.reset()
        a = self.ours.run(steps)
        b = self.theirs.run(steps)
        self.requests += len(steps)
        return a, b


def diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append(f"{path}.{k}" if path else k)
            else:
                out += diff_paths(a[k], b[k], f"{path}.{k}" if path else k)
        if not out and list(a) != list(b):
            out.append(f"{path}<order>")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += diff_paths(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path or "<value>"]


def step_kind(step: dict[str, Any]) -> str:
    if step["op"] != "req":
        return step["op"]
    parts = step["subject"].split(".")[2:]
    kind = []
    for p in parts:
        if p.isupper() and p not in STREAMS and p not in CONSUMERS:
            kind.append(p)
        else:
            break
    return ".".join(kind)


def signature(step: dict[str, Any], a: Any, b: Any) -> str:
    def code(x: Any) -> Any:
        if isinstance(x, dict) and isinstance(x.get("error"), dict):
            return x["error"].get("err_code")
        return None

    paths = sorted({re.sub(r"\[\d+\]", "[]", p) for p in diff_paths(a, b)})[:4]
    return f"{step_kind(step)} ours={code(a)} theirs={code(b)} {','.join(paths)}"


def first_diff(a: list[Any], b: list[Any]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return i
    return None


@dataclass
class Known:
    """A deliberate difference, named in the README."""

    why: str
    match: Callable[[dict[str, Any], Any, Any], bool]


def _err(x: Any) -> dict[str, Any]:
    return x.get("error", {}) if isinstance(x, dict) and isinstance(x.get("error"), dict) else {}


KNOWN: list[Known] = [
    Known(
        "a stream named with 255 characters, deleted and created again: nats-server's delete answers success "
        "but leaves the messages on disk (its directory cannot be renamed to the 256-character .<name>), and "
        "the new stream recovers them; ours starts empty",
        lambda s, a, b: len(s["subject"].rsplit(".", 1)[1]) == 255
        and ".STREAM." in s["subject"]
        and a["state"]["messages"] == 0 < b["state"]["messages"],
    ),
    Known(
        "num_replicas > 1: same code 10074, our description also points at NATS clusters",
        lambda s, a, b: _err(a).get("err_code") == _err(b).get("err_code") == 10074,
    ),
    Known(
        "nats-server's file store lists sequence 0 as deleted in a stream that never held a message "
        "(STREAM.INFO deleted_details: num_deleted 1, deleted [0]); ours reports none",
        lambda s, a, b: _no_zero_deleted(a) == _no_zero_deleted(b) and _has_zero_deleted(b),
    ),
    Known(
        "a consumer name over 255 characters given only in the subject: nats-server lets it through to "
        "its file store, which fails (10012 'error creating store for consumer'); ours refuses it first "
        "(10102 'consumer name is too long, maximum allowed is 255')",
        lambda s, a, b: _err(a).get("err_code") == 10102 and _err(b).get("err_code") == 10012,
    ),
]


def _has_zero_deleted(x: Any) -> bool:
    state = x.get("state") if isinstance(x, dict) else None
    return isinstance(state, dict) and state.get("deleted") == [0] and state.get("last_seq") == 0


def _no_zero_deleted(x: Any) -> Any:
    if not _has_zero_deleted(x):
        return x
    y = copy.deepcopy(x)
    y["state"].pop("deleted")
    y["state"].pop("num_deleted", None)
    return y


def known(step: dict[str, Any], a: Any, b: Any) -> str | None:
    for k in KNOWN:
        with contextlib.suppress(Exception):
            if k.match(step, a, b):
                return k.why
    return None


def case_difference(pair: Pair, steps: list[dict[str, Any]]) -> tuple[int, str, Any, Any] | None:
    """The first unlisted difference of a case: (step index, signature, ours, theirs)."""
    a, b = pair.run(steps)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and known(steps[i], x, y) is None:
            return i, signature(steps[i], x, y), x, y
    return None


def shrink(pair: Pair, steps: list[dict[str, Any]], sig: str, deadline: float) -> list[dict[str, Any]]:
    """Remove steps, then body keys, while the same difference remains."""

    def same(candidate: list[dict[str, Any]]) -> bool:
        got = case_difference(pair, candidate)
        return got is not None and got[1] == sig

    idx = case_difference(pair, steps)
    if idx is not None:
        steps = steps[: idx[0] + 1]
    i = len(steps) - 2
    while i >= 0 and time.monotonic() < deadline:
        cand = steps[:i] + steps[i + 1 :]
        if same(cand):
            steps = cand
        i -= 1
    def holder_of(candidate: list[dict[str, Any]], i: int, path: list[str]) -> dict[str, Any] | None:
        h = candidate[i].get("body")
        for p in path:
            h = h.get(p) if isinstance(h, dict) else None
        return h if isinstance(h, dict) else None

    for i in range(len(steps)):
        for holder_path in ([], ["config"]):
            holder = holder_of(steps, i, holder_path)
            for key in list(holder or ()):
                if time.monotonic() > deadline:
                    return steps
                cand = copy.deepcopy(steps)
                h = holder_of(cand, i, holder_path)
                if h is None or key not in h:
                    break
                del h[key]
                if same(cand):
                    steps = cand
    return steps


def show_step(s: dict[str, Any]) -> str:
    if s["op"] == "pub":
        return f"pub {s['subject']} {s['data']!r} hdrs={s.get('hdrs')}"
    if s["op"] == "ack":
        return f"ack (last delivered) {s['data']!r}"
    body = s.get("body", b"")
    text = body.decode() if isinstance(body, bytes) else json.dumps(body)
    return f"{s['op']} {s['subject']} {text}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="differential fuzzing: embedded server vs nats-server")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of fuzzing (shrinking included)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cases", type=int, default=0, help="stop after this many cases (0: budget only)")
    p.add_argument("--length", type=int, default=12, help="steps per case (at most)")
    p.add_argument("--max-diffs", type=int, default=30, help="stop after this many distinct differences")
    p.add_argument("--json", action="store_true", help="print the figures as JSON at the end")
    p.add_argument("--workdir", default=None)
    args = p.parse_args(argv)

    base = Path(args.workdir or tempfile.mkdtemp(prefix="difffuzz-"))
    servers = [Server("embedded", base / "embedded"), Server("nats-server", base / "nats-server")]
    found: dict[str, dict[str, Any]] = {}
    listed: dict[str, int] = {}
    flaky = 0
    cases = 0
    stop_at = time.monotonic() + args.budget
    try:
        for s in servers:
            s.start()
        ours, theirs = servers
        pair = Pair(Runner(Conn(ours.port), ours.workdir / "store"), Runner(Conn(theirs.port), theirs.workdir / "store"))
        rng = random.Random(args.seed)
        while time.monotonic() < stop_at and len(found) < args.max_diffs and not (0 < args.cases <= cases):
            case_seed = rng.randrange(1 << 30)
            gen = Gen(random.Random(case_seed))
            steps = gen.case(gen.rng.randint(2, args.length))
            cases += 1
            a, b = pair.run(steps)
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if x != y:
                    why = known(steps[i], x, y)
                    if why is not None:
                        listed[why] = listed.get(why, 0) + 1
            got = case_difference_from(steps, a, b)
            if got is None:
                continue
            _idx, sig, _, _ = got
            if sig in found:
                found[sig]["count"] += 1
                continue
            again = case_difference(pair, steps)
            if again is None or again[1] != sig:
                flaky += 1
                continue
            small = shrink(pair, steps, sig, min(stop_at + 60, time.monotonic() + 30))
            final = case_difference(pair, small) or again
            found[sig] = {"count": 1, "seed": case_seed, "steps": small, "ours": final[2], "theirs": final[3]}
            print(f"\n=== difference {len(found)}: {sig}  (case seed {case_seed})", flush=True)
            for n, s in enumerate(small):
                print(f"  {n}: {show_step(s)}")
            print(f"  at step {final[0]}:\n    ours:        {json.dumps(final[2], sort_keys=True)}"
                  f"\n    nats-server: {json.dumps(final[3], sort_keys=True)}", flush=True)
    finally:
        for s in servers:
            s.stop()
        if args.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    figures = {
        "cases": cases,
        "requests_compared": pair.requests if "pair" in dir() else 0,
        "differences": len(found),
        "listed_deliberate": listed,
        "flaky_not_reproduced": flaky,
        "seed": args.seed,
        "budget_s": args.budget,
    }
    print(json.dumps(figures) if args.json else
          f"\ndifffuzz: {cases} cases, {figures['requests_compared']} requests compared on both servers, "
          f"{len(found)} distinct differences, {sum(listed.values())} deliberate (listed), {flaky} not reproduced")
    return 1 if found else 0


def case_difference_from(steps: list[dict[str, Any]], a: list[Any], b: list[Any]) -> tuple[int, str, Any, Any] | None:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and known(steps[i], x, y) is None:
            return i, signature(steps[i], x, y), x, y
    return None


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
