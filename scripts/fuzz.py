"""Fuzzing (issue #15) with hypothesis, for a fixed time budget: the protocol parsers and every
``$JS.API`` request body.

- ``parser``: protocol-shaped and random bytes fed to the server- and client-side parsers in
  random chunks: no exception ever, and the events are the same however the bytes are split
  (up to the first protocol violation, after which a connection is closed).
- ``api``: an embedded server in this process (JetStream on, a stream and a consumer to aim at);
  random JSON bodies (known field names with values of every type, random nesting, raw bytes) on
  every ``$JS.API`` subject: each request is answered, no handler logs a traceback, the server
  keeps answering.

A failing example is printed by hypothesis (with the ``@reproduce_failure`` blob); turn it into a
regression test under tests/. (atheris does not install on this Python; hypothesis explores with
its own coverage-free search.)

Usage: ``python scripts/fuzz.py --budget 120 [parser|api]``; exits 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyjetstream.protocol.events import ProtocolViolation
from pyjetstream.protocol.parser import ClientSideParser, ServerSideParser

TOKENS = [
    b"PUB ", b"HPUB ", b"SUB ", b"UNSUB ", b"CONNECT ", b"PING", b"PONG", b"MSG ", b"HMSG ", b"INFO ",
    b"+OK", b"-ERR ", b"\r\n", b" ", b"\t", b"foo", b"a.b.>", b"*", b"5", b"0", b"12", b"999999999999",
    b"-1", b"NATS/1.0\r\n", b"hello", b"{}", b'{"verbose":true}', b"\x00", b"\xff",
]

wire = st.lists(st.one_of(st.sampled_from(TOKENS), st.binary(max_size=12)), max_size=40).map(b"".join)


def _until_violation(events: list[Any]) -> list[Any]:
    out = []
    for e in events:
        out.append(e)
        if isinstance(e, ProtocolViolation):
            break
    return out


def _feed(parser: Any, data: bytes, cuts: list[int]) -> list[Any]:
    events: list[Any] = []
    last = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        events += parser.feed(data[last:cut])
        last = max(last, cut)
        if any(isinstance(e, ProtocolViolation) for e in events):
            break
    return events


@given(data=wire, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def fuzz_parser(data: bytes, cuts: list[int]) -> None:
    for make in (ServerSideParser, ClientSideParser):
        whole = _until_violation(make().feed(data))
        split = _until_violation(_feed(make(), data, cuts))
        if not any(isinstance(e, ProtocolViolation) for e in whole + split):
            assert whole == split, (make.__name__, data, cuts)


# --- API bodies ---------------------------------------------------------------------------------

API_SUBJECTS = [
    "INFO", "STREAM.CREATE.FZ{n}", "STREAM.UPDATE.S", "STREAM.NAMES", "STREAM.LIST", "STREAM.INFO.S",
    "STREAM.DELETE.FZ{n}", "STREAM.PURGE.S", "STREAM.MSG.GET.S", "STREAM.MSG.DELETE.S", "DIRECT.GET.S",
    "STREAM.SNAPSHOT.S", "STREAM.RESTORE.FZ{n}", "STREAM.LEADER.STEPDOWN.S", "STREAM.PEER.REMOVE.S",
    "CONSUMER.CREATE.S", "CONSUMER.CREATE.S.C{n}", "CONSUMER.DURABLE.CREATE.S.D{n}", "CONSUMER.NAMES.S",
    "CONSUMER.LIST.S", "CONSUMER.INFO.S.C", "CONSUMER.DELETE.S.C{n}", "CONSUMER.MSG.NEXT.S.C",
    "CONSUMER.PAUSE.S.C", "CONSUMER.UNPIN.S.C", "CONSUMER.RESET.S.C", "CONSUMER.LEADER.STEPDOWN.S.C",
]  # ACCOUNT.PURGE, META.LEADER.STEPDOWN and SERVER.REMOVE answer the system account only (no answer here, as nats-server)
FIELDS = [
    "name", "subjects", "retention", "max_consumers", "max_msgs", "max_bytes", "max_age", "max_msg_size",
    "storage", "num_replicas", "discard", "duplicate_window", "mirror", "sources", "sealed", "deny_delete",
    "allow_rollup_hdrs", "allow_direct", "subject_transform", "republish", "compression", "first_seq",
    "metadata", "allow_msg_ttl", "subject_delete_marker_ttl", "allow_msg_counter", "allow_atomic",
    "consumer_limits", "placement", "config", "durable_name", "deliver_policy", "opt_start_seq",
    "ack_policy", "ack_wait", "max_deliver", "filter_subject", "filter_subjects", "replay_policy",
    "max_ack_pending", "deliver_subject", "idle_heartbeat", "flow_control", "headers_only", "backoff",
    "inactive_threshold", "mem_storage", "priority_groups", "priority_policy", "pause_until", "batch",
    "expires", "no_wait", "max_bytes", "seq", "last_by_subj", "next_by_subj", "keep", "filter", "offset",
    "subject", "group", "min_pending", "action", "pedantic", "multi_last", "up_to_seq", "start_time",
]
scalar = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**65), max_value=2**65), st.floats(allow_nan=False),
    st.text(max_size=12), st.sampled_from(["", ">", "*", "a.b", "S", "C", "limits", "explicit", "all", "file",
                                           "memory", "1970-01-01T00:00:00Z", "-1"]),
)
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)),
                     max_leaves=12)
body = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS), value, max_size=8).map(lambda d: json.dumps(d).encode()),
    st.dictionaries(st.just("config"), st.dictionaries(st.sampled_from(FIELDS), value, max_size=8))
    .map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=40),
    st.just(b""),
)


class Requester:
    """A minimal blocking NATS client: request/reply over one raw socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self._line()  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true}\r\nSUB _FZ.* 1\r\n')
        self.n = 0

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def request(self, subject: str, data: bytes, timeout: float = 10.0) -> bytes:
        self.n += 1
        inbox = f"_FZ.{self.n}"
        self.sock.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), inbox.encode(), len(data), data))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            parts = line.split()
            if parts and parts[0] in (b"MSG", b"HMSG"):
                payload = self._read(int(parts[-1]))
                if parts[1].decode() == inbox:
                    return payload
        raise TimeoutError(f"no answer to {subject}")


class Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


def run_api(budget: float, seed: int | None) -> int:
    from pyjetstream import ServerThread

    handler = Tracebacks()
    logging.getLogger("pyjetstream").addHandler(handler)
    with ServerThread(jetstream=True) as srv:
        req = Requester(srv.port)
        req.request("$JS.API.STREAM.CREATE.S", b'{"name":"S","subjects":["s.>"]}')
        req.request("$JS.API.CONSUMER.CREATE.S.C", b'{"stream_name":"S","config":{"name":"C","ack_policy":"explicit"}}')
        req.sock.sendall(b"PUB s.1 2\r\nhi\r\n")
        counter = {"n": 0}

        @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(subject=st.sampled_from(API_SUBJECTS), n=st.integers(0, 3), data=body)
        def fuzz_api(subject: str, n: int, data: bytes) -> None:
            if time.monotonic() > stop_at:
                return
            counter["n"] += 1
            subj = "$JS.API." + subject.format(n=n)
            if subject.startswith("CONSUMER.MSG.NEXT"):
                # A pull request may wait (no expires) and answers with a message or a status.
                req.sock.sendall(b"PUB %s _FZ.pull %d\r\n%s\r\n" % (subj.encode(), len(data), data))
                assert req.request("$JS.API.INFO", b"").startswith(b"{"), "server stopped answering"
                return
            answer = req.request(subj, data)
            assert answer, (subj, data)
            assert not handler.records, (subj, data, handler.records[0].getMessage())
            assert req.request("$JS.API.INFO", b"").startswith(b"{"), "server stopped answering"

        stop_at = time.monotonic() + budget
        try:
            while time.monotonic() < stop_at:
                fuzz_api()
        except Exception as exc:  # hypothesis already printed the falsifying example
            print(f"api: FAILED after {counter['n']} requests: {exc!r}")
            return 1
    print(f"api: {counter['n']} requests, no failure")
    return 0


def run_parser(budget: float) -> int:
    count = {"n": 0}
    stop_at = time.monotonic() + budget

    @settings(max_examples=2000, deadline=None, database=None)
    @given(data=wire, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8))
    def once(data: bytes, cuts: list[int]) -> None:
        count["n"] += 1
        fuzz_parser.hypothesis.inner_test(data, cuts)  # type: ignore[attr-defined]

    try:
        while time.monotonic() < stop_at:
            once()
    except Exception as exc:
        print(f"parser: FAILED after {count['n']} inputs: {exc!r}")
        return 1
    print(f"parser: {count['n']} inputs, no failure")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="fuzz the protocol parser and the $JS.API bodies")
    p.add_argument("targets", nargs="*", help="parser and/or api (default: both)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds per target")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)
    rc = 0
    for target in args.targets or ["parser", "api"]:
        rc |= run_parser(args.budget) if target == "parser" else run_api(args.budget, args.seed)
    return rc


if __name__ == "__main__":
    sys.exit(main())
