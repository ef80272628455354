"""Splitting a stream's sequence range into Spark input partitions.

How many, without a ``partitions`` option (`default_partition_count`): one per ``minPartitionSize``
sequences, but at most one per two cores of the driver's machine (and never more than
`MAX_AUTO_PARTITIONS`). A partition's read keeps two processes busy, not one: the Python worker
that reads and builds the Arrow batches and the executor thread that turns them into Spark rows
(about as much CPU each, bench/bench_spark.py's profile in docs/spark.md) — and a server on the
same machine a third. On 2 local cores one partition reads 200,000 rows faster than two or four
(the 2026-11-28 profile: 354k vs 305k rows/s), so one partition per two cores.
"""

from __future__ import annotations

import math
import os

from pyspark.sql.datasource import InputPartition

__all__ = ["SeqRange", "default_partition_count", "split_range"]

# Without a ``partitions`` option, at most this many partitions (half the driver's cores, capped):
# more tasks than pairs of cores only add start-up cost and contention.
MAX_AUTO_PARTITIONS = 8
CORES_PER_PARTITION = 2


class SeqRange(InputPartition):
    """Stream sequences ``first`` to ``last`` inclusive (empty when ``first > last``)."""

    def __init__(self, first: int, last: int) -> None:
        super().__init__((first, last))
        self.first = first
        self.last = last

    def __len__(self) -> int:
        return max(0, self.last - self.first + 1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SeqRange) and (self.first, self.last) == (other.first, other.last)

    def __hash__(self) -> int:
        return hash((self.first, self.last))


def default_partition_count(span: int, min_partition_size: int, cores: int | None = None) -> int:
    """Partitions for ``span`` sequences: one per ``min_partition_size``, at most one per
    `CORES_PER_PARTITION` of ``cores`` (default: this machine's) and `MAX_AUTO_PARTITIONS`."""
    cores = cores or os.cpu_count() or 1
    most = max(1, min(cores // CORES_PER_PARTITION, MAX_AUTO_PARTITIONS))
    return max(1, min(math.ceil(span / min_partition_size), most))


def split_range(first: int, last: int, count: int) -> list[SeqRange]:
    """``count`` contiguous ranges covering ``first..last`` (sizes differ by at most one).

    Never more ranges than sequences; an empty range gives no partition.
    """
    span = last - first + 1
    if span <= 0:
        return []
    count = max(1, min(count, span))
    size, extra = divmod(span, count)
    ranges: list[SeqRange] = []
    start = first
    for i in range(count):
        end = start + size - 1 + (1 if i < extra else 0)
        ranges.append(SeqRange(start, end))
        start = end + 1
    return ranges
