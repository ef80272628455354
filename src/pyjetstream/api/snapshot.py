"""Stream snapshots: the v2 archive nats-server 2.15 streams for ``$JS.API.STREAM.SNAPSHOT`` (sans-IO).

The snapshot is an S2 stream around a ``NATSARC1`` archive (nats-server ``server/archive``): the
8 magic bytes, then entries. Each entry is a header of varints — name length (uvarint), timestamp
(zig-zag varint, Unix ns), sequence (uvarint, 0 = none), header size and payload size (uvarints) —
then the name, then ``header size + payload size`` bytes. A snapshot holds, in order:
``state.json`` (the stream state), one ``consumers/<name>`` per consumer (``{"config", "state"}``),
every message (name = subject, sequence, timestamp, the message headers then its data), and an
empty sentinel entry (all zero) marking a complete backup (``stream_backup.go``).

Older servers (≤ 2.14) stream a tar of their file store instead; a reader tells the two apart by
the magic at the start of the decompressed stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ._wire import WireStruct, always, always_new
from .models_consumer import ConsumerConfig

__all__ = [
    "ARCHIVE_MAGIC",
    "ArchiveEntry",
    "ArchiveError",
    "SnapshotConsumerState",
    "SnapshotPending",
    "SnapshotSequencePair",
    "SnapshotState",
    "encode_entry",
    "iter_entries",
]

ARCHIVE_MAGIC = b"NATSARC1"
MAX_NAME_LEN = 1 << 20  # archive.maxNameLen
STATE_ENTRY = "state.json"
CONSUMER_PREFIX = "consumers/"


class ArchiveError(ValueError):
    """Not a valid (or a truncated) v2 archive."""


@dataclass(slots=True)
class ArchiveEntry:
    """One entry of a v2 snapshot archive: name, a message's timestamp and sequence, header/payload sizes, bytes."""

    name: str
    timestamp: int
    sequence: int
    header_size: int
    payload_size: int
    data: bytes  # header_size + payload_size bytes

    @property
    def is_sentinel(self) -> bool:
        return (
            not self.name
            and self.sequence == 0
            and self.timestamp == 0
            and self.header_size == 0
            and self.payload_size == 0
        )


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint(value: int) -> bytes:
    """Go's binary.PutVarint: zig-zag."""
    return _uvarint((value << 1) ^ (value >> 63) if value < 0 else value << 1)


def encode_entry(name: str, timestamp: int, sequence: int, header: bytes, payload: bytes) -> bytes:
    """One entry: its header of varints, the name, then ``header + payload``."""
    raw_name = name.encode()
    return b"".join(
        (
            _uvarint(len(raw_name)),
            _varint(timestamp),
            _uvarint(sequence),
            _uvarint(len(header)),
            _uvarint(len(payload)),
            raw_name,
            header,
            payload,
        )
    )


def _read_uvarint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ArchiveError("archive: invalid archive stream")
        byte = data[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise ArchiveError("archive: invalid archive stream")
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def iter_entries(data: bytes | memoryview) -> Iterator[ArchiveEntry]:
    """The entries of a whole (decompressed) archive, in order."""
    view = memoryview(data)
    if bytes(view[: len(ARCHIVE_MAGIC)]) != ARCHIVE_MAGIC:
        raise ArchiveError("archive: invalid archive stream")
    pos = len(ARCHIVE_MAGIC)
    while pos < len(view):
        name_len, pos = _read_uvarint(view, pos)
        raw_ts, pos = _read_uvarint(view, pos)
        timestamp = (raw_ts >> 1) ^ -(raw_ts & 1)
        sequence, pos = _read_uvarint(view, pos)
        header_size, pos = _read_uvarint(view, pos)
        payload_size, pos = _read_uvarint(view, pos)
        if name_len > MAX_NAME_LEN or header_size >= 1 << 63 or payload_size >= 1 << 63:
            raise ArchiveError("archive: invalid archive stream")
        end = pos + name_len + header_size + payload_size
        if end > len(view):
            raise ArchiveError("archive: invalid archive stream")
        name = bytes(view[pos : pos + name_len]).decode(errors="replace")
        pos += name_len
        body = bytes(view[pos:end])
        pos = end
        yield ArchiveEntry(name, timestamp, sequence, header_size, payload_size, body)


# --- consumers/<name> ---------------------------------------------------------------------------


class SnapshotSequencePair(WireStruct):
    consumer_seq: int = always(0)
    stream_seq: int = always(0)


class SnapshotPending(WireStruct):
    """Go's ``Pending`` has no JSON tags: the keys are the field names."""

    Sequence: int = always(0)
    Timestamp: int = always(0)


class SnapshotState(WireStruct):
    """nats-server ``ConsumerState`` as JSON (``pending``/``redelivered`` keyed by stream sequence)."""

    delivered: SnapshotSequencePair = always_new(SnapshotSequencePair)
    ack_floor: SnapshotSequencePair = always_new(SnapshotSequencePair)
    pending: dict[str, SnapshotPending] = {}
    redelivered: dict[str, int] = {}


class SnapshotConsumerState(WireStruct):
    """A ``consumers/<name>`` entry (``SnapshotConsumerState``)."""

    config: ConsumerConfig | None = None
    state: SnapshotState | None = None
