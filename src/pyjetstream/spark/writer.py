"""``df.write.format("jetstream")`` and ``df.writeStream.format("jetstream")``.

Columns: ``subject`` (string; or the ``subject`` option for every row), ``data`` (binary or
string; null = empty payload), optional ``headers`` (``map<string,string>`` or
``map<string,array<string>>``) and ``msg_id`` (string). Other columns are ignored.
With the ``bucket`` option rows are KV puts: ``key`` (or ``subject``) and ``value`` (or
``data``; null = delete). With the ``stream`` option every publish carries
``Nats-Expected-Stream``, so a subject captured by another stream fails instead of landing
there.

Each task publishes its partition over its own connection, as ``publishMode`` says: ``async``
(default) pipelined publishes with up to ``publishWindow`` unacked (`publisher`), ``sync``
one at a time, ``fast`` one fast-ingest batch, ``atomic`` atomic batches of ``atomicBatchSize``
rows (`batch_publishing`). Rows without ``msg_id`` get a deterministic ``Nats-Msg-Id``
(`msgid`; disable with ``deriveMsgId=false``), so task retries and re-run micro-batches do
not duplicate messages within the stream's duplicate window, in every mode.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StringType, StructType

from pyjetstream.api.headers import EXPECTED_STREAM, KV_OPERATION, MSG_ID, publish_block, publish_block_frame
from pyjetstream.client import Client
from pyjetstream.client.msg import HeadersArg
from pyjetstream.spark.batch_publishing import AtomicBatchPublisher, FastBatchPublisher
from pyjetstream.spark.connection import TaskLoop, open_client
from pyjetstream.spark.msgid import MsgIdGenerator, scope_of
from pyjetstream.spark.options import JetStreamOptions, OptionError
from pyjetstream.spark.publisher import Publisher, PublishStats

__all__ = ["JetStreamCommitMessage", "JetStreamStreamWriter", "JetStreamWriter", "WriteLayout"]


@dataclass
class JetStreamCommitMessage(WriterCommitMessage):
    partition: int
    published: int
    duplicates: int
    retries: int
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class WriteLayout:
    """Which input columns feed the subject, payload, headers and message id."""

    subject_col: str | None
    data_col: str | None
    headers_col: str | None
    msg_id_col: str | None
    subject: str | None  # constant subject (no subject column)
    bucket: str | None
    expect_stream: str | None
    derive_msg_id: bool

    @classmethod
    def plan(cls, schema: StructType, opts: JetStreamOptions) -> WriteLayout:
        types = {f.name.lower(): (f.name, f.dataType) for f in schema.fields}

        def column(*names: str, allowed: tuple[type[DataType], ...]) -> str | None:
            for name in names:
                if name in types:
                    real, typ = types[name]
                    if not isinstance(typ, allowed):
                        kinds = " or ".join(a.__name__.removesuffix("Type").lower() for a in allowed)
                        raise OptionError(f"column {real!r} must be {kinds}, not {typ.simpleString()}")
                    return real
            return None

        key_names = ("key", "subject") if opts.bucket else ("subject",)
        value_names = ("value", "data") if opts.bucket else ("data",)
        subject_col = column(*key_names, allowed=(StringType,))
        data_col = column(*value_names, allowed=(BinaryType, StringType))
        headers_col = column("headers", allowed=(MapType,))
        if headers_col is not None:
            typ = types["headers"][1]
            assert isinstance(typ, MapType)
            ok_value = isinstance(typ.valueType, StringType) or (
                isinstance(typ.valueType, ArrayType) and isinstance(typ.valueType.elementType, StringType)
            )
            if not isinstance(typ.keyType, StringType) or not ok_value:
                raise OptionError(
                    "column 'headers' must be map<string,string> or map<string,array<string>>, "
                    f"not {typ.simpleString()}"
                )
        if subject_col is None and not opts.subject:
            what = "'key'" if opts.bucket else "'subject'"
            raise OptionError(f"writing to JetStream needs a {what} column or the 'subject' option")
        if data_col is None:
            what = "'value'" if opts.bucket else "'data'"
            raise OptionError(f"writing to JetStream needs a {what} column (binary or string)")
        return cls(
            subject_col=subject_col,
            data_col=data_col,
            headers_col=headers_col,
            msg_id_col=column("msg_id", "msgid", allowed=(StringType,)),
            subject=opts.subject,
            bucket=opts.bucket,
            expect_stream=opts.stream,
            derive_msg_id=opts.derive_msg_id,
        )


PartitionPublisher = Publisher | FastBatchPublisher | AtomicBatchPublisher


def _column(batch: pa.RecordBatch, name: str | None) -> list[Any] | None:
    return None if name is None else batch.column(name).to_pylist()


def messages_of(
    batch: pa.RecordBatch, layout: WriteLayout, ids: MsgIdGenerator | None
) -> Iterator[tuple[str, bytes, HeadersArg | None]]:
    """``(subject, payload, headers)`` for each row of an Arrow batch."""
    n = batch.num_rows
    expect = layout.expect_stream
    if (
        layout.headers_col is None
        and layout.msg_id_col is None
        and layout.bucket is None
        and not (expect and ("\r" in expect or "\n" in expect))
    ):
        yield from _rows_with_encoded_headers(batch, layout, ids)
        return
    subjects = _column(batch, layout.subject_col) or [layout.subject] * n
    datas = _column(batch, layout.data_col) or [None] * n
    headers_col = _column(batch, layout.headers_col)
    msg_ids = _column(batch, layout.msg_id_col)
    bucket = layout.bucket
    for i in range(n):
        subject = subjects[i]
        if not subject:
            raise ValueError(f"row {i} of the batch has no subject")
        if bucket is not None:
            subject = f"$KV.{bucket}.{subject}"
        data = datas[i]
        headers: dict[str, str | list[str]] = {}
        if data is None:
            data = b""
            if bucket is not None:
                headers[KV_OPERATION] = "DEL"
        elif type(data) is str:
            data = data.encode()
        if headers_col is not None and headers_col[i]:
            for name, value in headers_col[i]:
                headers[name] = value if value is not None else ""
        msg_id = msg_ids[i] if msg_ids is not None else None
        if msg_id is None and ids is not None:
            digest_headers = repr(sorted(headers.items())).encode() if headers else b""
            msg_id = ids.next_id(subject, data, digest_headers)
        if msg_id:
            headers[MSG_ID] = msg_id
        if layout.expect_stream:
            headers[EXPECTED_STREAM] = layout.expect_stream
        yield subject, data, headers or None


def _rows_with_encoded_headers(
    batch: pa.RecordBatch, layout: WriteLayout, ids: MsgIdGenerator | None
) -> Iterator[tuple[str, bytes, bytes | None]]:
    """`messages_of` for rows whose only headers are the derived message id and the expected
    stream: the header blocks are framed here for the whole batch (``api.headers.publish_block``),
    instead of a dict per row encoded by the client."""
    n = batch.num_rows
    subjects = _column(batch, layout.subject_col) or [layout.subject] * n
    datas = _column(batch, layout.data_col) or [None] * n
    for i in range(n):
        if not subjects[i]:
            raise ValueError(f"row {i} of the batch has no subject")
        data = datas[i]
        if type(data) is not bytes:
            datas[i] = b"" if data is None else data.encode()
    expect = layout.expect_stream or ""
    if ids is not None:
        blocks: list[bytes | None] = list(ids.framed_ids(subjects, datas, *publish_block_frame(expect)))
    else:
        blocks = [publish_block("", expect)] * n
    return zip(subjects, datas, blocks, strict=True)


def partition_publisher(nc: Client, opts: JetStreamOptions) -> PartitionPublisher:
    """The publisher ``publishMode`` asks for (each has ``start``, ``publish_many``, ``flush``, ``close``)."""
    mode = opts.publish_mode
    if mode == "fast":
        return FastBatchPublisher(nc, flow=opts.fast_flow, ack_timeout=opts.ack_timeout)
    if mode == "atomic":
        return AtomicBatchPublisher(
            nc,
            batch_size=opts.atomic_batch_size,
            window=opts.publish_window,
            ack_timeout=opts.ack_timeout,
            retries=opts.publish_retries,
        )
    window = 1 if mode == "sync" else opts.publish_window
    return Publisher(nc, window=window, ack_timeout=opts.ack_timeout, retries=opts.publish_retries)


def write_partition(
    opts: JetStreamOptions,
    layout: WriteLayout,
    batches: Iterator[pa.RecordBatch],
    ids: MsgIdGenerator | None,
    partition: int,
) -> JetStreamCommitMessage:
    """Publish every row of a task's input; returns once all are acknowledged."""
    with TaskLoop() as loop:
        nc = loop.run(open_client(opts.connect))
        try:
            publisher = partition_publisher(nc, opts)
            loop.run(publisher.start())
            try:
                for batch in batches:
                    loop.run(publisher.publish_many(messages_of(batch, layout, ids)))
                stats: PublishStats = loop.run(publisher.flush())
            finally:
                loop.run(publisher.close())
        finally:
            loop.run(nc.close())
    return JetStreamCommitMessage(
        partition=partition,
        published=stats.published,
        duplicates=stats.duplicates,
        retries=stats.retries,
        first_seq=stats.first_seq,
        last_seq=stats.last_seq,
    )


def _task_partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


class JetStreamWriter(DataSourceArrowWriter):
    """Batch write. Derived message ids are scoped by ``writeId`` (random per save when unset)."""

    def __init__(self, opts: JetStreamOptions, schema: StructType) -> None:
        self.opts = opts
        self.layout = WriteLayout.plan(schema, opts)
        self.scope = scope_of(opts.write_id or uuid.uuid4().hex)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> JetStreamCommitMessage:
        partition = _task_partition()
        ids = MsgIdGenerator(self.scope, 0, partition) if self.layout.derive_msg_id else None
        return write_partition(self.opts, self.layout, iterator, ids, partition)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to finish: every message was acknowledged by the stream before its task ended."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Acknowledged messages stay in the stream (a stream has no transactions); re-running the
        same write with the same ``writeId`` within the duplicate window adds only what is missing."""


class JetStreamStreamWriter(DataSourceStreamArrowWriter):
    """Streaming write. Derived message ids are scoped by the query id and micro-batch id."""

    def __init__(self, opts: JetStreamOptions, schema: StructType) -> None:
        self.opts = opts
        self.layout = WriteLayout.plan(schema, opts)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> JetStreamCommitMessage:
        from pyspark import TaskContext

        partition = _task_partition()
        ids = None
        if self.layout.derive_msg_id:
            ctx = TaskContext.get()
            query_id = (ctx.getLocalProperty("sql.streaming.queryId") if ctx else None) or "query"
            batch_id = int((ctx.getLocalProperty("streaming.sql.batchId") if ctx else None) or 0)
            ids = MsgIdGenerator(scope_of(self.opts.write_id or query_id), batch_id, partition)
        return write_partition(self.opts, self.layout, iterator, ids, partition)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to finish: the micro-batch's messages are all acknowledged."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Published messages stay; the re-run of this micro-batch republishes with the same ids."""
