"""Arrow batches of messages, as a partition hands them to Spark (executor side)."""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from pyjetstream.protocol import parse_headers

__all__ = ["MessageColumns", "ReplyColumns", "arrow_schema"]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (timestamps in µs, UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


class MessageColumns:
    """Column lists for one Arrow batch, filled message by message in the read loop (the consumer
    reader: subjects as text, sequences and store times in ns as integers)."""

    __slots__ = ("data", "headers", "schema", "sequence", "stream", "subject", "timestamp")

    def __init__(self, stream: str, schema: pa.Schema) -> None:
        self.stream = stream
        self.schema = schema
        self.subject: list[str] = []
        self.sequence: list[int] = []
        self.timestamp: list[int] = []  # ns
        self.headers: list[bytes | list[Any] | None] = []  # raw header blocks, parsed once per batch
        self.data: list[bytes] = []

    def __len__(self) -> int:
        return len(self.sequence)

    def append(self, subject: str, seq: int, ts_ns: int, raw_headers: bytes | list[Any] | None, data: bytes) -> None:
        """One message; ``raw_headers`` a raw block or headers already parsed as ``[(name, [values])]``."""
        self.subject.append(subject)
        self.sequence.append(seq)
        self.timestamp.append(ts_ns)
        self.headers.append(raw_headers)
        self.data.append(data)

    def to_batch(self) -> pa.RecordBatch:
        return _record_batch(
            self.stream,
            self.schema,
            pa.array(self.subject, pa.string()),
            pa.array(self.sequence, pa.int64()),
            pa.array(self.timestamp, pa.int64()),
            self.headers,
            self.data,
        )


class ReplyColumns:
    """Column lists for one Arrow batch of direct get replies, filled straight from the received
    bytes: ``fields`` holds ``(subject, sequence, RFC 3339 time stamp)`` per message as the raw
    header values, ``data`` the payloads, ``headers`` only the rows with headers of their own
    (row index → ``[(name, [values])]``). Arrow converts whole columns at once."""

    __slots__ = ("data", "fields", "headers", "schema", "stream")

    def __init__(self, stream: str, schema: pa.Schema) -> None:
        self.stream = stream
        self.schema = schema
        self.fields: list[tuple[bytes, ...]] = []
        self.data: list[bytes] = []
        self.headers: dict[int, list[Any]] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def to_batch(self) -> pa.RecordBatch:
        n = len(self.fields)
        if n:
            subjects, seqs, stamps = zip(*self.fields, strict=True)
        else:
            subjects = seqs = stamps = ()
        headers: list[bytes | list[Any] | None] = [None] * n
        for row, own in self.headers.items():
            headers[row] = own
        text = pa.string()
        return _record_batch(
            self.stream,
            self.schema,
            pa.array(subjects, pa.binary()).cast(text),
            pa.array(seqs, pa.binary()).cast(text).cast(pa.int64()),
            pa.array(stamps, pa.binary()).cast(text).cast(pa.timestamp("ns", "UTC")).cast(pa.int64()),
            headers,
            self.data,
        )


def _record_batch(
    stream: str,
    schema: pa.Schema,
    subjects: pa.Array,
    seqs: pa.Array,
    ts_ns: pa.Array,
    headers: list[bytes | list[Any] | None],
    data: list[bytes],
) -> pa.RecordBatch:
    n = len(seqs)
    columns = [
        pa.array([stream] * n, pa.string()) if n else pa.array([], pa.string()),
        subjects,
        seqs,
        pc.divide(ts_ns, 1000).cast(schema.field("timestamp").type),  # ns -> µs (integer division)
        _headers_array(headers, schema.field("headers").type),
        _data_array(data, schema.field("data").type),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _data_array(data: list[bytes], typ: pa.DataType) -> pa.Array:
    """The payloads as the ``data`` column's type: binary, UTF-8 text, or a struct parsed from JSON."""
    if pa.types.is_binary(typ):
        return pa.array(data, pa.binary())
    if pa.types.is_string(typ):
        return pa.array([d.decode("utf-8", "replace") for d in data], pa.string())
    objects = [_json_object(d) for d in data]
    try:
        return pa.array(objects, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([_conform(obj, typ) for obj in objects], typ)


def _conform(obj: dict[str, Any] | None, typ: pa.DataType) -> dict[str, Any] | None:
    """One object converted alone: one that does not fit the schema becomes null, not an error."""
    try:
        pa.array([obj], typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return obj


_json_decoder = msgspec.json.Decoder()


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = _json_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _headers_array(blocks: list[bytes | list[Any] | None], typ: pa.DataType) -> pa.Array:
    if not any(blocks):
        return pa.nulls(len(blocks), typ)
    values: list[list[tuple[str, list[str]]] | None] = []
    for raw in blocks:
        if raw is None or isinstance(raw, list):
            values.append(raw)
            continue
        try:
            block = parse_headers(raw)
        except ValueError:
            values.append([])
            continue
        values.append(list(block.headers.items()))
    return pa.array(values, typ)
