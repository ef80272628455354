"""The message store interface shared by the memory and file stores, its value types and errors.

Modelled on nats-server's ``server/store.go``: one ``StreamStore`` contract with two
implementations (``memstore.go``, ``filestore.go``). Sequences are 1-based ``int``s,
timestamps are unix nanoseconds. Stores are synchronous and single-threaded: the stream
layer calls them from its event loop and owns any timers (expiry, fsync interval).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, MutableMapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from msgspec import Struct, field

if TYPE_CHECKING:
    from .consumer_journal import PackedChanges
    from .consumer_store import PackedState

# ---------------------------------------------------------------------------------------------
# Errors. Texts are nats-server's (store.go ⟨2.9.10⟩): the stream layer sends them verbatim in
# PubAck error 10077 ("ErrMsgTooLarge" keeps 2.9.10's "to large" spelling).
# ---------------------------------------------------------------------------------------------


class StoreError(Exception):
    """Base class of every store error; ``str(err)`` is the nats-server text."""

    text = "store error"

    def __init__(self, text: str | None = None) -> None:
        super().__init__(text or self.text)


class ErrStoreClosed(StoreError):
    text = "store is closed"


class ErrStoreMsgNotFound(StoreError):
    text = "no message found"


class ErrStoreEOF(StoreError):
    text = "stream store EOF"


class ErrMaxMsgs(StoreError):
    text = "maximum messages exceeded"


class ErrMaxBytes(StoreError):
    text = "maximum bytes exceeded"


class ErrMaxMsgsPerSubject(StoreError):
    text = "maximum messages per subject exceeded"


class ErrMsgTooLarge(StoreError):
    text = "message to large"


class ErrInvalidSequence(StoreError):
    text = "invalid sequence"


class ErrSequenceMismatch(StoreError):
    text = "expected sequence does not match store"


class ErrNoAckPolicy(StoreError):
    text = "ack policy is none"


class ErrCorruptRecord(StoreError):
    text = "message record is corrupt"


class ErrInsufficientResources(StoreError):
    """The disk is full (or over quota): nothing of the failed write is kept (nats-server 10023)."""

    text = "insufficient resources"


class ErrStoreWrite(StoreError):
    """Writing to the store failed with an I/O error; nothing of the failed write is kept."""

    text = "write failed"


class ErrBadConsumerState(StoreError):
    text = "bad consumer state"


# ---------------------------------------------------------------------------------------------
# Value types
# ---------------------------------------------------------------------------------------------


class StoredMsg(NamedTuple):
    """One stored message. ``hdr`` is the raw NATS header block (b"" when none)."""

    subject: str
    seq: int
    ts: int
    hdr: bytes
    data: bytes


#: A stored message as a plain tuple, :class:`StoredMsg`'s fields in order: what a read-ahead run
#: (:meth:`MessageStore.load_next_msgs`) holds — a tuple display is one step where building a
#: ``NamedTuple`` is two calls per message. A ``StoredMsg`` is one too.
MsgTuple = tuple[str, int, int, bytes, bytes]

#: A `StoredMsg` of its fields' tuple, ``stored_msg((subject, seq, ts, hdr, data))``: the tuple's
#: own constructor (C) where ``StoredMsg(...)`` runs the NamedTuple's ``__new__``, a Python frame
#: on every get by sequence (the same object: a `StoredMsg` is a tuple of its class).
stored_msg: Callable[[MsgTuple], StoredMsg] = functools.partial(tuple.__new__, StoredMsg)


class SimpleState(NamedTuple):
    """Per-subject / filtered state: message count and first/last sequence (0 when none)."""

    msgs: int = 0
    first: int = 0
    last: int = 0


class LostData(Struct):
    """Messages found damaged during recovery (``StreamState.lost`` on the wire)."""

    msgs: list[int] = field(default_factory=list)
    bytes: int = 0


class StreamState(Struct):
    """A stream's state as reported in StreamInfo.state (consumer_count is the caller's)."""

    msgs: int = 0
    bytes: int = 0
    first_seq: int = 0
    first_ts: int = 0
    last_seq: int = 0
    last_ts: int = 0
    num_subjects: int = 0
    num_deleted: int = 0
    deleted: list[int] | None = None
    lost: LostData | None = None
    consumer_count: int = 0


DISCARD_OLD = "old"
DISCARD_NEW = "new"
COMPRESSION_NONE = "none"
COMPRESSION_S2 = "s2"


class StoreConfig(Struct):
    """The stream limits a store enforces. -1 (or 0 for max_age) means unlimited, as on the wire.

    ``first_seq`` only applies when a store is created empty; ``compression`` is honoured by the
    file store for records written from then on and ignored by the memory store.
    """

    name: str = ""
    max_msgs: int = -1
    max_bytes: int = -1
    max_age: int = 0  # nanoseconds
    max_msgs_per_subject: int = -1
    max_msg_size: int = -1
    discard: str = DISCARD_OLD
    discard_new_per_subject: bool = False
    first_seq: int = 0
    compression: str = COMPRESSION_NONE

    def __post_init__(self) -> None:
        if self.discard not in (DISCARD_OLD, DISCARD_NEW):
            raise ValueError(f"discard policy must be 'old' or 'new', not {self.discard!r}")
        if self.compression not in (COMPRESSION_NONE, COMPRESSION_S2):
            raise ValueError(f"compression must be 'none' or 's2', not {self.compression!r}")


# ---------------------------------------------------------------------------------------------
# Interfaces
# ---------------------------------------------------------------------------------------------


class MessageStore(ABC):
    """A stream's message store (nats-server ``StreamStore``).

    Not thread-safe: call from one thread (the event loop). Mutations are "written to the OS"
    (file store) before they return, unless made inside ``with store.batch():`` in which case
    they are written when the outermost batch exits — acknowledge publishes after that.
    """

    storage_type: str  # "memory" | "file"
    # The I/O error that froze the store (nats-server ``fileStore.werr``): once set, every write
    # of a message is refused with it until the store is opened again; reads keep working.
    write_error: StoreError | None = None
    # Called with ``(seq, subject)`` after each message removed on its own (a delete, a limit, a
    # TTL, an ack of an interest or work-queue stream, a subject purge): nats-server's
    # ``storeUpdates`` with ``md == -1``, so consumers keep num pending without recounting.
    on_removed: Callable[[int, str], None] | None = None
    # Bumped by each removal of many messages at once (purge, compact, expiry of a prefix,
    # truncate, a write taken back): consumers recount num pending when it moved (``md < -1``).
    bulk_removals: int = 0

    # --- writing -------------------------------------------------------------------------
    @abstractmethod
    def store_msg(
        self, subject: str, hdr: bytes, data: bytes, ts: int | None = None, ttl: int = 0
    ) -> tuple[int, int]:
        """Append a message; return ``(seq, ts)``. Enforces limits (see StoreConfig).

        ``ttl`` is the message's ``Nats-TTL`` in seconds (-1: never expires, 0: none)."""

    @abstractmethod
    def skip_msg(self) -> int:
        """Consume the next sequence without storing anything; return it."""

    @abstractmethod
    def skip_msgs(self, seq: int, num: int) -> None:
        """Consume ``num`` sequences starting at ``seq`` (must be last_seq + 1)."""

    @abstractmethod
    def record_size(self, subject_len: int, hdr_len: int, data_len: int) -> int:
        """The bytes a message of these lengths counts for in the stream's ``bytes`` and the
        account's usage (nats-server ``fileStoreMsgSize`` / ``memStoreMsgSize``)."""

    def run_fits(self, subjects: list[str], largest: int, total: int) -> bool:
        """Whether `store_run` may store one message on each of ``subjects`` in one pass:
        `store_msg` would refuse none of them and remove none for the limits, or only remove
        what the run leaves as one by one does (a store that trims after a run; ``largest``:
        the largest header block and payload together, ``total``: their `record_size`
        summed). A store without a run path says no."""
        return False

    def store_run(
        self,
        subjects: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        ttls: list[int] | None = None,
        stamps: Sequence[int] | None = None,
    ) -> tuple[int, Sequence[int], StoreError | None]:
        """`store_msg` ``(subjects[i], hdrs[i], payloads[i], ts=stamps[i], ttl=ttls[i])`` for each
        in turn (``b""``: no header block; ``ttls`` None: no TTLs; ``stamps`` None: stamped now —
        a mirror's copies keep the origin's) after `run_fits`;
        ``(first sequence, the timestamps of those stored, the error that stopped the rest)``."""
        first = 0
        tss: list[int] = []
        for i, (subject, hdr, payload) in enumerate(zip(subjects, hdrs, payloads, strict=True)):
            try:
                ts_i = stamps[i] if stamps is not None else None
                seq, ts = self.store_msg(subject, hdr, payload, ts_i, ttls[i] if ttls is not None else 0)
            except StoreError as error:
                return first, tss, error
            first = first or seq
            tss.append(ts)
        return first, tss, None

    @abstractmethod
    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Group mutations: writes (and an ``always`` fsync) happen once when the batch exits."""

    # --- reading -------------------------------------------------------------------------
    @abstractmethod
    def load_msg(self, seq: int) -> StoredMsg:
        """The message at ``seq``. ErrStoreEOF past the end, ErrStoreMsgNotFound if deleted."""

    @abstractmethod
    def load_next_msg(self, filter_subject: str, start_seq: int) -> tuple[StoredMsg, int]:
        """First message with seq >= start_seq matching the filter (``""``/``">"`` = all).

        Returns ``(msg, msg.seq)``; raises ErrStoreEOF when there is none.
        """

    def load_next_msgs(
        self, filter_subject: str, start_seq: int, max_msgs: int, max_bytes: int
    ) -> list[MsgTuple]:
        """Up to ``max_msgs`` messages from ``start_seq`` on matching the filter, in order, ending
        after the one that brings their sizes to ``max_bytes`` (a bound on what is held, not an
        exact cap: a store may count its stored sizes); empty at the end (a consumer's
        read-ahead). Plain tuples (`MsgTuple`); a store may answer faster than message by
        message."""
        out: list[MsgTuple] = []
        size = 0
        seq = start_seq
        while len(out) < max_msgs and size < max_bytes:
            try:
                msg, seq = self.load_next_msg(filter_subject, seq)
            except ErrStoreEOF:
                break
            out.append(msg)
            size += len(msg.hdr) + len(msg.data)
            seq += 1
        return out

    def load_msgs(self, seqs: Sequence[int]) -> list[MsgTuple]:
        """The messages at ``seqs`` (ascending), skipping those that are not there: a
        ``last_per_subject`` consumer's start set, read in runs."""
        out: list[MsgTuple] = []
        for seq in seqs:
            try:
                out.append(self.load_msg(seq))
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                continue
        return out

    def load_next_msg_multi(self, filters: Sequence[str], start_seq: int) -> tuple[StoredMsg, int]:
        """First message with seq >= start_seq matching any of the filters (nats-server
        ``LoadNextMsgMulti``); raises ErrStoreEOF when there is none."""
        best: tuple[StoredMsg, int] | None = None
        for f in filters:
            try:
                found = self.load_next_msg(f, start_seq)
            except ErrStoreEOF:
                continue
            if best is None or found[1] < best[1]:
                best = found
        if best is None:
            raise ErrStoreEOF()
        return best

    def load_next_msgs_multi(
        self, filters: Sequence[str], start_seq: int, max_msgs: int, max_bytes: int
    ) -> list[MsgTuple]:
        """`load_next_msgs` for messages matching any of the filters."""
        out: list[MsgTuple] = []
        size = 0
        seq = start_seq
        while len(out) < max_msgs and size < max_bytes:
            try:
                msg, seq = self.load_next_msg_multi(filters, seq)
            except ErrStoreEOF:
                break
            out.append(msg)
            size += len(msg.hdr) + len(msg.data)
            seq += 1
        return out

    @abstractmethod
    def load_last_msg(self, subject: str) -> StoredMsg:
        """Last message on a subject (wildcards allowed; ``""``/``">"`` = stream's last)."""

    def last_seq_on(self, subject: str) -> int:
        """The sequence of the last message on a subject or filter (`load_last_msg`'s, 0: none),
        for a check that needs only the sequence (``Nats-Expected-Last-Subject-Sequence``,
        republish's ``Nats-Last-Sequence``). This general form reads the message; a store with
        a per-subject index answers from it (`IndexedStore.last_seq_on`: `load_last_msg` reads
        and checks the whole record only to give its sequence, ~12% of a KV update's CPU). There
        a damaged record not yet read still counts, as it does in the stream's state
        (``STREAM.INFO``, the last sequence ``Nats-Expected-Last-Sequence`` checks) until a
        read finds it and drops it (nats-server's ``LoadLastMsg`` reads the record)."""
        try:
            return self.load_last_msg(subject).seq
        except (ErrStoreMsgNotFound, ErrStoreEOF):
            return 0

    @abstractmethod
    def load_prev_msg(self, start_seq: int, filter_subject: str = ">") -> StoredMsg:
        """Last message with seq <= start_seq matching the filter; ErrStoreMsgNotFound if none."""

    @abstractmethod
    def subject_for_seq(self, seq: int) -> str:
        """The subject of the message at ``seq`` (no payload read)."""

    @abstractmethod
    def get_seq_from_time(self, ts: int) -> int:
        """First sequence whose timestamp is >= ts (last_seq + 1 when none)."""

    # --- per-subject and filtered state -------------------------------------------------
    @abstractmethod
    def subjects_state(self, filter_subject: str = ">") -> dict[str, SimpleState]:
        """``{subject: SimpleState}`` for every stored subject matching the filter."""

    @abstractmethod
    def subjects_totals(self, filter_subject: str = ">") -> dict[str, int]:
        """``{subject: message count}`` for every stored subject matching the filter."""

    def subjects_sorted_page(self, filter_subject: str, offset: int, limit: int) -> tuple[int, dict[str, int], bool]:
        """How many subjects match the filter, the `subjects_totals` of those from ``offset`` in
        name order (``limit`` at most), and whether that dict is in name order: STREAM.INFO's
        ``subjects_filter`` page (nats-server ``jsStreamInfoRequest``). This default sorts them
        all; an indexed store keeps the order while its subjects stay the same."""
        totals = self.subjects_totals(filter_subject)
        return len(totals), {k: totals[k] for k in sorted(totals)[offset : offset + limit]}, True

    def subjects_page(self, filter_subject: str, after: int, limit: int) -> list[tuple[int, str, SimpleState]]:
        """A page of `subjects_state`: up to ``limit`` ``(id, subject, state)`` with ids above
        ``after`` (the cursor of the next page). This default numbers the subjects in name order
        and reads them all; an indexed store pages its subject table instead."""
        items = sorted(self.subjects_state(filter_subject).items())
        return [(i + 1, name, st) for i, (name, st) in enumerate(items) if i + 1 > after][:limit]

    def multi_last_seqs(self, filters: Sequence[str], max_seq: int) -> list[int]:
        """The last sequence at or below ``max_seq`` of every subject matching any of the
        filters, sorted (nats-server ``MultiLastSeqs``: a ``last_per_subject`` consumer's start, a
        batched direct get's ``multi_last``)."""
        seen: set[int] = set()
        for f in filters:
            for subject, ss in self.subjects_state(f).items():
                if ss.last <= max_seq:
                    seen.add(ss.last)
                elif ss.msgs > 1:
                    try:
                        seen.add(self.load_prev_msg(max_seq, subject).seq)
                    except StoreError:
                        pass
        return sorted(seen)

    @abstractmethod
    def num_pending(
        self, start_seq: int, filter_subject: str = ">", last_per_subject: bool = False
    ) -> tuple[int, int]:
        """``(pending, valid_through)``: matching messages with seq >= start_seq (or, with
        last_per_subject, matching subjects whose last message is >= start_seq), and the
        last sequence the answer covers."""

    @abstractmethod
    def filtered_state(self, start_seq: int, filter_subject: str = ">") -> SimpleState:
        """Count, first and last of matching messages with seq >= start_seq."""

    # --- removing -----------------------------------------------------------------------
    @abstractmethod
    def remove_msg(self, seq: int) -> bool:
        """Delete one message (tombstone); False when it was not there."""

    @abstractmethod
    def erase_msg(self, seq: int) -> bool:
        """Delete one message and overwrite its stored bytes with random data."""

    @abstractmethod
    def purge(self) -> int:
        """Remove every message; first_seq becomes last_seq + 1. Returns the count removed."""

    @abstractmethod
    def purge_ex(self, subject: str = "", seq: int = 0, keep: int = 0) -> int:
        """nats-server PurgeEx: by subject filter, up to (not including) ``seq``, keeping the
        newest ``keep``. Without a subject: seq > 1 ⇒ compact(seq); keep ⇒ keep the last N."""

    def purge_subjects(self, subjects: Collection[str], keep: int = 0) -> int:
        """`purge_ex` of each of the literal ``subjects``, keeping its newest ``keep`` (a store
        may remove them all together)."""
        return sum(self.purge_ex(subject, 0, keep) for subject in set(subjects))

    @abstractmethod
    def compact(self, seq: int) -> int:
        """Remove every message below ``seq``; seq past the end purges and sets first_seq=seq."""

    @abstractmethod
    def truncate(self, seq: int) -> None:
        """Remove every message above ``seq`` (0 resets the store). ErrInvalidSequence if
        ``seq`` is not a stored message."""

    @abstractmethod
    def expire_msgs(
        self, now: int | None = None, expire: Callable[[int, str, bool], bool | None] | None = None
    ) -> int:
        """Remove messages older than max_age, or past their TTL, at ``now`` (unix ns); return
        how many. ``expire(seq, subject, last)`` sees each one first (subject delete markers);
        one it answers True for is left to it (its marker's roll-up removes it)."""

    @abstractmethod
    def next_expiry(self) -> int | None:
        """Unix ns when the next message reaches max_age or its TTL (None: nothing will expire)."""

    # --- state and lifecycle ------------------------------------------------------------
    @abstractmethod
    def state(self, deleted_details: bool = False) -> StreamState:
        """Full state; ``deleted`` is filled only when deleted_details is true."""

    @abstractmethod
    def fast_state(self) -> StreamState:
        """State without the deleted list (cheap)."""

    def totals(self) -> tuple[int, int]:
        """The messages and bytes held: what ``/jsz`` sums over every stream (nats-server's ``Jsz``
        loop reads its streams' ``State()``), without a `StreamState` made for two of its fields."""
        state = self.fast_state()
        return state.msgs, state.bytes

    def last_seq(self) -> int:
        """The last sequence (`fast_state`'s ``last_seq``) without a `StreamState` made for it: a
        delivery pass asks at the end of the stream whether anything follows (`DeliveryLoop`)."""
        return self.fast_state().last_seq

    @abstractmethod
    def update_config(self, cfg: StoreConfig) -> None:
        """Apply new limits (enforcing them on what is stored now)."""

    @property
    @abstractmethod
    def config(self) -> StoreConfig:
        """The current limits."""

    @abstractmethod
    def flush(self) -> None:
        """Write anything buffered to the OS."""

    @abstractmethod
    def sync(self) -> None:
        """Flush and fsync (the caller's sync_interval timer calls this)."""

    @abstractmethod
    def stop(self) -> None:
        """Flush, persist what speeds up the next start, and close. Idempotent."""

    def close(self) -> None:
        self.stop()

    @abstractmethod
    def delete(self) -> None:
        """Stop and remove everything this store persisted."""

    # --- metadata for the stream layer -------------------------------------------------
    @abstractmethod
    def write_meta(self, data: bytes) -> None:
        """Persist the stream definition (atomically for the file store)."""

    @abstractmethod
    def read_meta(self) -> bytes | None:
        """The stream definition last written, or None."""

    @abstractmethod
    def consumer_store(
        self, name: str, ack_policy: str = "explicit", max_deliver: int = -1
    ) -> ConsumerStoreBase:
        """Open (or create) the state store of a consumer of this stream; the ack policy and
        max_deliver drive how deliveries and acks update it (see ConsumerStoreBase)."""

    @abstractmethod
    def consumer_names(self) -> list[str]:
        """Names of consumers with persisted state (what a restart must bring back)."""

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Consumer state ------------------------------------------------------------------------------


class SequencePair(Struct):
    """A consumer sequence and the stream sequence it delivered (nats-server ``SequencePair``)."""

    consumer_seq: int = 0
    stream_seq: int = 0


class ConsumerState(Struct):
    """A consumer's durable state (nats-server ``ConsumerState``).

    ``pending`` maps stream seq -> (consumer seq of the delivery, delivery ts in unix ns);
    ``redelivered`` maps stream seq -> number of redeliveries (delivery count - 1).
    """

    delivered: SequencePair = field(default_factory=SequencePair)
    ack_floor: SequencePair = field(default_factory=SequencePair)
    # A dict, or a restored slot's columns (``consumer_store.StoredPending``, a dict once written).
    pending: MutableMapping[int, tuple[int, int]] = field(default_factory=dict)
    redelivered: dict[int, int] = field(default_factory=dict)

    def copy(self) -> ConsumerState:
        """A copy; stored columns are shared (`StoredPending.__copy__`: never written in place)."""
        pending = self.pending
        return ConsumerState(
            SequencePair(self.delivered.consumer_seq, self.delivered.stream_seq),
            SequencePair(self.ack_floor.consumer_seq, self.ack_floor.stream_seq),
            dict(pending) if isinstance(pending, dict) else copy.copy(pending),
            dict(self.redelivered),
        )


ACK_NONE = "none"
ACK_ALL = "all"
ACK_EXPLICIT = "explicit"


class ConsumerStoreBase(ABC):
    """Durable state of one consumer (nats-server ``ConsumerStore``)."""

    name: str
    # Whether writes reach a file (an ack's reply then waits for the write holding the ack).
    persistent: bool = False

    @abstractmethod
    def state(self) -> ConsumerState:
        """A copy of the current state."""

    @abstractmethod
    def has_state(self) -> bool:
        """True when state was recovered from a previous run."""

    @abstractmethod
    def update(self, state: ConsumerState) -> None:
        """Replace the whole state (validated)."""

    @abstractmethod
    def set_starting(self, sseq: int) -> None:
        """Set the delivered stream sequence a new consumer starts after."""

    def reset(self, sseq: int) -> None:
        """⟨2.14+⟩ ``CONSUMER.RESET``: start over after stream sequence ``sseq``, nothing delivered
        or pending (nats-server ``ConsumerStore.Reset``)."""
        raise NotImplementedError

    @abstractmethod
    def update_delivered(self, dseq: int, sseq: int, dc: int, ts: int) -> None:
        """Record delivery ``dseq`` of stream message ``sseq`` (delivery count dc, time ts)."""

    @abstractmethod
    def update_acks(self, dseq: int, sseq: int) -> None:
        """Record an ack of delivery ``dseq`` / stream message ``sseq``."""

    @abstractmethod
    def update_config(self, ack_policy: str, max_deliver: int = -1) -> None:
        """Ack policy ("none"|"all"|"explicit") and max_deliver the updates follow."""

    @abstractmethod
    def write_meta(self, data: bytes) -> None:
        """Persist the consumer definition."""

    @abstractmethod
    def read_meta(self) -> bytes | None:
        """The consumer definition last written, or None."""

    @abstractmethod
    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Group updates; state is persisted once when the batch exits."""

    @abstractmethod
    def flush(self) -> None:
        """Persist pending state now."""

    @abstractmethod
    def stop(self) -> None:
        """Persist and close."""

    @abstractmethod
    def delete(self) -> None:
        """Remove the consumer's persisted state."""

    def adopt(self, state: ConsumerState) -> None:
        """`update` with a state nobody else holds or changes (the consumer's own snapshot):
        a store may take it as it is instead of copying it."""
        self.update(state)

    def adopt_packed(self, packed: PackedState) -> None:
        """`adopt` for a consumer's state packed for writing (``consumer_store.PackedState``): a
        file store writes its bytes as they are; this default unpacks it."""
        self.adopt(packed.unpack())

    def adopt_changes(self, changes: PackedChanges) -> None:
        """The changes of a consumer's state since the last one it handed over
        (``consumer_journal.PackedChanges``), for a store that journals them; this one does not:
        refused, the consumer writes its whole state instead."""
        raise ErrBadConsumerState("no journal follows the consumer state")

    def stream_delete(self) -> None:
        """Close without writing or removing anything: the stream's store is being deleted whole,
        the consumer's state with it (nats-server ``consumerFileStore.StreamDelete``)."""
        self.closed = True
