"""Splitting a stream's sequence range into Spark input partitions."""

from __future__ import annotations

import math
import os

from pyspark.sql.datasource import InputPartition

__all__ = ["SeqRange", "default_partition_count", "split_range"]

# Without a ``partitions`` option, at most this many partitions (the driver's core count, capped):
# more tasks than cores only add start-up cost.
MAX_AUTO_PARTITIONS = 8


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


def default_partition_count(span: int, min_partition_size: int) -> int:
    cores = os.cpu_count() or 1
    return max(1, min(math.ceil(span / min_partition_size), min(cores, MAX_AUTO_PARTITIONS)))


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
