"""Raw-socket NATS for the scale and shape benchmarks: so the server, not the client, is the bottleneck.

A :class:`RawConn` is a blocking socket with a reader thread. In ``count`` mode the reader only counts
frames (``bytes.count`` of ``"\\nMSG "`` / ``"\\nHMSG "`` over each read, C speed: every frame after the
handshake follows the previous frame's CRLF), PONGs and ``-ERR`` lines, and answers the server's PINGs;
in ``walk`` mode it counts the same things by walking the frames, jumping over each payload by its size
(O(frames), not O(bytes): for large payloads, where ``count``'s passes over every byte made the client,
not the server, the bottleneck — 9 passes cost ~65 µs per 16 KiB message); in ``frames`` mode it parses every frame (subject, sid, reply, header block, payload) and hands a read's
frames to a callback, or keeps them for :meth:`RawConn.request` — slower, for API calls, responders and
acks. :class:`Servers` starts the embedded server and nats-server 2.15.1 side by side (the test targets'
way: a config file, a random port) and reads a server's CPU and resident memory from ``/proc``.

Used by ``bench_scale.py`` and ``bench_shapes.py``; not part of the test suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

__all__ = ["EMBEDDED", "NATS_SERVER", "Frame", "RawConn", "Target"]  # and the functions below
KINDS = (EMBEDDED, NATS_SERVER)
CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
HANDSHAKE_TIMEOUT = 60.0  # seconds for INFO and the PONG of a new connection
_TAIL = 9  # the longest counted pattern ("NATS/1.0 "): one split across two reads is counted once


@dataclass(slots=True)
class Frame:
    subject: str
    sid: str
    reply: str
    headers: bytes
    payload: bytes


class RawConn:
    """One NATS connection over a blocking socket, read by a daemon thread (see the module doc)."""

    COND = threading.Condition()

    def __init__(
        self,
        port: int,
        mode: str = "count",
        on_frames: Callable[[RawConn, list[Frame]], None] | None = None,
        on_count: Callable[[RawConn, int], None] | None = None,
        on_data: Callable[[RawConn, bytes], None] | None = None,
        user: str = "",
        password: str = "",
    ) -> None:
        self.mode = mode  # "count", "walk" or "frames"
        self.on_frames = on_frames
        self.on_count = on_count  # count mode: called with the number of new MSG/HMSG frames of a read
        #                           (after the counters include them)
        self.on_data = on_data  # count mode: called with each read (after counting it)
        # The handshake times out (TimeoutError: the operation's figure becomes an error) rather than
        # waiting forever: a connect + close at 1,000 connections once got INFO but never a PONG.
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=HANDSHAKE_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while b"\r\n" not in buf:
            buf += self._recv()
        connect = CONNECT
        if user:  # a configured account's user (bench dims with accounts: no_auth_user is another)
            auth = json.dumps({"user": user, "pass": password})[1:-1].encode()
            connect = CONNECT.replace(b'"protocol":1', b'"protocol":1,' + auth)
        self.sock.sendall(connect + b"PING\r\n")
        while b"PONG\r\n" not in buf:
            buf += self._recv()
        self.sock.settimeout(None)
        self.msgs = 0  # MSG frames
        self.hmsgs = 0  # HMSG frames
        self.pongs = 0
        self.errors: list[str] = []
        self.received = 0  # bytes
        self.json_errors = 0  # count mode: '"error"' seen in a read (a PubAck or API error)
        self.statuses = 0  # count mode: header blocks with a status (heartbeats, flow control, 404/408/409)
        self.closed = False
        self._cond = RawConn.COND  # shared: a wait on one connection may depend on others' counts
        self._send_lock = threading.Lock()
        self._replies: dict[str, Frame] = {}
        self._inbox = f"_RAW.{id(self):x}"
        self._next = 0
        self._inbox_sid = ""
        self._skip = 0  # walk mode: payload bytes (+ CRLF) of the current frame still to come
        self._partial = b""  # walk mode: an unfinished control line (or HMSG line + header block)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _recv(self) -> bytes:
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("server closed the connection")
        return data

    # ------------------------------------------------------------------ writing

    def send(self, data: bytes) -> None:
        with self._send_lock:
            self.sock.sendall(data)

    def sub(self, subject: str, sid: int | str, queue: str = "") -> None:
        self.send(f"SUB {subject} {queue + ' ' if queue else ''}{sid}\r\n".encode())

    def pub(self, subject: str, payload: bytes = b"", reply: str = "", headers: bytes = b"") -> None:
        self.send(pub_frame(subject, payload, reply, headers))

    def flush(self, timeout: float = 120.0) -> None:
        """PING and wait for its PONG: the server has read everything sent before."""
        with self._cond:
            want = self.pongs + 1
        self.send(b"PING\r\n")
        self.wait(lambda: self.pongs >= want, timeout, "PONG")

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    # ------------------------------------------------------------------ waiting

    def wait(self, cond: Callable[[], bool], timeout: float = 120.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not cond():
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise TimeoutError(
                        f"{what} not reached in {timeout:.0f} s (msgs={self.msgs} hmsgs={self.hmsgs} "
                        f"errors={self.errors[:3]})"
                    )
                self._cond.wait(min(left, 0.5))

    @property
    def deliveries(self) -> int:
        """Messages received, status-only frames (heartbeats, flow control, 404/408/409) left out."""
        return self.msgs + self.hmsgs - self.statuses

    def wait_msgs(self, n: int, timeout: float = 120.0) -> None:
        self.wait(lambda: self.msgs >= n, timeout, f"{n} MSG frames")

    # ------------------------------------------------------------------ requests (frames mode)

    def request(
        self, subject: str, payload: bytes | dict[str, Any] = b"", timeout: float = 60.0, headers: bytes = b""
    ) -> Frame:
        return self.requests([(subject, payload)], timeout, headers)[0]

    def requests(
        self,
        calls: Sequence[tuple[str, bytes | dict[str, Any]]],
        timeout: float = 120.0,
        headers: bytes = b"",
        window: int = 500,
    ) -> list[Frame]:
        """Pipelined requests, at most ``window`` unanswered; the replies in order."""
        assert self.mode == "frames"
        if not self._inbox_sid:
            self._inbox_sid = "999999"
            self.sub(self._inbox + ".*", self._inbox_sid)
        out: list[Frame] = []
        pending: list[str] = []
        i = 0
        while i < len(calls) or pending:
            parts = []
            while i < len(calls) and len(pending) < window:
                subject, payload = calls[i]
                body = json.dumps(payload).encode() if isinstance(payload, dict) else payload
                self._next += 1
                reply = f"{self._inbox}.{self._next}"
                pending.append(reply)
                parts.append(pub_frame(subject, body, reply, headers))
                i += 1
            if parts:
                self.send(b"".join(parts))
            head = pending[0]
            self.wait(lambda: head in self._replies, timeout, f"reply to {calls[len(out)][0]}")  # noqa: B023
            with self._cond:
                while pending and pending[0] in self._replies:
                    out.append(self._replies.pop(pending.pop(0)))
        return out

    def api(
        self, subject: str, body: dict[str, Any] | None = None, timeout: float = 60.0, check: bool = True
    ) -> dict[str, Any]:
        """A ``$JS.API.<subject>`` request with a JSON body; the JSON answer (SystemExit on an error
        answer when ``check``)."""
        frame = self.request(f"$JS.API.{subject}", json.dumps(body or {}).encode(), timeout)
        answer: dict[str, Any] = json.loads(frame.payload)
        if check and "error" in answer:
            raise SystemExit(f"$JS.API.{subject} failed: {answer['error']}")
        return answer

    # ------------------------------------------------------------------ reading

    def _read_loop(self) -> None:
        tail = b""
        buf = bytearray()
        try:
            while True:
                data = self.sock.recv(1 << 20)
                if not data:
                    break
                if self.mode == "walk":
                    self._walk(data)
                elif self.mode == "count":
                    tail = self._count(tail, data)
                    if self.on_data is not None:
                        self.on_data(self, data)
                else:
                    buf += data
                    self._parse(buf)
        except OSError:
            pass
        finally:
            self.closed = True
            with self._cond:
                self._cond.notify_all()

    def _count(self, tail: bytes, data: bytes) -> bytes:
        both = tail + data
        pings = both.count(b"PING\r\n") - tail.count(b"PING\r\n")
        if pings:
            self.send(b"PONG\r\n" * pings)
        new = both.count(b"\nMSG ") - tail.count(b"\nMSG ") + both.count(b"\nHMSG ") - tail.count(b"\nHMSG ")
        with self._cond:
            self.msgs += both.count(b"\nMSG ") - tail.count(b"\nMSG ")
            self.hmsgs += both.count(b"\nHMSG ") - tail.count(b"\nHMSG ")
            self.json_errors += both.count(b'"error"') - tail.count(b'"error"')
            self.statuses += both.count(b"NATS/1.0 ") - tail.count(b"NATS/1.0 ")
            self.pongs += both.count(b"PONG\r\n") - tail.count(b"PONG\r\n")
            if b"-ERR" in both:
                self.errors.append(both[both.index(b"-ERR") :][:120].decode(errors="replace"))
            self.received += len(data)
            self._cond.notify_all()
        if new and self.on_count is not None:
            self.on_count(self, new)
        return both[-_TAIL:]

    def _walk(self, data: bytes) -> None:
        """Count mode's counts, frame by frame: each payload is skipped by its size, never scanned
        (``json_errors`` is not counted: no payload is read)."""
        got = len(data)
        if self._partial:
            data = self._partial + data
            self._partial = b""
        skip, pos, end = self._skip, 0, len(data)
        msgs = hmsgs = statuses = pongs = pings = 0
        while True:
            if skip:
                if skip >= end - pos:
                    skip -= end - pos
                    break
                pos, skip = pos + skip, 0
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                self._partial = data[pos:]
                break
            head = data[pos : pos + 4]
            if head == b"MSG ":
                msgs += 1
                skip = int(data[data.rfind(b" ", pos, eol) + 1 : eol]) + 2
            elif head == b"HMSG":
                parts = data[pos:eol].split(b" ")
                hdr = int(parts[-2])
                if eol + 2 + hdr > end:  # the header block is still coming: read it whole
                    self._partial = data[pos:]
                    break
                hmsgs += 1
                statuses += data.startswith(b"NATS/1.0 ", eol + 2)
                skip = int(parts[-1]) + 2
            elif head == b"PING":
                pings += 1
            elif head == b"PONG":
                pongs += 1
            elif head == b"-ERR":
                self.errors.append(data[pos:eol].decode(errors="replace"))
            pos = eol + 2
        self._skip = skip
        if pings:
            self.send(b"PONG\r\n" * pings)
        with self._cond:
            self.msgs += msgs
            self.hmsgs += hmsgs
            self.statuses += statuses
            self.pongs += pongs
            self.received += got
            self._cond.notify_all()
        if msgs + hmsgs and self.on_count is not None:
            self.on_count(self, msgs + hmsgs)

    def _parse(self, buf: bytearray) -> None:
        frames: list[Frame] = []
        pos = 0
        pongs = 0
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            line = bytes(buf[pos:eol])
            if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                parts = line.decode().split(" ")
                if parts[0] == "MSG":
                    hdr, size = 0, int(parts[-1])
                    reply = parts[3] if len(parts) == 5 else ""
                else:
                    hdr, size = int(parts[-2]), int(parts[-1])
                    reply = parts[3] if len(parts) == 6 else ""
                end = eol + 2 + size
                if len(buf) < end + 2:
                    break
                body = bytes(buf[eol + 2 : end])
                frames.append(Frame(parts[1], parts[2], reply, body[:hdr], body[hdr:]))
                pos = end + 2
                continue
            if line == b"PING":
                self.send(b"PONG\r\n")
            elif line == b"PONG":
                pongs += 1
            elif line.startswith(b"-ERR"):
                self.errors.append(line.decode(errors="replace"))
            pos = eol + 2
        del buf[:pos]
        if self.on_frames is not None and frames:
            self.on_frames(self, frames)
        with self._cond:
            self.pongs += pongs
            for f in frames:
                if f.headers:
                    self.hmsgs += 1
                else:
                    self.msgs += 1
                if f.subject.startswith(self._inbox):
                    self._replies[f.subject] = f
            self._cond.notify_all()


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    """Wait until ``cond()`` (re-checked whenever a connection reads): whether it held in time."""
    deadline = time.monotonic() + timeout
    with RawConn.COND:
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            RawConn.COND.wait(min(left, 0.5))
    return True


class ManyConns:
    """``k`` connections read by one thread (a selector), for a benchmark of many connections:
    counts the MSG frames they receive in all, answers PINGs."""

    def __init__(self, port: int, k: int) -> None:
        self.socks: list[socket.socket] = []
        for _ in range(k):
            sock = socket.create_connection(("127.0.0.1", port), timeout=HANDSHAKE_TIMEOUT)
            buf = b""
            while b"\r\n" not in buf:
                buf += sock.recv(4096)
            sock.sendall(CONNECT + b"PING\r\n")
            while b"PONG\r\n" not in buf:
                buf += sock.recv(4096)
            sock.settimeout(None)
            self.socks.append(sock)
        self.msgs = 0
        self.pongs = 0
        self.closed = False
        self._tails = {s.fileno(): b"" for s in self.socks}
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def send(self, i: int, data: bytes) -> None:
        self.socks[i].sendall(data)

    def _read_loop(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        for s in self.socks:
            sel.register(s, selectors.EVENT_READ)
        while not self.closed:
            for key, _ in sel.select(0.5):
                sock = key.fileobj
                if not isinstance(sock, socket.socket):
                    continue
                try:
                    data = sock.recv(1 << 20)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(sock)
                    continue
                tail = self._tails[key.fd]
                both = tail + data
                pings = both.count(b"PING\r\n") - tail.count(b"PING\r\n")
                if pings:
                    sock.sendall(b"PONG\r\n" * pings)
                with RawConn.COND:
                    self.msgs += both.count(b"\nMSG ") - tail.count(b"\nMSG ")
                    self.pongs += both.count(b"PONG\r\n") - tail.count(b"PONG\r\n")
                    RawConn.COND.notify_all()
                self._tails[key.fd] = both[-_TAIL:]

    def flush(self, timeout: float = 120.0) -> None:
        want = self.pongs + len(self.socks)
        for sock in self.socks:
            sock.sendall(b"PING\r\n")
        if not wait_for(lambda: self.pongs >= want, timeout):
            raise TimeoutError("PONGs of many connections")

    def close(self) -> None:
        self.closed = True
        for sock in self.socks:
            with contextlib.suppress(OSError):
                sock.close()


def pub_frame(subject: str, payload: bytes = b"", reply: str = "", headers: bytes = b"") -> bytes:
    r = f" {reply}" if reply else ""
    if headers:
        return (
            f"HPUB {subject}{r} {len(headers)} {len(headers) + len(payload)}\r\n".encode()
            + headers
            + payload
            + b"\r\n"
        )
    return f"PUB {subject}{r} {len(payload)}\r\n".encode() + payload + b"\r\n"


def header_block(**headers: str) -> bytes:
    """``NATS/1.0`` block; keyword names use ``_`` for ``-`` (``Nats_Msg_Id`` → ``Nats-Msg-Id``)."""
    lines = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    return f"NATS/1.0\r\n{lines}\r\n".encode()


def status_of(frame: Frame) -> int:
    """The inline status of a header block (``NATS/1.0 404 …``), 0 if none."""
    if not frame.headers.startswith(b"NATS/1.0 "):
        return 0
    try:
        return int(frame.headers[9:12])
    except ValueError:
        return 0


def publish_window(
    conn: RawConn,
    frames: Iterator[bytes] | Sequence[bytes],
    n: int,
    window: int = 1000,
    timeout: float = 600.0,
    chunk: int = 256,
) -> None:
    """Send ``n`` publishes whose replies come back to ``conn`` (a count-mode connection subscribed to
    their reply subject), keeping at most ``window`` unanswered; waits for the last answer."""
    it = iter(frames)
    base = conn.msgs + conn.hmsgs
    sent = 0
    while sent < n:
        room = window - (sent - (conn.msgs + conn.hmsgs - base))
        if room < min(chunk, n - sent):
            need = sent - window + min(chunk, n - sent)  # answers needed before the next chunk
            conn.wait(lambda: conn.msgs + conn.hmsgs - base >= need, timeout, "PubAcks")  # noqa: B023
            continue
        take = min(room, n - sent)
        conn.send(b"".join(next(it) for _ in range(take)))
        sent += take
    conn.wait(lambda: conn.msgs + conn.hmsgs - base >= n, timeout, f"{n} PubAcks")


# ---------------------------------------------------------------------------- servers


def process_cpu(pid: int) -> float:
    """A process's CPU seconds so far, user + system, of all its threads (exited ones too), to the
    nanosecond: the process's CPU-time clock (``clock_getcpuclockid(pid)``: Linux names it
    ``((~pid) << 3) | CPUCLOCK_SCHED``), the ``sum_exec_runtime`` that ``/proc/<pid>/stat``'s utime and
    stime are cut from. Why not those: each is truncated to a 10 ms tick, so a figure of 7-14 ticks (a
    restart of nats-server) carried up to 20 ms of rounding. ``/proc/<pid>/stat`` where the clock
    cannot be read."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2) / 1e9
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(target: Target) -> float:
    """The server process's CPU seconds so far (`process_cpu`)."""
    return process_cpu(target.process.pid)  # type: ignore[union-attr]


def server_rss_mib(target: Target) -> float:
    """The server process's resident memory (VmRSS) in MiB (0 when it is not running: a restart
    that failed, whose error the operation's figure gives)."""
    if target.process is None:
        return 0.0
    for line in Path(f"/proc/{target.process.pid}/status").read_text().splitlines():  # type: ignore[union-attr]
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def disk_mib(path: Path) -> float:
    """The bytes of the files under ``path``, in MiB. A server may remove files meanwhile (nats-server
    removes a purged stream's blocks after answering): a file or folder gone during the walk counts 0."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(root, name)).st_size
    return total / (1 << 20)


@contextmanager
def servers(
    kinds: Sequence[str] = KINDS, workdir: Path | None = None, **settings: Any
) -> Iterator[dict[str, Target]]:
    """Both servers (or ``kinds``), fresh, in a temporary directory removed afterwards."""
    root = workdir or Path(tempfile.mkdtemp(prefix="bench-raw-"))
    started: dict[str, Target] = {}
    try:
        for kind in kinds:
            started[kind] = make_target(kind, root / kind, **settings)
        yield started
    finally:
        for target in started.values():
            target.stop()
        shutil.rmtree(root, ignore_errors=True)


def stop_on_signals() -> None:
    """SIGTERM (and SIGINT, even when inherited ignored, as ``nohup … &`` does) end the benchmark through
    KeyboardInterrupt, so that its ``finally`` blocks stop the servers it started."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
