"""Arrow batches of messages, as a partition hands them to Spark (executor side)."""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from pyjetstream.protocol import parse_headers

__all__ = ["MessageColumns", "arrow_schema"]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (timestamps in µs, UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


class MessageColumns:
    """Column lists for one Arrow batch, filled message by message in the read loop."""

    __slots__ = ("data", "decode", "headers", "schema", "sequence", "stream", "subject", "timestamp")

    def __init__(self, stream: str, schema: pa.Schema) -> None:
        self.stream = stream
        self.schema = schema
        data = schema.field("data").type
        self.decode = "utf8" if pa.types.is_string(data) else "json" if pa.types.is_struct(data) else "binary"
        self.subject: list[str] = []
        self.sequence: list[int] = []
        self.timestamp: list[int | str] = []  # ns, or RFC 3339 text
        self.headers: list[bytes | list[Any] | None] = []  # raw header blocks, parsed once per batch
        self.data: list[bytes] = []

    def __len__(self) -> int:
        return len(self.sequence)

    def append(
        self, subject: str, seq: int, ts_ns: int | str, raw_headers: bytes | list[Any] | None, data: bytes
    ) -> None:
        """One message; ``ts_ns`` is nanoseconds or RFC 3339 text (never both in one batch),
        ``raw_headers`` a raw block or headers already parsed as ``[(name, [values])]``."""
        self.subject.append(subject)
        self.sequence.append(seq)
        self.timestamp.append(ts_ns)
        self.headers.append(raw_headers)
        self.data.append(data)

    def to_batch(self) -> pa.RecordBatch:
        n = len(self.sequence)
        schema = self.schema
        stream = pa.array([self.stream] * n, pa.string()) if n else pa.array([], pa.string())
        if n and isinstance(self.timestamp[0], str):  # RFC 3339 text (direct get): Arrow parses it
            ts = pa.array(self.timestamp, pa.string()).cast(pa.timestamp("ns", "UTC")).cast(pa.int64())
        else:
            ts = pa.array(self.timestamp, pa.int64())
        ts = pc.divide(ts, 1000).cast(schema.field("timestamp").type)  # ns -> µs (integer division)
        columns = [
            stream,
            pa.array(self.subject, pa.string()),
            pa.array(self.sequence, pa.int64()),
            ts,
            _headers_array(self.headers, schema.field("headers").type),
            self._data_array(schema.field("data").type),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=schema)

    def _data_array(self, typ: pa.DataType) -> pa.Array:
        if self.decode == "binary":
            return pa.array(self.data, pa.binary())
        if self.decode == "utf8":
            return pa.array([d.decode("utf-8", "replace") for d in self.data], pa.string())
        objects = [_json_object(d) for d in self.data]
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
