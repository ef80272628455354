"""How far a partition's read of a sequence range got, and the rows it has not handed to Spark yet.

Both partition readers (`direct_reader`, `range_reader`) keep their progress here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import pyarrow as pa

__all__ = ["Columns", "RangeCursor"]


class Columns(Protocol):
    """What a cursor collects rows in (`arrow_batch`)."""

    def __len__(self) -> int: ...

    def to_batch(self) -> pa.RecordBatch: ...


C = TypeVar("C", bound=Columns)


class RangeCursor(Generic[C]):
    """Where a partition's read of ``first <= seq <= last`` stands; ``cols`` collects the rows of the
    batch being filled, ``take`` hands them over."""

    __slots__ = ("cols", "cursor", "done", "first", "last", "new_columns", "read_count")

    def __init__(self, first: int, last: int, new_columns: Callable[[], C]) -> None:
        self.first = first
        self.last = last
        self.cursor = first - 1  # the last stream sequence read
        self.done = first > last
        self.read_count = 0
        self.new_columns = new_columns
        self.cols = new_columns()

    @property
    def remaining(self) -> int:
        """Sequences left in the range (an upper bound of the messages left)."""
        return self.last - self.cursor

    def take(self) -> pa.RecordBatch | None:
        """The rows collected so far as one Arrow batch (``None`` if there are none: a direct get batch
        may drop the rows it holds past the range's end)."""
        cols = self.cols
        if not len(cols):
            return None
        self.cols = self.new_columns()
        batch = cols.to_batch()
        self.read_count += batch.num_rows
        return batch if batch.num_rows else None
