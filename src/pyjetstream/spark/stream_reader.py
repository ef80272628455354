"""``spark.readStream.format("jetstream")``: micro-batches over stream sequences.

An offset is ``{"stream": name, "seq": N}``: every sequence up to ``N`` has been handed to
Spark. A micro-batch covers ``start.seq + 1 .. end.seq``; Spark writes that range to its
offset log before running it, so after a restart the same range is read again (sequences
are immutable: the same messages, or fewer if some were deleted meanwhile) and then the
query carries on from ``end`` — nothing lost, nothing read twice past the checkpoint.
Nothing is kept on the server between batches (each partition reads with an ephemeral
consumer), so there is no consumer to clean up and no ack state to get out of step.

``maxMessagesPerTrigger`` caps the sequences per micro-batch (deleted and filtered-out
sequences count too, so a batch never has more rows than that). Purged ranges are skipped;
a stream that went backwards (deleted and recreated) fails the query with a clear error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pyjetstream.api import StreamState
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions
from pyjetstream.spark.partitioning import default_partition_count, split_range
from pyjetstream.spark.planning import DriverConnection, first_seq_at, require_stream, stream_state

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JetStreamStreamReader"]


class JetStreamStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: JetStreamOptions, schema: StructType) -> None:
        self.opts = opts
        self.stream = require_stream(opts)
        self.schema = schema  # the Arrow schema is derived on the executors (no pyarrow here)
        self.subjects = opts.filter_subjects
        self.conn = DriverConnection(opts)
        self.target: int | None = None  # Trigger.AvailableNow: the last sequence to read
        self.first_seq = 1  # the stream's first sequence when last asked (latestOffset)
        self._state()  # a missing stream fails the query at start, with its name in the message

    def _state(self) -> StreamState:
        state = stream_state(self.opts, self.conn)
        self.first_seq = state.first_seq
        return state

    def _offset(self, seq: int) -> dict[str, object]:
        return {"stream": self.stream, "seq": seq}

    def seq_of(self, offset: dict[str, object]) -> int:
        stream = offset.get("stream", self.stream)
        if stream != self.stream:
            raise JetStreamSparkError(
                f"the checkpoint holds offsets of stream {stream!r}, this query reads {self.stream!r}: "
                "use a new checkpoint location"
            )
        return int(offset["seq"])  # type: ignore[call-overload]

    # --- offsets -----------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, object]:
        if self.opts.start_sequence is not None:
            return self._offset(self.opts.start_sequence - 1)
        if self.opts.start_time_ns is not None:
            return self._offset(first_seq_at(self.opts, self.opts.start_time_ns, self.conn) - 1)
        state = self._state()
        return self._offset(max(state.first_seq - 1, 0) if state.messages else state.last_seq)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_messages_per_trigger:
            return ReadMaxRows(self.opts.max_messages_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, object], limit: ReadLimit) -> dict[str, object]:
        done = self.seq_of(start)
        state = self._state()
        if state.last_seq < done:
            raise JetStreamSparkError(
                f"stream {self.stream!r} ends at sequence {state.last_seq} but this query already read "
                f"up to {done}: the stream was deleted and recreated; use a new checkpoint location"
            )
        base = max(done, state.first_seq - 1)  # skip what was purged or expired
        end = state.last_seq
        if self.opts.end_sequence is not None:
            end = min(end, self.opts.end_sequence)
        if self.target is not None:
            end = min(end, self.target)
        if isinstance(limit, ReadMaxRows):
            end = min(end, base + limit.max_rows)
        if end <= done:
            return start
        return self._offset(end)

    def reportLatestOffset(self) -> dict[str, object]:
        return self._offset(self._state().last_seq)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._state().last_seq

    # --- batches -----------------------------------------------------------------------------

    def partitions(self, start: dict[str, object], end: dict[str, object]) -> Sequence[InputPartition]:
        first, last = self.seq_of(start) + 1, self.seq_of(end)
        if last < first:
            return []
        if self.opts.partitions != 1 and last - first + 1 > self.opts.min_partition_size:
            # Split only what is still stored, so purged sequences don't make empty partitions: as
            # latestOffset saw it just before (no request per micro-batch beyond that one).
            first = max(first, min(self.first_seq, last))
        span = last - first + 1
        count = self.opts.partitions or default_partition_count(span, self.opts.min_partition_size)
        return split_range(first, last, count)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyjetstream.spark.arrow_batch import arrow_schema
        from pyjetstream.spark.partition import read_range

        yield from read_range(
            self.opts,
            self.stream,
            partition.first,  # type: ignore[attr-defined]
            partition.last,  # type: ignore[attr-defined]
            self.subjects,
            arrow_schema(self.schema),
        )

    def commit(self, end: dict[str, object]) -> None:
        """Nothing to do: the server holds no state for this query."""

    def stop(self) -> None:
        self.conn.close()
