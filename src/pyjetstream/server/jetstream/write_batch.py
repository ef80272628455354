"""A stream's writes held together: one store batch per client read (or per run, or per event-loop
turn outside a read), acknowledged only once it reached the OS.

nats-server's file store writes each record to the OS before ``processJetStreamMsg`` answers
(flush in place, ``fs.fip``: ``AsyncFlush`` is off by default). The embedded server gets the same
guarantee for a whole read at once: every publish of the read is appended inside one store batch,
its PubAcks and the consumers' signals wait, and when the read is processed (``after_read``) or
the run is done the batch is committed (``sync: always``: fsynced), then the PubAcks leave — on
the publisher's socket in the turn the publishes came in — and consumers see the messages. A
commit that fails takes the batch back whole: every publish of it is answered with the error and
nothing of it is shown to consumers or remembered as a duplicate.

A memory stream has nothing to write: its answers go out at once, except inside a run, where
they are held to the run's end and go out together.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api import subjects as S
from pyjetstream.api.codec import encode_pub_ack_error
from pyjetstream.api.enums import StorageType
from pyjetstream.api.models_common import ApiError
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.store.base import ErrInsufficientResources, StoreError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

#: At most one log line per stream this often for failed writes (a full disk fails every publish).
WRITE_ERROR_LOG_INTERVAL = 10.0


class WriteBatch:
    """The held writes of one stream (see the module docstring)."""

    __slots__ = ("_batch", "_logged", "_memory", "acks", "frozen", "holding", "signals", "stream")

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._memory = stream.cfg.storage == StorageType.MEMORY
        self._batch: contextlib.AbstractContextManager[None] | None = None
        #: Answers and consumer signals wait for the commit (a run, or a file stream's batch).
        self.holding = False
        self.acks: list[tuple[str, bytes]] = []
        self.signals: list[tuple[int, str]] = []
        self._logged = -1e9  # monotonic time of the last write-failure log line
        self.frozen = False  # an I/O error froze the store's writes (said once: write_error)

    # --- holding ------------------------------------------------------------------------------
    def hold(self) -> bool:
        """Hold what follows until `end` (a run: its caller ends it); a file stream opens
        its store batch. False when already holding (whoever began it ends it)."""
        if self.holding:
            return False
        self.holding = True
        if not self._memory:
            batch = self._batch = self.stream.store.batch()
            batch.__enter__()
        return True

    def hold_for_read(self) -> None:
        """A file stream's writes until the client read being processed is done (outside one:
        the end of this event-loop turn): the host's ``after_read``. A memory stream holds nothing."""
        if not self.holding and not self._memory:
            self.hold()
            self.stream.server.after_read(self.end)

    def end(self) -> None:
        """Commit the held writes, then acknowledge and signal the consumers."""
        if not self.holding:
            return
        self.holding = False
        batch, self._batch = self._batch, None
        if batch is not None:
            try:
                batch.__exit__(None, None, None)
            except (StoreError, OSError) as exc:
                self._commit_failed(exc)
                return
        acks, self.acks = self.acks, []
        stream = self.stream
        if acks:
            stream.server.publish_replies(acks)
        if self.signals:
            signals, self.signals = self.signals, []
            stream.signal_stored(signals)

    # --- answers and signals --------------------------------------------------------------------
    def respond(self, reply: str, data: bytes) -> None:
        """Answer a publish in order with the PubAcks: when the held writes are committed, or now."""
        if self.holding:
            self.acks.append((reply, data))
        else:
            self.stream.server.publish_internal(reply, data)

    def respond_all(self, answers: list[tuple[str, bytes]]) -> None:
        """[`respond`][pyjetstream.client.msg.Msg.respond] for each pair, in order."""
        if self.holding:
            self.acks.extend(answers)
        elif answers:
            self.stream.server.publish_replies(answers)

    def signal(self, seq: int, subject: str) -> None:
        """Tell the consumers about a stored message: when the held writes are committed (they
        must not see it before it reached the OS), or now."""
        if self.holding:
            self.signals.append((seq, subject))
        else:
            self.stream.signal_consumers(seq, subject)

    def signal_run(self, first: int, subjects: list[str]) -> None:
        """`signal` for messages ``first`` onwards, on ``subjects``."""
        signals = zip(range(first, first + len(subjects)), subjects, strict=True)
        if self.holding:
            self.signals.extend(signals)
        else:
            self.stream.signal_stored(list(signals))

    # --- failures -------------------------------------------------------------------------------
    def store_failed(self, exc: StoreError) -> ApiError:
        """A write failed (the store took the batch's appends back): the PubAck error, and the
        batch's earlier PubAcks become it too; nothing of it is shown to consumers."""
        stream = self.stream
        stream.dedupe.forget_after(stream.store.fast_state().last_seq)
        error = self.write_error(exc)
        if self._batch is not None and self.acks:
            response = encode_pub_ack_error(stream.name, error)
            self.acks = [(reply, response) for reply, _ in self.acks]
            self.signals.clear()
        return error

    def _commit_failed(self, exc: Exception) -> None:
        """The commit failed (disk full, I/O error): the store took the batch back, so every
        publish of it is answered with the error at once (10023 when the disk is full, as
        nats-server) and nothing of it is shown to consumers or remembered as a duplicate."""
        stream = self.stream
        error = self.write_error(exc)
        stream.dedupe.forget_after(stream.store.fast_state().last_seq)
        acks, self.acks = self.acks, []
        self.signals.clear()
        response = encode_pub_ack_error(stream.name, error)
        publish = stream.server.publish_internal
        for reply, _ in acks:
            publish(reply, response)

    def write_error(self, exc: Exception) -> ApiError:
        """The PubAck error for a failed write; logged at most once every 10 s per stream.

        An I/O error (not a full disk) froze the store (``store.write_error``, nats-server's
        ``setWriteErrLocked``): said once, with one log line and an advisory; from then on
        every publish is answered with the error (nats-server leaves it unanswered) while
        reads, consumers and the API keep working, until the server restarts."""
        stream = self.stream
        werr = stream.store.write_error
        if werr is not None:
            if not self.frozen:
                self.frozen = True
                engine = stream.engine
                stream.server.logger.error(
                    "JetStream stream '%s > %s' critical write error: %s", engine.account_name, stream.name, werr
                )
                # Deferred: the advisory models (23 msgspec Structs) are not made at start.
                from pyjetstream.api.advisories import StreamWriteErrorAdvisory

                advisories.publish(
                    engine,
                    S.advisory_stream_write_error(stream.name),
                    StreamWriteErrorAdvisory(stream=stream.name, error=str(werr)),
                )
            return E.JSStreamStoreFailedF(err=str(exc))
        now = time.monotonic()
        if now - self._logged >= WRITE_ERROR_LOG_INTERVAL:
            self._logged = now
            stream.server.logger.error("JetStream failed to write stream '%s': %s", stream.name, exc)
        if isinstance(exc, ErrInsufficientResources):
            return E.JSInsufficientResourcesErr()
        return E.JSStreamStoreFailedF(err=str(exc))
