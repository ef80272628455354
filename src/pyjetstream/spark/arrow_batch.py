"""Arrow batches of messages, as a partition hands them to Spark (executor side)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from pyjetstream.protocol import parse_headers

__all__ = [
    "MessageColumns",
    "arrow_schema",
    "byte_ranges",
    "header_lines_array",
    "header_ranges_array",
    "join_chunks",
    "record_batch",
    "wants_headers",
]


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
        return record_batch(
            self.stream,
            self.schema,
            pa.array(self.subject, pa.string()),
            pa.array(self.sequence, pa.int64()),
            pa.array(self.timestamp, pa.int64()),
            self.headers,
            self.data,
        )


def record_batch(
    stream: str,
    schema: pa.Schema,
    subjects: pa.Array,
    seqs: pa.Array,
    ts_ns: pa.Array,
    headers: pa.Array | list[bytes | list[Any] | None] | None,
    data: list[bytes] | pa.BinaryArray,
) -> pa.RecordBatch:
    """The batch of ``schema`` from its columns: store times in ns, headers as a column or raw blocks
    (parsed here; None when ``schema`` has no ``headers`` column, see `wants_headers`), payloads as bytes
    or one binary array (decoded as the ``data`` column's type). ``schema`` may be a user's: any of
    the message columns, in any order (`schema.check_columns`), and only those are built."""
    n = len(seqs)
    columns = []
    for field in schema:
        name = field.name
        if name == "stream":
            columns.append(pa.array([stream] * n, pa.string()) if n else pa.array([], pa.string()))
        elif name == "subject":
            columns.append(subjects.cast(field.type))
        elif name == "sequence":
            columns.append(seqs.cast(field.type))
        elif name == "timestamp":
            columns.append(pc.divide(ts_ns, 1000).cast(field.type))  # ns -> µs (integer division)
        elif name == "headers":
            assert headers is not None
            columns.append(headers if isinstance(headers, pa.Array) else _headers_array(headers, field.type))
        else:
            columns.append(_data_array(data, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def wants_headers(schema: pa.Schema) -> bool:
    """Whether ``schema`` has a ``headers`` column: a user's schema without one spares the worker the
    header blocks' parse and Spark's JVM the conversion of a map column per row."""
    return schema.get_field_index("headers") >= 0


_ASCII_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() removes


def byte_ranges(buf: bytes | pa.Buffer, starts: np.ndarray, stops: np.ndarray) -> pa.BinaryArray:
    """``buf[starts[i]:stops[i]]`` for every ``i`` as one binary array (ranges in ascending,
    non-overlapping order): a binary array over ``buf`` whose values alternate range, gap, range …,
    then ``take`` of the ranges (one copy, in C++; no Python object per range)."""
    n = len(starts)
    if not n:
        return pa.array([], pa.binary())
    offsets = np.empty(2 * n, np.int64)
    offsets[0::2] = starts
    offsets[1::2] = stops
    data = pa.py_buffer(buf)
    if offsets[-1] < 2**31:
        both = pa.BinaryArray.from_buffers(
            pa.binary(), 2 * n - 1, [None, pa.py_buffer(offsets.astype(np.int32)), data]
        )
    else:
        both = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), 2 * n - 1, [None, pa.py_buffer(offsets), data]
        )
    ranges = both.take(pa.array(np.arange(0, 2 * n - 1, 2, dtype=np.int64)))
    return ranges if ranges.type == pa.binary() else ranges.cast(pa.binary())


def join_chunks(chunks: Sequence[tuple[Any, ...]], width: int) -> tuple[bytes, list[np.ndarray]]:
    """Received chunks, each ``(buf, *offsets)`` with ``width`` ascending offset arrays into its
    buffer, as one buffer and its ``width`` offset arrays. Only the span the frames cover is kept
    (from the first array's first offset to the last array's last: a chunk may hold other ops
    before and after); a lone chunk is returned as it came."""
    if len(chunks) == 1:
        buf, *offsets = chunks[0]
        return buf, offsets
    if not chunks:
        return b"", [np.empty(0, np.int64) for _ in range(width)]
    bufs: list[memoryview] = []
    parts: list[list[np.ndarray]] = [[] for _ in range(width)]
    base = 0
    for buf, *offsets in chunks:
        lo, hi = int(offsets[0][0]), int(offsets[-1][-1])
        bufs.append(memoryview(buf)[lo:hi])  # copied once, by the join
        shift = base - lo
        for part, off in zip(parts, offsets, strict=True):
            part.append(off + shift)
        base += hi - lo
    return b"".join(bufs), [np.concatenate(part) for part in parts]


def header_lines_array(
    lines: list[bytes | None] | pa.BinaryArray, typ: pa.DataType, drop: frozenset[str]
) -> pa.Array:
    """The ``headers`` column (``map<string, array<string>>``) from each row's raw header lines
    (``Name: value\\r\\n`` …; empty or ``None``: no headers), leaving out the names in ``drop``; a row left
    without headers is null. Split and trimmed by Arrow for the whole batch; a batch where a row
    repeats a name (values to group) or that is not UTF-8 is parsed row by row instead."""
    n = len(lines)
    raw = lines if isinstance(lines, pa.Array) else pa.array(lines, pa.binary())
    try:
        parts = pc.split_pattern(raw.cast(pa.string()), "\r\n")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _headers_array([_own_pairs(line, drop) if line else None for line in raw.to_pylist()], typ)
    flat = pc.list_flatten(parts)
    if not len(flat):
        return pa.nulls(n, typ)
    # Each line's first colon (numpy over the lines' bytes): name before it, value after it; a line
    # without one is no header.
    ends = np.frombuffer(flat.buffers()[1], np.int32)[flat.offset : flat.offset + len(flat) + 1].astype(
        np.int64
    )
    data = flat.buffers()[2] or pa.py_buffer(b"")
    colons = np.flatnonzero(np.frombuffer(data, np.uint8) == 58)
    starts, ends = ends[:-1], ends[1:]
    at = np.searchsorted(colons, starts)
    colon = colons[np.minimum(at, len(colons) - 1)] if len(colons) else starts
    has = (at < len(colons)) & (colon < ends)
    names = pc.utf8_trim(byte_ranges(data, starts[has], colon[has]).cast(pa.string()), _ASCII_SPACE)
    keep = pc.invert(pc.is_in(names, pa.array(sorted(drop), pa.string())))
    names = pc.filter(names, keep)
    values = pc.utf8_trim(
        pc.filter(byte_ranges(data, colon[has] + 1, ends[has]).cast(pa.string()), keep), _ASCII_SPACE
    )
    rows = pc.filter(pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)[has], keep)
    row_of = rows.to_numpy(zero_copy_only=False).astype(np.int64)
    codes = pc.dictionary_encode(names).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(np.unique(row_of * (int(codes.max(initial=0)) + 1) + codes)) != len(codes):
        return _headers_array([_own_pairs(line, drop) if line else None for line in raw.to_pylist()], typ)
    counts = np.bincount(row_of, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    items = pa.ListArray.from_arrays(pa.array(np.arange(len(values) + 1, dtype=np.int32)), values, type=typ.item_type)
    return pa.MapArray.from_arrays(pa.array(offsets), names, items, type=typ, mask=pa.array(counts == 0))


_WHITE = np.zeros(256, bool)
_WHITE[np.frombuffer(_ASCII_SPACE.encode(), np.uint8)] = True
_MAX_TRIM_STEPS = 8  # whitespace runs longer than this at a name's or value's end: header_lines_array


def header_ranges_array(lines: pa.BinaryArray, typ: pa.DataType, drop: frozenset[str]) -> pa.Array | None:
    """`header_lines_array` of ``lines`` (each row's raw header lines; empty: no headers) with
    numpy over the array's one data buffer: the CRLFs split a row into lines (as ``split_pattern``
    does), each line's first colon splits name and value, the ASCII whitespace at their ends is
    stepped over, and Arrow copies the names and values once — no list-of-lines array, no string
    split or trim per line; the repeated-name check is a count per (row, name) when names are few.
    None where it would take a slower road (a row that is not UTF-8 or repeats a name, a long
    whitespace run): the caller then asks `header_lines_array`."""
    n = len(lines)
    if lines.null_count or lines.type != pa.binary():
        return None
    offs = np.frombuffer(lines.buffers()[1], np.int32)[lines.offset : lines.offset + n + 1].astype(np.int64)
    buf = lines.buffers()[2] or pa.py_buffer(b"")
    a = np.frombuffer(buf, np.uint8)
    starts, stops = offs[:-1], offs[1:]
    cr = np.flatnonzero(a[:-1] == 13)
    crlf = cr[a[cr + 1] == 10]
    # The CRLFs of row i are crlf[k0[i]:k1[i]] (a CRLF counts when both bytes are in the row).
    k0 = np.searchsorted(crlf, starts)
    k1 = np.maximum(np.searchsorted(crlf, stops - 1), k0)
    count = k1 - k0
    if len(crlf):
        mark = np.bincount(k0, minlength=len(crlf) + 1) - np.bincount(k1, minlength=len(crlf) + 1)
        sep = crlf[np.cumsum(mark[:-1]) > 0]
    else:
        sep = crlf
    # Row i's lines: count[i] + 1 segments (the last one runs from its last CRLF to the row's end).
    last = np.cumsum(count + 1) - 1
    total = int(last[-1]) + 1 if n else 0
    first = last - count
    inner_end = np.ones(total, bool)
    inner_end[last] = False
    inner_start = np.ones(total, bool)
    inner_start[first] = False
    begins = np.empty(total, np.int64)
    begins[first] = starts
    begins[inner_start] = sep + 2
    ends = np.empty(total, np.int64)
    ends[last] = stops
    ends[inner_end] = sep
    colons = np.flatnonzero(a == 58)
    at = np.searchsorted(colons, begins)
    colon = colons[np.minimum(at, len(colons) - 1)] if len(colons) else begins
    has = (at < len(colons)) & (colon < ends)
    names = _trimmed(a, begins[has], colon[has])
    values = _trimmed(a, colon[has] + 1, ends[has])
    if names is None or values is None:
        return None
    rows = np.repeat(np.arange(n), count + 1)[has]
    try:
        name_arr = byte_ranges(buf, *names).cast(pa.string())
        value_arr = byte_ranges(buf, *values).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if drop and len(name_arr):
        keep = pc.invert(pc.is_in(name_arr, pa.array(sorted(drop), pa.string())))
        name_arr, value_arr = pc.filter(name_arr, keep), pc.filter(value_arr, keep)
        rows = rows[keep.to_numpy(zero_copy_only=False)]
    if not len(name_arr):
        return pa.nulls(n, typ)
    encoded = pc.dictionary_encode(name_arr)
    kinds = len(encoded.dictionary)
    key = rows * kinds + encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if n * kinds <= 4 * len(key) + 4096:
        repeated = int(np.bincount(key, minlength=n * kinds).max()) > 1
    else:
        repeated = len(np.unique(key)) != len(key)
    if repeated:
        return None
    counts = np.bincount(rows, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    items = pa.ListArray.from_arrays(
        pa.array(np.arange(len(value_arr) + 1, dtype=np.int32)), value_arr, type=typ.item_type
    )
    return pa.MapArray.from_arrays(pa.array(offsets), name_arr, items, type=typ, mask=pa.array(counts == 0))


def _trimmed(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The ranges ``[lo, hi)`` of ``a`` without the ASCII whitespace at their ends (what
    ``utf8_trim`` with `_ASCII_SPACE` removes), a byte a step; None past `_MAX_TRIM_STEPS`."""
    lo, hi = lo.copy(), hi.copy()
    top = len(a) - 1
    for bound, step in ((lo, 1), (hi, -1)):
        probe = bound if step == 1 else bound - 1
        idx = np.flatnonzero((lo < hi) & _WHITE[a[np.clip(probe, 0, top)]])
        steps = 0
        while len(idx):
            steps += 1
            if steps > _MAX_TRIM_STEPS:
                return None
            bound[idx] += step
            probe = bound[idx] if step == 1 else bound[idx] - 1
            idx = idx[(lo[idx] < hi[idx]) & _WHITE[a[np.clip(probe, 0, top)]]]
    return lo, hi


def _own_pairs(lines: bytes, drop: frozenset[str]) -> list[tuple[str, list[str]]] | None:
    """One row's header lines as ``[(name, [values])]`` (first-seen order), or ``None``."""
    own: dict[str, list[str]] = {}
    for line in lines.split(b"\r\n"):
        name_b, colon, value = line.partition(b":")
        name = name_b.decode("utf-8", "replace").strip()
        if colon and name not in drop:
            own.setdefault(name, []).append(value.strip().decode("utf-8", "replace"))
    return list(own.items()) or None


def _data_array(data: list[bytes] | pa.BinaryArray, typ: pa.DataType) -> pa.Array:
    """The payloads as the ``data`` column's type: binary, UTF-8 text, or a struct parsed from JSON."""
    if isinstance(data, pa.Array):
        if pa.types.is_binary(typ):
            return data
        if pa.types.is_string(typ):
            try:
                return data.cast(pa.string())
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pass  # not all UTF-8: decoded row by row (invalid bytes replaced)
        data = data.to_pylist()
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
