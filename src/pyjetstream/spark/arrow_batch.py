"""Arrow batches of messages, as a partition hands them to Spark (executor side)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
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
    bytes: ``fields`` holds ``(own header lines, subject, sequence, RFC 3339 time stamp)`` per
    message as raw header bytes (the lines ``Name: value\\r\\n`` …, empty without headers of its own;
    names in ``drop`` are not the message's), ``data`` the payloads. Arrow converts whole columns at
    once, the header lines included."""

    __slots__ = ("data", "drop", "fields", "schema", "stream")

    def __init__(self, stream: str, schema: pa.Schema, drop: frozenset[str]) -> None:
        self.stream = stream
        self.schema = schema
        self.drop = drop
        self.fields: list[tuple[bytes, ...]] = []
        self.data: list[bytes] = []

    def __len__(self) -> int:
        return len(self.fields)

    def to_batch(self) -> pa.RecordBatch:
        n = len(self.fields)
        if n:
            lines, subjects, seqs, stamps = zip(*self.fields, strict=True)
        else:
            lines = subjects = seqs = stamps = ()
        text = pa.string()
        typ = self.schema.field("headers").type
        headers = header_lines_array(list(lines), typ, self.drop) if any(lines) else pa.nulls(n, typ)
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
    headers: pa.Array | list[bytes | list[Any] | None],
    data: list[bytes],
) -> pa.RecordBatch:
    n = len(seqs)
    columns = [
        pa.array([stream] * n, pa.string()) if n else pa.array([], pa.string()),
        subjects,
        seqs,
        pc.divide(ts_ns, 1000).cast(schema.field("timestamp").type),  # ns -> µs (integer division)
        headers if isinstance(headers, pa.Array) else _headers_array(headers, schema.field("headers").type),
        _data_array(data, schema.field("data").type),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


_ASCII_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() removes


def header_lines_array(lines: list[bytes | None], typ: pa.DataType, drop: frozenset[str]) -> pa.Array:
    """The ``headers`` column (``map<string, array<string>>``) from each row's raw header lines
    (``Name: value\\r\\n`` …; empty or ``None``: no headers), leaving out the names in ``drop``; a row left
    without headers is null. Split and trimmed by Arrow for the whole batch; a batch where a row
    repeats a name (values to group) or that is not UTF-8 is parsed row by row instead."""
    n = len(lines)
    try:
        parts = pc.split_pattern(pa.array(lines, pa.binary()).cast(pa.string()), "\r\n")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _headers_array([_own_pairs(line, drop) if line else None for line in lines], typ)
    rows = pc.list_parent_indices(parts)
    kv = pc.extract_regex(pc.list_flatten(parts), r"^(?P<name>[^:]*):(?P<value>.*)$")
    names = pc.utf8_trim(pc.struct_field(kv, [0]), _ASCII_SPACE)
    keep = pc.fill_null(pc.and_kleene(pc.is_valid(kv), pc.invert(pc.is_in(names, pa.array(sorted(drop))))), False)
    names = pc.filter(names, keep)
    values = pc.utf8_trim(pc.filter(pc.struct_field(kv, [1]), keep), _ASCII_SPACE)
    row_of = pc.filter(rows, keep).to_numpy(zero_copy_only=False).astype(np.int64)
    codes = pc.dictionary_encode(names).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(np.unique(row_of * (int(codes.max(initial=0)) + 1) + codes)) != len(codes):
        return _headers_array([_own_pairs(line, drop) if line else None for line in lines], typ)
    counts = np.bincount(row_of, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    items = pa.ListArray.from_arrays(pa.array(np.arange(len(values) + 1, dtype=np.int32)), values, type=typ.item_type)
    return pa.MapArray.from_arrays(pa.array(offsets), names, items, type=typ, mask=pa.array(counts == 0))


def _own_pairs(lines: bytes, drop: frozenset[str]) -> list[tuple[str, list[str]]] | None:
    """One row's header lines as ``[(name, [values])]`` (first-seen order), or ``None``."""
    own: dict[str, list[str]] = {}
    for line in lines.split(b"\r\n"):
        name_b, colon, value = line.partition(b":")
        name = name_b.decode("utf-8", "replace").strip()
        if colon and name not in drop:
            own.setdefault(name, []).append(value.strip().decode("utf-8", "replace"))
    return list(own.items()) or None


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
