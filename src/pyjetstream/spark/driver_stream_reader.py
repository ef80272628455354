"""``readStream`` with ``driverReads=true``: the driver reads each micro-batch, Spark runs no Python
task for it — the low-latency plan for a stream of modest rate.

With the default plan (`stream_reader.JetStreamStreamReader`) every micro-batch runs a Spark task
per partition in a Python worker; on 2 local cores that task costs Spark ~100-150 ms beyond the
read itself (the Python runner's set-up and Arrow hand-over in the executor), whatever the rows.
Here the reader is Spark's *simple* stream reader: when Spark asks for the latest offset the driver's
Python process reads the new messages on the connection it keeps (`planning.DriverConnection`),
and they go to Spark with the plan as Arrow batches (pyspark's ``_SimpleStreamReaderWrapper``
prefetches and caches them); the executors' tasks read that cache, in the JVM.

Offsets are the default plan's (``{"stream", "seq"}``, `JetStreamStreamReader` computes them), so
the two plans share a checkpoint's meaning. Exactly-once is the same argument: Spark writes a
micro-batch's range to its offset log before running it, and a restart re-reads a logged range that
was not committed with ``readBetweenOffsets`` (an executor task, `partition.read_range`): stream
sequences are immutable, the same messages come back.

The driver holds a micro-batch in memory: give ``maxMessagesPerTrigger`` to read a large backlog in
steps (not with ``Trigger.AvailableNow``: Spark takes the first step's end as the end).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import SimpleDataSourceStreamReader
from pyspark.sql.types import StructType

from pyjetstream.spark.jsapi import JetStreamApi
from pyjetstream.spark.options import JetStreamOptions
from pyjetstream.spark.stream_reader import JetStreamStreamReader

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JetStreamDriverStreamReader"]


class JetStreamDriverStreamReader(SimpleDataSourceStreamReader):
    def __init__(self, opts: JetStreamOptions, schema: StructType) -> None:
        self.offsets = JetStreamStreamReader(opts, schema)
        self.opts = opts
        self.limit = self.offsets.getDefaultReadLimit()

    def initialOffset(self) -> dict[str, object]:
        return self.offsets.initialOffset()

    def read(self, start: dict[str, object]) -> tuple[Iterator[Any], dict[str, object]]:
        """The messages after ``start`` up to what the stream holds now (at most ``limit``), read on
        the driver's connection, and the offset they end at."""
        end = self.offsets.latestOffset(start, self.limit)
        first, last = self.offsets.seq_of(start) + 1, self.offsets.seq_of(end)
        if last < first:
            return iter(()), start
        batches = self.offsets.conn.call(lambda api: self._read(api, first, last))
        return iter(batches), end

    async def _read(self, api: JetStreamApi, first: int, last: int) -> list[pa.RecordBatch]:
        from pyjetstream.spark.arrow_batch import arrow_schema
        from pyjetstream.spark.partition import open_reader

        offsets = self.offsets
        schema = arrow_schema(offsets.schema)
        reader = await open_reader(api.nc, self.opts, offsets.stream, first, last, offsets.subjects, schema)
        batches = []
        try:
            while (batch := await reader.next_batch()) is not None:
                batches.append(batch)
        finally:
            await reader.close()
        return batches

    def readBetweenOffsets(self, start: dict[str, object], end: dict[str, object]) -> Iterator[Any]:
        """A logged micro-batch that was not committed, read again after a restart (in a task)."""
        from pyjetstream.spark.arrow_batch import arrow_schema
        from pyjetstream.spark.partition import read_range

        first, last = self.offsets.seq_of(start) + 1, self.offsets.seq_of(end)
        offsets = self.offsets
        return read_range(
            self.opts, offsets.stream, first, last, offsets.subjects, arrow_schema(offsets.schema)
        )

    def commit(self, end: dict[str, object]) -> None:
        """Nothing to do: the server holds no state for this query."""

    def stop(self) -> None:
        self.offsets.stop()
