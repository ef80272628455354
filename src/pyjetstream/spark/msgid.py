"""Deterministic ``Nats-Msg-Id`` values for rows written by Spark.

A retried task, or a micro-batch re-run after a restart, publishes the same rows again;
the stream drops the copies if they carry the same message ids (within its duplicate
window, 2 minutes by default). So an id must be a function of what is being written, not
of when: ``<scope>.<batch>.<partition>.<row digest>.<n>`` where

- *scope* is 12 hex digits of a hash of the streaming query's id (stable across restarts,
  kept in the checkpoint) or, for a batch write, of the ``writeId`` option (a random id per
  ``save()`` when not given, shared by the retries of its tasks);
- *batch* is the micro-batch id (0 for a batch write), *partition* the Spark partition;
- *row digest* hashes the row's subject, headers and data, and *n* counts identical rows
  within the partition.

Keying rows by content rather than position keeps ids stable when a retried task sees its
rows in another order (rows that come out of a shuffle usually do): a positional id would
then give a row the id of a different row published earlier, and the stream would drop it
as a duplicate — silent loss. The cost is one small digest per row and a counter per
distinct row of the partition.
"""

from __future__ import annotations

import hashlib

_blake2b = hashlib.blake2b

__all__ = ["MsgIdGenerator", "scope_of"]


def scope_of(text: str) -> str:
    """A short, stable token for a query id or write id."""
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


class MsgIdGenerator:
    """Message ids for the rows of one partition of one (micro-)batch."""

    __slots__ = ("_counts", "_prefix")

    def __init__(self, scope: str, batch: int, partition: int) -> None:
        self._prefix = f"{scope}.{batch}.{partition}."
        self._counts: dict[bytes, int] = {}

    def next_id(self, subject: str, data: bytes, headers: bytes = b"") -> str:
        # One call on the joined parts (the same digest as updating with each in turn).
        digest = _blake2b(b"%s\x00%s\x00%s" % (subject.encode(), headers, data), digest_size=8).digest()
        n = self._counts.get(digest, 0) + 1
        self._counts[digest] = n
        return f"{self._prefix}{digest.hex()}.{n}"

    def framed_ids(self, subjects: list[str], datas: list[bytes], head: bytes, tail: bytes) -> list[bytes]:
        """``head + id + tail`` for each row (``subjects[i]``, ``datas[i]``, no headers of its own):
        the ids `next_id` gives, in the same order, as a header block's bytes — one loop for
        an Arrow batch instead of a call, a ``str`` and its encoding per row."""
        counts = self._counts
        get = counts.get
        prefix = self._prefix.encode()
        out: list[bytes] = []
        append = out.append
        for i in range(len(datas)):
            digest = _blake2b(b"%s\x00\x00%s" % (subjects[i].encode(), datas[i]), digest_size=8).digest()
            n = get(digest, 0) + 1
            counts[digest] = n
            append(b"%b%b%b.%d%b" % (head, prefix, digest.hex().encode(), n, tail))
        return out
