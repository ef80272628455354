"""Damage a stream's files the same way on both servers and report what each serves and says.

    .venv/bin/python scripts/damage_matrix.py [--kind embedded|nats-server|both] [--cases a,b]

Each case: a fresh server (a real process), 2,000 messages of 24 bytes on one subject (one block
on both servers), a clean stop (SIGTERM) or ``kill -9``, the damage done to the files while the
server is down, a restart; then every sequence is read with a direct get (STREAM.MSG.GET), and
the stream info asked again. A row: what was served, how many of those carried a wrong payload,
what the state says (messages, first..last, ``lost`` count and whether it lists exactly the
sequences the damage overlapped), and how the rest of the files fared. The figures are what
docs/compatibility.md's "What survives what" table reports.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.js.api import ConsumerConfig
from nats.js.errors import NotFoundError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

N = 2000
SUBJECT = "d.x"


def payload(seq: int) -> bytes:
    return b"p%05d-" % seq + bytes([seq % 251]) * 17


@dataclass(frozen=True)
class Layout:
    """Where a server's records lie in its first block file."""

    header: int  # bytes before the first record
    rec: int  # bytes per record (all equal here)

    def at(self, seq: int) -> int:
        return self.header + (seq - 1) * self.rec

    def hit(self, lo: int, hi: int) -> set[int]:
        return {q for q in range(1, N + 1) if self.at(q) < hi and lo < self.at(q) + self.rec}


# Ours: a 20-byte block header, records of 31 + subject + payload; nats-server 2.15.1: no block
# header, records of 22 + subject + payload + an 8-byte hash.
LAYOUTS = {EMBEDDED: Layout(20, 31 + 3 + 24), NATS_SERVER: Layout(0, 22 + 3 + 24 + 8)}

CASES = [
    "flip-first-record/clean",
    "flip-first-record/kill9",
    "flip-middle/clean",
    "flip-middle/kill9",
    "flip-last-record/clean",
    "flip-last-record/kill9",
    "cut-60%/clean",
    "cut-60%/kill9",
    "cut-10%/clean",
    "index-missing/clean",
    "index-garbage/clean",
    "consumer-state-garbage/clean",
    "stream-meta-garbage/clean",
]


def stream_dir(t: Target, name: str = "D") -> Path:
    return t.store_dir / "jetstream" / "$G" / "streams" / name


async def fill(t: Target) -> None:
    nc = await nats.connect(t.url)
    js = nc.jetstream(timeout=10)
    await js.add_stream(name="D", subjects=[SUBJECT])
    await js.add_stream(name="OTHER", subjects=["other"])
    await js.publish("other", b"kept")
    for seq in range(1, N + 1):
        await nc.publish(SUBJECT, payload(seq))
    await nc.flush()
    for _ in range(400):
        if (await js.stream_info("D")).state.messages == N:
            break
        await asyncio.sleep(0.05)
    await js.add_consumer("D", ConsumerConfig(durable_name="C", ack_wait=30))
    psub = await js.pull_subscribe_bind("C", "D")
    for m in await psub.fetch(10, timeout=10):
        await m.ack_sync()
    await nc.close()


def damage(t: Target, what: str) -> set[int]:
    """Damage the files; return the message sequences whose record the damage overlaps."""
    lay = LAYOUTS[t.kind]
    msgs = stream_dir(t) / "msgs"
    blk = msgs / "1.blk"
    if what.startswith("flip-"):
        data = bytearray(blk.read_bytes())
        at = {"flip-first-record": lay.at(1), "flip-middle": lay.at(N // 2) + 20, "flip-last-record": len(data) - 64}[
            what
        ]
        for k in range(at, at + 64):
            data[k] ^= 0xFF
        blk.write_bytes(bytes(data))
        return lay.hit(at, at + 64)
    if what.startswith("cut-"):
        size = blk.stat().st_size
        at = int(size * int(what[4:-1]) / 100)
        os.truncate(blk, at)
        return lay.hit(at, size)
    if what.startswith("index-"):
        idx = msgs / "index.db"
        if what == "index-missing":
            idx.unlink(missing_ok=True)
        else:
            idx.write_bytes(os.urandom(max(idx.stat().st_size, 64)))
        return set()
    if what == "consumer-state-garbage":
        for p in (stream_dir(t) / "obs" / "C").iterdir():
            if p.name.startswith("o.dat"):
                p.write_bytes(b"\x00garbage\xff" * 5)
        return set()
    if what == "stream-meta-garbage":
        (stream_dir(t) / "meta.inf").write_bytes(b"{garbage" + os.urandom(32))
        return set()
    raise ValueError(what)


async def observe(t: Target, expect: set[int], what: str) -> str:
    nc = await nats.connect(t.url)
    js = nc.jetstream(timeout=10)
    try:
        names = [s.config.name for s in await js.streams_info()]
        if "D" not in names:
            return f"stream D not served (streams: {names}); OTHER served: {'OTHER' in names}"
        before = (await js.stream_info("D")).state

        async def one(seq: int) -> tuple[int, bool | None]:
            try:
                msg = await js.get_msg("D", seq)
            except NotFoundError:
                return seq, None
            except Exception:
                return seq, None
            return seq, msg.data == payload(seq)

        served: dict[int, bool] = {}
        for lo in range(1, N + 1, 250):
            for seq, ok in await asyncio.gather(*(one(q) for q in range(lo, min(lo + 250, N + 1)))):
                if ok is not None:
                    served[seq] = ok
        st = (await js.stream_info("D")).state
        lost = set(st.lost.msgs) if st.lost is not None and st.lost.msgs else set()
        wrong = sum(1 for ok in served.values() if not ok)
        exact = "exact" if lost == expect else f"expected {len(expect)}"
        row = (
            f"served {len(served)}, wrong {wrong}; state before reads {before.messages}, after {st.messages}"
            f" ({st.first_seq}..{st.last_seq}); lost {len(lost)} listed ({exact}), "
            f"{st.lost.bytes if st.lost is not None else 0} bytes"
        )
        if what == "consumer-state-garbage":
            info = await js.consumer_info("D", "C")
            row += f"; consumer C: pending {info.num_pending}, ack floor {info.ack_floor.stream_seq}"
        if what == "stream-meta-garbage":
            row += f"; streams {names}"
        return row
    finally:
        await nc.close()


async def run_case(kind: str, case: str, work: Path) -> str:
    what, stop = case.split("/")
    t = make_target(kind, work / f"{kind}-{what}-{stop}")
    try:
        await fill(t)
        t.stop() if stop == "clean" else t.kill()
        expect = damage(t, what)
        t.start()
        try:
            return await observe(t, expect, what)
        except Exception as exc:
            return f"error: {exc!r}"
    finally:
        t.stop()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="both", choices=[EMBEDDED, NATS_SERVER, "both"])
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    kinds = [EMBEDDED, NATS_SERVER] if args.kind == "both" else [args.kind]
    with tempfile.TemporaryDirectory(prefix="damage-") as tmp:
        for case in args.cases.split(","):
            for kind in kinds:
                print(f"{case:32} {kind:12} {await run_case(kind, case, Path(tmp))}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
