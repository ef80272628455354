"""Capture raw JetStream API JSON from a real nats-server (the reference, 2.15.1) into tests/api/data/.

Not a test: a tool to (re)generate the reference samples the api/ tests round-trip.
Run: .venv/bin/python tests/api/capture_samples.py [path/to/nats-server]

It speaks the core protocol over a plain socket (no client library) so the bytes
saved are exactly the bytes the server sent.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).parent / "data"


class RawConn:
    """Minimal blocking NATS connection that returns messages byte-exact."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.info = json.loads(self._line()[5:])
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1}
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        assert self._line() == b"PONG"
        self.sid = 0
        self.pending: list[dict] = []

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def sub(self, subject: str) -> int:
        self.sid += 1
        self.sock.sendall(f"SUB {subject} {self.sid}\r\n".encode())
        return self.sid

    def pub(self, subject: str, payload: bytes = b"", reply: str = "", headers: dict | None = None) -> None:
        rep = f" {reply}" if reply else ""
        if headers:
            hdr = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            hb = hdr.encode()
            self.sock.sendall(
                f"HPUB {subject}{rep} {len(hb)} {len(hb) + len(payload)}\r\n".encode()
                + hb
                + payload
                + b"\r\n"
            )
        else:
            self.sock.sendall(f"PUB {subject}{rep} {len(payload)}\r\n".encode() + payload + b"\r\n")

    def read_msg(self, timeout: float = 5.0) -> dict:
        self.sock.settimeout(timeout)
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            if line in (b"PONG", b"+OK") or line.startswith(b"INFO "):  # 2.11+ sends an INFO after CONNECT
                continue
            parts = line.split(b" ")
            op = parts[0]
            if op == b"MSG":
                subj, _sid, *rest = parts[1:]
                reply = rest[0] if len(rest) == 2 else b""
                payload = self._exact(int(rest[-1]))
                return {"subject": subj.decode(), "reply": reply.decode(), "headers": "", "payload": payload}
            if op == b"HMSG":
                subj, _sid, *rest = parts[1:]
                reply = rest[0] if len(rest) == 3 else b""
                hlen, tlen = int(rest[-2]), int(rest[-1])
                raw = self._exact(tlen)
                return {
                    "subject": subj.decode(),
                    "reply": reply.decode(),
                    "headers": raw[:hlen].decode(),
                    "payload": raw[hlen:],
                }
            raise RuntimeError(f"unexpected {line!r}")

    def request(self, subject: str, payload: bytes = b"", headers: dict | None = None) -> dict:
        inbox = f"_INBOX.cap.{time.monotonic_ns()}"
        sid = self.sub(inbox)
        self.pub(subject, payload, inbox, headers)
        msg = self.read_msg()
        while msg["subject"] != inbox:  # advisories from the $JS.EVENT.> sub are collected separately
            self.pending.append(msg)
            msg = self.read_msg()
        self.sock.sendall(f"UNSUB {sid}\r\n".encode())
        return msg


def main() -> None:
    server = sys.argv[1] if len(sys.argv) > 1 else (shutil.which("nats-server") or "nats-server")
    store = tempfile.mkdtemp(prefix="capjs")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([server, "-p", str(port), "-js", "-sd", store], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        run(RawConn(port), RawConn(port))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(store, ignore_errors=True)


def run(c: RawConn, events: RawConn) -> None:
    DATA.mkdir(exist_ok=True)
    for f in DATA.glob("*"):
        f.unlink()
    version = c.info["version"]
    events.sub("$JS.EVENT.>")
    samples: dict[str, str] = {}

    def api(name: str, subject: str, body: object = b"") -> dict:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        msg = c.request(subject, payload)
        (DATA / f"{name}.json").write_bytes(msg["payload"])
        samples[name] = subject
        return json.loads(msg["payload"])

    def save_msg(name: str, msg: dict) -> None:
        out = dict(msg, payload=msg["payload"].decode())
        (DATA / f"{name}.msg.json").write_text(json.dumps(out, indent=1) + "\n")

    api("account_info_empty", "$JS.API.INFO")
    api("stream_names_empty", "$JS.API.STREAM.NAMES")
    api("stream_list_empty", "$JS.API.STREAM.LIST")
    api("stream_create_minimal", "$JS.API.STREAM.CREATE.ORDERS", {"name": "ORDERS", "subjects": ["orders.>"]})
    api("stream_create_again", "$JS.API.STREAM.CREATE.ORDERS", {"name": "ORDERS", "subjects": ["orders.>"]})
    api(
        "stream_create_full",
        "$JS.API.STREAM.CREATE.FULL",
        {
            "name": "FULL",
            "description": "every <field> & more",
            "subjects": ["full.a", "full.b", "full.*.c"],
            "retention": "limits",
            "max_consumers": 10,
            "max_msgs": 1000,
            "max_bytes": 1048576,
            "max_age": 3600_000_000_000,
            "max_msgs_per_subject": 5,
            "max_msg_size": 1024,
            "discard": "new",
            "storage": "memory",
            "num_replicas": 1,
            "duplicate_window": 60_000_000_000,
            "republish": {"src": "full.>", "dest": "rep.>", "headers_only": True},
            "allow_direct": True,
            "discard_new_per_subject": True,
            "deny_delete": True,
            "allow_rollup_hdrs": True,
            # 2.10+ fields a 2.9 server ignores (clients send them anyway)
            "compression": "s2",
            "metadata": {"owner": "team"},
            "first_seq": 1,
            "consumer_limits": {"max_ack_pending": 10},
            "allow_msg_ttl": True,
        },
    )
    api(
        "stream_create_workqueue",
        "$JS.API.STREAM.CREATE.WQ",
        {"name": "WQ", "subjects": ["wq.*"], "retention": "workqueue", "storage": "file", "no_ack": True},
    )
    api(
        "stream_create_mirror",
        "$JS.API.STREAM.CREATE.MIRROR",
        {"name": "MIRROR", "mirror": {"name": "ORDERS", "opt_start_seq": 2}, "mirror_direct": False},
    )
    api(
        "stream_create_sources",
        "$JS.API.STREAM.CREATE.SRC",
        {
            "name": "SRC",
            "sources": [
                {
                    "name": "ORDERS",
                    "filter_subject": "orders.a",
                    "opt_start_time": "2023-01-02T15:04:05.123456789Z",
                },
                {"name": "FULL", "external": {"api": "$JS.hub.API", "deliver": "ext.deliver"}},
            ],
        },
    )
    api("err_stream_exists", "$JS.API.STREAM.CREATE.ORDERS", {"name": "ORDERS", "subjects": ["other.>"]})
    api("err_stream_name_mismatch", "$JS.API.STREAM.CREATE.X", {"name": "Y"})
    api("err_invalid_json", "$JS.API.STREAM.CREATE.X", b"{not json")
    api("err_stream_invalid_config", "$JS.API.STREAM.CREATE.X", {"name": "X", "max_age": 1})
    api("err_stream_not_found", "$JS.API.STREAM.INFO.NOPE")
    api("err_overlap", "$JS.API.STREAM.CREATE.OVER", {"name": "OVER", "subjects": ["orders.a"]})

    # Publishes: PubAcks are hand-formatted by the server.
    acks = {}
    for i, (subj, hdrs) in enumerate(
        [
            ("orders.a", None),
            ("orders.b", {"Nats-Msg-Id": "m1", "X-Custom": "v<1>"}),
            ("orders.b", {"Nats-Msg-Id": "m1"}),
            ("orders.a", {"Nats-Expected-Last-Sequence": "99"}),
            ("orders.a", {"Nats-Expected-Last-Msg-Id": "zzz"}),
            ("orders.a", {"Nats-Expected-Stream": "OTHER"}),
            ("orders.c", None),
            ("orders.a", None),
        ]
    ):
        acks[f"pub{i}"] = c.request(subj, f"payload {i}".encode(), hdrs)["payload"].decode()
    acks["full_1"] = c.request("full.a", b"x" * 10)["payload"].decode()
    acks["full_too_big"] = c.request("full.a", b"x" * 2000)["payload"].decode()
    (DATA / "pub_acks.json").write_text(json.dumps(acks, indent=1) + "\n")

    api("stream_info_orders", "$JS.API.STREAM.INFO.ORDERS")
    api("stream_info_subjects", "$JS.API.STREAM.INFO.ORDERS", {"subjects_filter": ">"})
    api("msg_delete", "$JS.API.STREAM.MSG.DELETE.ORDERS", {"seq": 1})
    api("msg_delete_no_erase", "$JS.API.STREAM.MSG.DELETE.ORDERS", {"seq": 3, "no_erase": True})
    api("err_msg_delete_denied", "$JS.API.STREAM.MSG.DELETE.FULL", {"seq": 1})
    api("stream_info_deleted", "$JS.API.STREAM.INFO.ORDERS", {"deleted_details": True})
    api("msg_get_seq_headers", "$JS.API.STREAM.MSG.GET.ORDERS", {"seq": 2})
    api("msg_get_last_by_subj", "$JS.API.STREAM.MSG.GET.ORDERS", {"last_by_subj": "orders.a"})
    api("msg_get_next_by_subj", "$JS.API.STREAM.MSG.GET.ORDERS", {"next_by_subj": "orders.*", "seq": 2})
    api("err_msg_get_not_found", "$JS.API.STREAM.MSG.GET.ORDERS", {"seq": 999})
    api("err_msg_get_bad_request", "$JS.API.STREAM.MSG.GET.ORDERS", {"seq": 1, "last_by_subj": "orders.a"})
    save_msg("direct_get_last", c.request("$JS.API.DIRECT.GET.FULL.full.a"))
    save_msg("direct_get_seq", c.request("$JS.API.DIRECT.GET.FULL", b'{"seq":1}'))
    save_msg("direct_get_miss", c.request("$JS.API.DIRECT.GET.FULL", b'{"seq":99}'))
    api("stream_names", "$JS.API.STREAM.NAMES")
    api("stream_names_filtered", "$JS.API.STREAM.NAMES", {"subject": "orders.a"})
    api("stream_names_nomatch", "$JS.API.STREAM.NAMES", {"subject": "zzz"})
    api("stream_list", "$JS.API.STREAM.LIST")
    api(
        "stream_update",
        "$JS.API.STREAM.UPDATE.ORDERS",
        {"name": "ORDERS", "subjects": ["orders.>"], "max_msgs": 100, "description": "updated"},
    )
    api("account_info", "$JS.API.INFO")

    # Consumers.
    api(
        "consumer_create_pull",
        "$JS.API.CONSUMER.CREATE.ORDERS.PULL",
        {
            "stream_name": "ORDERS",
            "config": {
                "durable_name": "PULL",
                "description": "pull <c>",
                "ack_policy": "explicit",
                "deliver_policy": "all",
                "max_deliver": 5,
                "backoff": [1_000_000_000, 2_000_000_000],
                "filter_subject": "orders.*",
                "replay_policy": "instant",
                "sample_freq": "100%",
                "max_waiting": 10,
                "max_ack_pending": 20,
                "max_batch": 50,
                "max_expires": 30_000_000_000,
                "max_bytes": 1 << 20,
                "inactive_threshold": 60_000_000_000,
                "metadata": {"k": "v"},
            },
            "action": "create",
        },
    )
    api(
        "consumer_create_push_ephemeral",
        "$JS.API.CONSUMER.CREATE.ORDERS",
        {
            "stream_name": "ORDERS",
            "config": {
                "deliver_subject": "push.deliver",
                "deliver_policy": "by_start_time",
                "opt_start_time": "2020-01-02T03:04:05.000000006Z",
                "ack_policy": "none",
                "idle_heartbeat": 5_000_000_000,
                "flow_control": True,
                "headers_only": True,
                "num_replicas": 1,
                "mem_storage": True,
                "rate_limit_bps": 1000000,
            },
        },
    )
    api(
        "consumer_create_durable_legacy",
        "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.LEGACY",
        {
            "stream_name": "ORDERS",
            "config": {
                "durable_name": "LEGACY",
                "deliver_policy": "by_start_sequence",
                "opt_start_seq": 2,
                "ack_policy": "all",
                "replay_policy": "original",
            },
        },
    )
    api(
        "consumer_create_filtered",
        "$JS.API.CONSUMER.CREATE.ORDERS.FILT.orders.a",
        {
            "stream_name": "ORDERS",
            "config": {
                "name": "FILT",
                "filter_subject": "orders.a",
                "ack_policy": "explicit",
                "deliver_policy": "last_per_subject",
            },
        },
    )
    api("err_consumer_not_found", "$JS.API.CONSUMER.INFO.ORDERS.NOPE")
    api(
        "err_consumer_durable_mismatch",
        "$JS.API.CONSUMER.CREATE.ORDERS.A",
        {"stream_name": "ORDERS", "config": {"durable_name": "B", "ack_policy": "explicit"}},
    )
    api(
        "err_consumer_invalid_policy",
        "$JS.API.CONSUMER.CREATE.ORDERS.BAD",
        {
            "stream_name": "ORDERS",
            "config": {"deliver_policy": "by_start_sequence", "ack_policy": "explicit"},
        },
    )

    # Pull a few messages to capture ack reply subjects and statuses.
    inbox = "_INBOX.pull"
    c.sub(inbox)
    c.pub("$JS.API.CONSUMER.MSG.NEXT.ORDERS.PULL", b'{"batch":3,"expires":2000000000}', inbox)
    delivered = [c.read_msg() for _ in range(3)]
    for i, m in enumerate(delivered):
        save_msg(f"pull_delivery_{i}", m)
    c.pub(delivered[0]["reply"], b"+ACK", "")
    c.pub(delivered[1]["reply"], b'-NAK {"delay": 1000000000}', "")
    c.pub(delivered[2]["reply"], b"+TERM", "")
    ack_inbox = c.request(delivered[0]["reply"], b"+ACK")  # double ack reply (empty)
    save_msg("ack_sync_reply", ack_inbox)
    c.pub("$JS.API.CONSUMER.MSG.NEXT.ORDERS.LEGACY", b'{"batch":1,"no_wait":true}', inbox)
    save_msg("pull_first_legacy", c.read_msg())
    # Drain LEGACY (ack all) to get a no-wait 404.
    for _ in range(10):
        c.pub("$JS.API.CONSUMER.MSG.NEXT.ORDERS.LEGACY", b'{"batch":10,"no_wait":true}', inbox)
        m = c.read_msg()
        if m["headers"].startswith("NATS/1.0 4"):
            save_msg(f"pull_status_{m['headers'][9:12]}_{_}", m)
            break
        if m["reply"]:
            c.pub(m["reply"], b"+ACK")
    c.pub("$JS.API.CONSUMER.MSG.NEXT.ORDERS.FILT", b'{"batch":5,"expires":300000000}', inbox)
    while True:
        m = c.read_msg()
        if m["headers"].startswith("NATS/1.0 408"):
            save_msg("pull_status_408_expired", m)
            break
    c.pub(
        "$JS.API.CONSUMER.MSG.NEXT.ORDERS.PULL",
        b'{"batch":1,"expires":100000000,"idle_heartbeat":100000000}',
        inbox,
    )
    save_msg("pull_status_400_heartbeat", c.read_msg())

    api("consumer_info_pull", "$JS.API.CONSUMER.INFO.ORDERS.PULL")
    api("consumer_info_legacy", "$JS.API.CONSUMER.INFO.ORDERS.LEGACY")
    api("consumer_names", "$JS.API.CONSUMER.NAMES.ORDERS")
    api("consumer_list", "$JS.API.CONSUMER.LIST.ORDERS")
    api("consumer_names_empty", "$JS.API.CONSUMER.NAMES.FULL")
    api("consumer_delete", "$JS.API.CONSUMER.DELETE.ORDERS.FILT")
    api("stream_purge_filter_keep", "$JS.API.STREAM.PURGE.ORDERS", {"filter": "orders.a", "keep": 1})
    api("stream_purge", "$JS.API.STREAM.PURGE.ORDERS")
    api("stream_info_purged", "$JS.API.STREAM.INFO.ORDERS")
    api("stream_delete", "$JS.API.STREAM.DELETE.SRC")
    api("err_not_empty_request", "$JS.API.STREAM.DELETE.MIRROR", {"x": 1})

    # Advisories seen meanwhile (one sample per type).
    c.request("$JS.API.INFO")  # round-trip so the event connection has time to receive
    events.sock.sendall(b"PING\r\n")
    seen: dict[str, dict] = {}
    try:
        while True:
            m = events.read_msg(timeout=1.0)
            doc = json.loads(m["payload"])
            key = doc.get("type", "?").rsplit(".", 1)[-1]
            if doc.get("type", "").endswith("api_audit"):
                continue
            seen.setdefault(f"{key}__{m['subject'].split('.')[4]}", dict(m, payload=m["payload"].decode()))
    except TimeoutError:
        pass
    for name, m in seen.items():
        (DATA / f"advisory_{name}.msg.json").write_text(json.dumps(m, indent=1) + "\n")

    (DATA / "MANIFEST.json").write_text(
        json.dumps({"server_version": version, "requests": samples}, indent=1, sort_keys=True) + "\n"
    )
    print(f"captured {len(list(DATA.glob('*')))} files from nats-server {version}")


if __name__ == "__main__":
    os.chdir(Path(__file__).parent)
    main()
