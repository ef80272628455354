"""Restoring the snapshots nats-server ≤ 2.14 streamed: an S2-compressed tar of its file store.

The tar holds the stream's directory as nats-server's file store writes it: ``meta.inf`` (the
stream config with ``Created``), ``msgs/<n>.blk`` (message blocks), ``msgs/index.db`` (not needed
here) and, per consumer, ``obs/<name>/meta.inf`` (its config) and ``obs/<name>/o.dat`` (its state).
A block is a run of records — ``rl`` (uint32 LE, bit 31: has headers), ``seq`` (uint64 LE, bit 63:
erased, bit 62: tombstone), ``ts`` (int64 LE), subject length (uint16 LE), subject, [header length
(uint32 LE), headers], data, 8-byte hash — as in filestore.go (``msgFromBufEx``). ``o.dat`` is
``encodeConsumerState``: magic 22, version, then varints (``decodeConsumerState``). Compressed or
encrypted blocks are not supported (refused as "unexpected content", as nats-server refuses what it
cannot read). Restores as nats-server's ``RestoreStream``: the request's config is the stream's
new identity; the names must match.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import tarfile
from collections.abc import Callable
from typing import Any

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.api.ttl import message_ttl
from pyjetstream.server.jetstream.store.base import ConsumerState, SequencePair

HBIT = 1 << 31
EBIT = 1 << 63
TBIT = 1 << 62
MSG_HDR_SIZE = 22
HASH_SIZE = 8
CONSUMER_MAGIC = 22
_BLOCK = re.compile(r"^msgs/(\d+)\.blk$")
_CONSUMER = re.compile(r"^obs/([^/]+)/(meta\.inf|o\.dat)$")


def _error(text: str) -> JetStreamApiError:
    return JetStreamApiError(E.JSStreamRestoreErrF(err=text))


def _unexpected() -> JetStreamApiError:
    return _error("unexpected content (account=$G)")


def read_block(buf: bytes) -> tuple[list[tuple[int, str, bytes, bytes, int]], int]:
    """The live messages of a block ``(seq, subject, headers, data, ts)`` and its highest sequence
    (deleted and tombstone records included)."""
    msgs = []
    highest = 0
    pos = 0
    n = len(buf)
    while pos + MSG_HDR_SIZE + HASH_SIZE <= n:
        rl = int.from_bytes(buf[pos : pos + 4], "little")
        has_headers = bool(rl & HBIT)
        rl &= ~HBIT
        if rl < MSG_HDR_SIZE + HASH_SIZE or pos + rl > n:
            break  # a torn tail or padding
        seq = int.from_bytes(buf[pos + 4 : pos + 12], "little")
        ts = int.from_bytes(buf[pos + 12 : pos + 20], "little", signed=True)
        slen = int.from_bytes(buf[pos + 20 : pos + 22], "little")
        data = buf[pos + MSG_HDR_SIZE : pos + rl - HASH_SIZE]
        pos += rl
        real = seq & ~(EBIT | TBIT)
        highest = max(highest, real)
        if seq & (EBIT | TBIT) or real == 0:
            continue
        subject = data[:slen].decode(errors="replace")
        rest = data[slen:]
        hdr = b""
        if has_headers:
            hlen = int.from_bytes(rest[:4], "little")
            hdr, rest = rest[4 : 4 + hlen], rest[4 + hlen :]
        msgs.append((real, subject, hdr, rest, ts))
    return msgs, highest


def decode_consumer_state(buf: bytes) -> ConsumerState:
    """``decodeConsumerState`` (versions 1 and 2)."""
    if len(buf) < 2 or buf[0] != CONSUMER_MAGIC or buf[1] not in (1, 2):
        raise ValueError("corrupt consumer state")
    version = buf[1]
    pos = 2

    def uvarint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(buf):
                raise ValueError("corrupt consumer state")
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def varint() -> int:
        raw = uvarint()
        return (raw >> 1) ^ -(raw & 1)

    afc, afs, dc, ds = uvarint(), uvarint(), uvarint(), uvarint()
    if version == 1:
        if afc > 1:
            dc += afc - 1
        if afs > 1:
            ds += afs - 1
    pending: dict[int, tuple[int, int]] = {}
    num_pending = uvarint() if pos < len(buf) else 0
    if num_pending:
        mints = varint()
        for _ in range(num_pending):
            sseq = uvarint() + afs
            dseq = uvarint() + afc if version == 2 else 0
            ts = varint()
            ts = (ts + mints) * 1_000_000_000 if version == 1 else (mints - ts) * 1_000_000_000
            pending[sseq] = (dseq, ts)
    redelivered: dict[int, int] = {}
    num_redelivered = uvarint() if pos < len(buf) else 0
    for _ in range(num_redelivered):
        seq, count = uvarint(), uvarint()
        if seq > 0 and count > 0:
            redelivered[seq + afs] = count
    return ConsumerState(SequencePair(dc, ds), SequencePair(afc, afs), pending, redelivered)


RestoredConsumers = list[tuple[str, ConsumerConfig | None, ConsumerState]]


def restore_tar(cfg: StreamConfig, raw: bytes) -> tuple[Callable[[Any], None], RestoredConsumers]:
    """The pre-2.12 tar snapshot read back: a ``fill(store)`` that writes its messages (gaps kept) and
    its consumers; `snapshot.restore_stream` hands both to ``create_restored`` (so this module
    does not import its caller)."""
    try:
        archive = tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
    except tarfile.TarError:
        raise _unexpected() from None
    meta: bytes | None = None
    blocks: list[tuple[int, bytes]] = []
    consumer_files: dict[str, dict[str, bytes]] = {}
    with archive:
        try:
            members = archive.getmembers()
        except tarfile.TarError:
            raise _unexpected() from None
        for member in members:
            if not member.isreg():
                raise _unexpected()
            name = posixpath.normpath(member.name)
            if name.startswith(("/", "..")):
                raise _unexpected()
            reader = archive.extractfile(member)
            data = reader.read() if reader is not None else b""
            if name == "meta.inf":
                meta = data
            elif match := _BLOCK.match(name):
                blocks.append((int(match.group(1)), data))
            elif match := _CONSUMER.match(name):
                consumer_files.setdefault(match.group(1), {})[match.group(2)] = data
    if meta is None:
        raise _error("open meta.inf: no such file or directory")
    try:
        stored = json.loads(meta)
    except ValueError as exc:
        raise _error(str(exc)) from None
    if not isinstance(stored, dict) or stored.get("name") != cfg.name:
        raise _error("stream names do not match")

    messages: list[tuple[int, str, bytes, bytes, int]] = []
    highest = 0
    for _, data in sorted(blocks):
        got, top = read_block(data)
        messages.extend(got)
        highest = max(highest, top)
    messages.sort()

    consumers: RestoredConsumers = []
    for name, files in sorted(consumer_files.items()):
        if "meta.inf" not in files:
            raise _error(f'error restoring consumer ["{name}"]: missing meta.inf')
        try:
            ccfg = codec.decode(files["meta.inf"], ConsumerConfig)
            state = decode_consumer_state(files["o.dat"]) if "o.dat" in files else ConsumerState()
        except (ValueError, Exception) as exc:
            raise _error(f'error restoring consumer ["{name}"]: {exc}') from None
        consumers.append((name, ccfg, state))

    def fill(store: Any) -> None:
        first = messages[0][0] if messages else highest + 1
        if first > 1:
            store.compact(first)
        lseq = first - 1
        for seq, subject, hdr, data, ts in messages:
            if seq <= lseq:
                continue
            if seq - lseq - 1 > 0:
                store.skip_msgs(lseq + 1, seq - lseq - 1)
            store.store_msg(subject, hdr, data, ts, message_ttl(hdr) or 0)
            lseq = seq
        if lseq < highest:
            store.skip_msgs(lseq + 1, highest - lseq)

    return fill, consumers
