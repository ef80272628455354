"""``$JS.API.STREAM.SNAPSHOT.<stream>`` and ``$JS.API.STREAM.RESTORE.<stream>`` (2.15: the v2 archive).

Snapshot (nats-server ``jsStreamSnapshotRequest``, ``streamSnapshot``, ``CreateStreamSnapshotV2``):
the reply carries the stream's config and state, then the S2-compressed ``NATSARC1`` archive
(`pyjetstream.api.snapshot`) goes to ``deliver_subject`` in chunks of ``chunk_size`` (1 KiB –
1 MiB, default 128 KiB). A full chunk has a reply subject ``$JS.SNAPSHOT.ACK.<s>.<id>.<len>.<n>``;
at most ``window_size / chunk_size`` chunks are unacknowledged (window 1 KiB – 32 MiB, default
8 MiB), and 5 s without an ack ends the snapshot with ``408 No Flow Response``. The last, shorter
chunk has no reply subject; then an empty message ends the snapshot (``204`` status once a full
chunk was sent, no header otherwise — as nats-server).

Restore (``jsStreamRestoreRequest``, ``processStreamRestore``, ``RestoreStreamV2`` /
``RestoreStream``): the request holds ``{config, state}``; the reply names the subject to send the
chunks to, each answered with an empty message; an empty chunk ends the upload and is answered with
a ``stream_create_response`` once the stream exists. Both the v2 archive and the older tar of
nats-server's file store (`pyjetstream.server.jetstream.snapshot_tar`) restore; the archive is
told apart by its magic bytes. 5 s without a chunk abandons the restore.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api import subjects as S
from pyjetstream.api.advisories import (
    RestoreCompleteAdvisory,
    RestoreCreateAdvisory,
    SnapshotCompleteAdvisory,
    SnapshotCreateAdvisory,
)
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.headers import status_block
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.models_stream import StreamConfig, StreamState
from pyjetstream.api.requests import StreamRestoreRequest, StreamSnapshotRequest
from pyjetstream.api.responses import (
    ApiResponse,
    StreamCreateResponse,
    StreamRestoreResponse,
    StreamSnapshotResponse,
)
from pyjetstream.api.snapshot import (
    ARCHIVE_MAGIC,
    CONSUMER_PREFIX,
    STATE_ENTRY,
    ArchiveError,
    SnapshotConsumerState,
    SnapshotPending,
    SnapshotSequencePair,
    SnapshotState,
    encode_entry,
    iter_entries,
)
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.api.ttl import message_ttl
from pyjetstream.protocol.subjects import is_valid_literal_subject
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.api_common import decode_request, is_empty_request
from pyjetstream.server.jetstream.api_stream import _check_overlap, _lookup_config
from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.consumer_persistence import encode_consumer_meta
from pyjetstream.server.jetstream.s2 import S2Error, compress_stream, decompress_stream
from pyjetstream.server.jetstream.store.base import (
    ConsumerState,
    ErrStoreEOF,
    SequencePair,
    StoreError,
)
from pyjetstream.server.jetstream.stream_config import check_stream_config

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.stream import Stream

DEFAULT_CHUNK = 128 * 1024
DEFAULT_WINDOW = 8 * 1024 * 1024
ACK_TIMEOUT = 5.0  # defaultSnapshotAckTimeout
INTEREST_WAIT = 2.0
RESTORE_IDLE = 5.0  # processStreamRestore's activityInterval
END_OF_SNAPSHOT = status_block((204, ""))
NO_FLOW_RESPONSE = status_block((408, "No Flow Response"))


def _new_id() -> str:
    return advisories.new_event_id()


# --- the archive ------------------------------------------------------------------------------


def consumer_entry_state(state: ConsumerState, last_seq: int) -> SnapshotState:
    """A consumer's state as the archive keeps it, bounded to the snapshot's last sequence."""
    return SnapshotState(
        delivered=SnapshotSequencePair(
            consumer_seq=state.delivered.consumer_seq, stream_seq=min(state.delivered.stream_seq, last_seq)
        ),
        ack_floor=SnapshotSequencePair(
            consumer_seq=state.ack_floor.consumer_seq, stream_seq=min(state.ack_floor.stream_seq, last_seq)
        ),
        pending={
            str(seq): SnapshotPending(Sequence=dseq, Timestamp=ts)
            for seq, (dseq, ts) in sorted(state.pending.items())
            if seq <= last_seq
        },
        redelivered={str(seq): n for seq, n in sorted(state.redelivered.items()) if seq <= last_seq},
    )


PIECE = 1 << 20  # archive bytes compressed (and the loop let go) at a time


def snapshot_state(stream: Stream) -> StreamState:
    """The state a snapshot reports (and bounds its messages by)."""
    return stream.state()


def iter_archive(stream: Stream, state: StreamState, include_consumers: bool) -> Iterator[bytes]:
    """The v2 archive in pieces (``streamSnapshotV2``): state.json, the consumers as they are now,
    every message up to ``state.last_seq``, the sentinel. Reads the store lazily."""
    consumers = [c for c in stream.consumers.values() if not c.cfg.direct] if include_consumers else []
    archived = StreamState(**{f: getattr(state, f) for f in state.__struct_fields__})
    archived.consumer_count = len(consumers)
    now = time.time_ns()
    head = [ARCHIVE_MAGIC, encode_entry(STATE_ENTRY, now, 0, b"", codec.encode(archived))]
    for consumer in consumers:
        entry = SnapshotConsumerState(
            config=consumer.cfg, state=consumer_entry_state(consumer.state.snapshot(), state.last_seq)
        )
        head.append(encode_entry(CONSUMER_PREFIX + consumer.name, now, 0, b"", codec.encode(entry)))
    yield b"".join(head)
    store = stream.store
    seq = state.first_seq
    while state.messages and seq <= state.last_seq:
        try:
            msg, seq = store.load_next_msg(">", seq)
        except ErrStoreEOF:
            break
        if msg.seq > state.last_seq:
            break
        yield encode_entry(msg.subject, msg.ts, msg.seq, msg.hdr or b"", msg.data)
        seq += 1
    yield encode_entry("", 0, 0, b"", b"")  # end-of-backup sentinel


def build_archive(stream: Stream, include_consumers: bool) -> tuple[StreamState, bytes]:
    """The whole archive at once (small streams, tests)."""
    state = snapshot_state(stream)
    return state, b"".join(iter_archive(stream, state, include_consumers))


class _Compressed:
    """The S2 stream of an archive, produced a piece at a time (framed streams concatenate)."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self.pieces = pieces
        self.buffer = bytearray()
        self.done = False

    def fill(self, want: int) -> None:
        """Compress until ``want`` bytes are ready or the archive ends; raises store errors."""
        while len(self.buffer) < want and not self.done:
            raw = bytearray()
            while len(raw) < PIECE:
                piece = next(self.pieces, None)
                if piece is None:
                    self.done = True
                    break
                raw += piece
            if raw:
                self.buffer += compress_stream(bytes(raw))

    def take(self, size: int) -> bytes:
        piece = bytes(self.buffer[:size])
        del self.buffer[:size]
        return piece


# --- STREAM.SNAPSHOT --------------------------------------------------------------------------


def stream_snapshot(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamSnapshotResponse()
    try:
        if is_empty_request(payload):
            raise JetStreamApiError(E.JSBadRequestErr())
        stream = engine.streams.get(match.stream)
        if stream is None:
            raise JetStreamApiError(E.JSStreamNotFoundErr())
        req = decode_request(payload, StreamSnapshotRequest, engine.strict)
        if not is_valid_literal_subject(req.deliver_subject):
            raise JetStreamApiError(E.JSSnapshotDeliverSubjectInvalidErr())
        state = snapshot_state(stream)
        data = _Compressed(iter_archive(stream, state, not req.no_consumers))
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    response.config = stream.cfg
    response.state = state
    start = NanoTime(time.time_ns())
    advisories.publish(
        engine, S.advisory_snapshot_create(stream.name), SnapshotCreateAdvisory(stream=stream.name, state=state)
    )
    sender = _ChunkSender(engine, stream.name, req, data, start)
    engine.server.loop.call_soon(sender.start)
    return response


class _ChunkSender:
    """Streams one snapshot's bytes with nats-server's window and ack flow control."""

    def __init__(
        self, engine: JetStreamEngine, stream: str, req: StreamSnapshotRequest, data: _Compressed, start: int
    ) -> None:
        self.engine = engine
        self.stream = stream
        self.deliver = req.deliver_subject
        chunk = req.chunk_size or DEFAULT_CHUNK
        window = getattr(req, "window_size", 0) or DEFAULT_WINDOW
        self.chunk = min(max(1024, chunk), 1024 * 1024)
        window = max(min(max(1024, window), 32 * 1024 * 1024), self.chunk)
        self.slots = window // self.chunk
        self.data = data
        self.start_ns = start
        self.acked = asyncio.Event()

    running: ClassVar[set[asyncio.Task[None]]] = set()  # the loop keeps only weak references

    def start(self) -> None:
        task = self.engine.server.loop.create_task(self.run())
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    def _on_ack(self, *_: Any) -> None:
        self.slots += 1
        self.acked.set()

    async def run(self) -> None:
        server = self.engine.server
        ack_base = S.snapshot_ack_subject(self.stream, _new_id())
        sub = server.subscribe_internal(ack_base + ".>", self._on_ack)
        error = ""
        try:
            deadline = time.monotonic() + INTEREST_WAIT
            while not server.has_interest(self.deliver) and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)  # nats-server waits up to 2 s for the receiver's interest
            hdr: bytes | None = None
            index, data, size = 1, self.data, self.chunk
            while True:
                while self.slots <= 0:
                    self.acked.clear()
                    try:
                        await asyncio.wait_for(self.acked.wait(), ACK_TIMEOUT)
                    except TimeoutError:
                        error = "no flow response"
                        hdr = NO_FLOW_RESPONSE
                        break
                if error:
                    break
                try:
                    data.fill(size)
                except (StoreError, OSError) as exc:
                    error = str(exc)
                    hdr = status_block((500, error))
                    break
                piece = data.take(size)
                if len(piece) < size:
                    if piece:
                        server.publish_internal(self.deliver, piece)
                    break
                self.slots -= 1
                server.publish_internal(self.deliver, piece, reply=f"{ack_base}.{len(piece)}.{index}")
                hdr = END_OF_SNAPSHOT
                index += 1
                await asyncio.sleep(0)  # let acks and other clients in
            server.publish_internal(self.deliver, b"", hdr=hdr)
        finally:
            sub.unsubscribe()
            advisories.publish(
                self.engine,
                S.advisory_snapshot_complete(self.stream),
                SnapshotCompleteAdvisory(
                    stream=self.stream, start=NanoTime(self.start_ns), end=NanoTime(time.time_ns())
                ),
            )
            if error:
                server.logger.warning("Snapshot for stream '$G > %s' failed: %s", self.stream, error)


# --- STREAM.RESTORE ---------------------------------------------------------------------------


def stream_restore(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamRestoreResponse()
    try:
        if is_empty_request(payload):
            raise JetStreamApiError(E.JSBadRequestErr())
        req = decode_request(payload, StreamRestoreRequest, engine.strict)
        name = match.stream
        if not req.config.name:
            req.config.name = name
        if req.config.name != name:
            raise JetStreamApiError(E.JSStreamMismatchErr())
        if "/" in name or "\\" in name:
            raise JetStreamApiError(E.JSStreamNameContainsPathSeparatorsErr())
        cfg = check_restore_config(engine, req.config)
        if name in engine.streams or name in engine.restoring:
            raise JetStreamApiError(E.JSStreamNameExistRestoreFailedErr())
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    upload = _Upload(engine, cfg)
    response.deliver_subject = upload.subject
    return response


class _Upload:
    """One restore in progress: collects the chunks, then restores when the empty one arrives."""

    def __init__(self, engine: JetStreamEngine, cfg: StreamConfig) -> None:
        self.engine = engine
        self.cfg = cfg
        self.subject = S.snapshot_restore_subject(cfg.name, _new_id())
        self.buffer = bytearray()
        self.start_ns = time.time_ns()
        self.done = False
        server = engine.server
        engine.restoring.add(cfg.name)
        self.sub = server.subscribe_internal(self.subject, self.on_chunk)
        self.timer = server.loop.call_later(RESTORE_IDLE, self._stalled)
        advisories.publish(engine, S.advisory_restore_create(cfg.name), RestoreCreateAdvisory(stream=cfg.name))

    running: ClassVar[set[asyncio.Task[None]]] = set()

    def _finish(self, keep_name: bool = False) -> None:
        self.done = True
        self.timer.cancel()
        self.sub.unsubscribe()
        if not keep_name:
            self.engine.restoring.discard(self.cfg.name)

    def _stalled(self) -> None:
        if not self.done:
            self._finish()
            self.engine.server.logger.warning("restore for stream '$G > %s' is stalled", self.cfg.name)

    def on_chunk(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if self.done:
            return
        server = self.engine.server
        if not reply:
            self._finish()
            server.logger.warning(
                "restore for stream '$G > %s' requires reply subject for each chunk", self.cfg.name
            )
            return
        if payload:
            self.buffer += payload
            self.timer.cancel()
            self.timer = server.loop.call_later(RESTORE_IDLE, self._stalled)
            server.publish_internal(reply, b"")
            return
        self._finish(keep_name=True)  # the name stays reserved until the stream exists
        task = server.loop.create_task(self._complete(reply))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _complete(self, reply: str) -> None:
        """Decode and write the new store in a worker thread (nothing else sees it yet), then
        bring the stream up in the loop, so a large restore does not stall the server."""
        server = self.engine.server
        data, self.buffer = bytes(self.buffer), bytearray()
        response = StreamCreateResponse()
        try:
            prepared = await server.loop.run_in_executor(None, restore_stream, self.engine, self.cfg, data)
            stream = prepared.activate()
        except JetStreamApiError as exc:
            response.error = exc.error
        else:
            response = StreamCreateResponse.from_payload(stream.info())
        finally:
            self.engine.restoring.discard(self.cfg.name)
        advisories.publish(
            self.engine,
            S.advisory_restore_complete(self.cfg.name),
            RestoreCompleteAdvisory(
                stream=self.cfg.name,
                start=NanoTime(self.start_ns),
                end=NanoTime(time.time_ns()),
                bytes=len(data),
            ),
        )
        server.publish_internal(reply, codec.encode(response))


def _restore_error(text: str) -> JetStreamApiError:
    return JetStreamApiError(E.JSStreamRestoreErrF(err=text))


def restore_stream(engine: JetStreamEngine, cfg: StreamConfig, data: bytes) -> PreparedRestore:
    """A new store for ``cfg``'s stream filled from a snapshot (v2 archive or the older tar);
    touches nothing shared, so it may run in a worker thread. ``activate()`` it in the loop."""
    try:
        raw = decompress_stream(data)
    except S2Error as exc:
        raise _restore_error(str(exc)) from None
    if raw.startswith(ARCHIVE_MAGIC):
        return _restore_v2(engine, cfg, raw)

    # Deferred: start-up time (tarfile, bz2 and lzma; only the older tar snapshots need them).
    from pyjetstream.server.jetstream.snapshot_tar import restore_tar

    fill, consumers = restore_tar(cfg, raw)
    return create_restored(engine, cfg, fill, consumers, wrap_add_error=False)


def _restore_v2(engine: JetStreamEngine, cfg: StreamConfig, raw: bytes) -> PreparedRestore:
    """``RestoreStreamV2``: state.json, the consumers, the messages (gaps kept), the sentinel."""
    entries = iter_entries(raw)
    try:
        first = next(entries)
    except (StopIteration, ArchiveError):
        raise _restore_error("archive: invalid archive stream") from None
    if first.name != STATE_ENTRY:
        raise _restore_error("expected state.json first")
    try:
        state = codec.decode(first.data, StreamState)
    except Exception as exc:
        raise _restore_error(f"error in state.json: {exc}") from None
    consumers: list[tuple[str, SnapshotConsumerState]] = []
    try:
        for _ in range(state.consumer_count):
            entry = next(entries)
            if not entry.name.startswith(CONSUMER_PREFIX):
                raise _restore_error(f'expected consumer, found "{entry.name}"')
            name = entry.name[len(CONSUMER_PREFIX) :]
            try:
                consumer = codec.decode(entry.data, SnapshotConsumerState)
            except Exception as exc:
                raise _restore_error(f'failed to decode consumer "{name}" state: {exc}') from None
            if consumer.config is None:
                raise _restore_error(f'consumer "{name}" is missing config')
            if consumer.state is None:
                raise _restore_error(f'consumer "{name}" is missing state')
            consumers.append((name, consumer))
    except StopIteration:
        raise _restore_error("archive: invalid archive stream") from None
    except ArchiveError as exc:
        raise _restore_error(str(exc)) from None

    def fill(store: Any) -> None:
        if state.first_seq > 1:
            store.compact(state.first_seq)
        lseq = max(state.first_seq, 1) - 1
        eob = False
        for entry in entries:
            if entry.sequence == 0:
                if entry.is_sentinel:
                    eob = True
                    break
                raise _restore_error("expected message sequence")
            seq = entry.sequence
            if seq <= lseq:
                raise _restore_error(f"message sequence {seq} out of order")
            if seq - lseq - 1 > 0:
                store.skip_msgs(lseq + 1, seq - lseq - 1)
            hdr = entry.data[: entry.header_size]
            body = entry.data[entry.header_size :]
            store.store_msg(entry.name, hdr, body, entry.timestamp, message_ttl(hdr) or 0)
            lseq = seq
        if not eob:
            raise _restore_error("backup was truncated")
        if lseq < state.last_seq:
            store.skip_msgs(lseq + 1, state.last_seq - lseq)

    return create_restored(engine, cfg, fill, [(n, c.config, _consumer_state(c.state)) for n, c in consumers])


def _consumer_state(snap: SnapshotState | None) -> ConsumerState:
    assert snap is not None
    return ConsumerState(
        SequencePair(snap.delivered.consumer_seq, snap.delivered.stream_seq),
        SequencePair(snap.ack_floor.consumer_seq, snap.ack_floor.stream_seq),
        {int(seq): (p.Sequence, p.Timestamp) for seq, p in snap.pending.items()},
        {int(seq): n for seq, n in snap.redelivered.items()},
    )


def create_restored(
    engine: JetStreamEngine,
    cfg: StreamConfig,
    fill: Callable[[Any], None],
    consumers: list[tuple[str, ConsumerConfig | None, ConsumerState]],
    wrap_add_error: bool = True,
) -> PreparedRestore:
    """Fill a new store (nothing shared is touched: safe in a worker thread)."""
    store = engine.new_store(cfg)
    try:
        fill(store)
        store.flush()  # everything restored reaches the OS before the restore is answered
    except JetStreamApiError:
        store.delete()
        raise
    except (StoreError, OSError, ValueError) as exc:
        store.delete()
        raise _restore_error(str(exc)) from None
    return PreparedRestore(engine, cfg, store, consumers, wrap_add_error)


@dataclass
class PreparedRestore:
    """A filled store waiting to become a stream (in the event loop)."""

    engine: JetStreamEngine
    cfg: StreamConfig
    store: Any
    consumers: list[tuple[str, ConsumerConfig | None, ConsumerState]]
    wrap_add_error: bool

    def activate(self) -> Stream:
        """Bring the stream and its consumers up as a recovery would (addStreamForRestore)."""
        engine, cfg, store = self.engine, self.cfg, self.store
        try:
            if cfg.name in engine.streams:
                raise JetStreamApiError(E.JSStreamNameExistRestoreFailedErr())
            try:
                _check_overlap(engine, cfg)
            except JetStreamApiError as exc:
                if not self.wrap_add_error:  # the tar path returns addStream's own error
                    raise
                # RestoreStreamV2 wraps it: "error adding stream: <description> (<err_code>)"
                text = f"error adding stream: {exc.error.description} ({exc.error.err_code})"
                raise _restore_error(text) from None
        except JetStreamApiError:
            store.delete()
            raise
        stream = engine.add_stream(cfg, store=store)
        now = time.time_ns()
        for name, ccfg, cstate in self.consumers:
            assert ccfg is not None
            if not ccfg.durable_name and not ccfg.name:
                ccfg.name = name
            try:
                cstore = store.consumer_store(name, str(ccfg.ack_policy), ccfg.max_deliver)
                cstore.write_meta(encode_consumer_meta(name, ccfg, now))
                cstore.update(cstate)  # persisted now, as nats-server's setStoreState
                consumer = Consumer(stream, ccfg, name, now, cstore)
                stream.add_consumer(consumer)
                consumer.start(restored=cstate)
                consumer.dirty()
            except (StoreError, OSError, ValueError) as exc:
                engine.server.logger.error(
                    "JetStream could not restore consumer '%s > %s': %s", cfg.name, name, exc
                )
        return stream


def check_restore_config(engine: JetStreamEngine, cfg: StreamConfig) -> StreamConfig:
    """The config checks a restore makes before accepting chunks (as a create would)."""

    cfg = check_stream_config(cfg, _lookup_config(engine), max_bytes_limits=engine.max_bytes_limits)
    if cfg.num_replicas > 1:
        raise JetStreamApiError(E.JSStreamReplicasNotSupportedErr())
    refused = engine.check_new_stream_limits(cfg)  # jsNonClusteredStreamLimitsCheck, as a create
    if refused is not None:
        raise JetStreamApiError(refused)
    return cfg


HANDLERS = {
    ApiEndpoint.STREAM_SNAPSHOT: stream_snapshot,
    ApiEndpoint.STREAM_RESTORE: stream_restore,
}
