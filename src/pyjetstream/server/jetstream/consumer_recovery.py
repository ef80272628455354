"""Bringing a file stream's consumers back after a restart.

Every consumer directory of the stream's store (``obs/<name>/``) holds the consumer's definition
(``meta.inf``) and its state (``o.dat``: delivered, ack floor, pending acks, redelivery counts).
A consumer whose state cannot be read keeps its definition and starts again from the stream's
first sequence (`_from_first`).
Like nats-server, ephemerals come back too and are then removed by their inactivity timer if
nobody resumes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.consumer_config import stamp_inactive_threshold, store_ack_policy
from pyjetstream.server.jetstream.consumer_persistence import decode_consumer_meta
from pyjetstream.server.jetstream.store.base import ConsumerState, SequencePair

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["recover_consumers"]


def recover_consumers(stream: Stream) -> list[Consumer]:
    """Recreate the stream's persisted consumers with their state; returns them."""
    recovered: list[Consumer] = []
    logger = stream.server.logger
    for name in stream.store.consumer_names():
        try:
            store = stream.store.consumer_store(name)
            meta = store.read_meta()
            if meta is None:
                # A directory without a definition cannot be resumed: drop it.
                store.delete()
                continue
            state_error = getattr(store, "state_error", None)
            meta_name, cfg, created = decode_consumer_meta(meta)
            cfg = stamp_inactive_threshold(cfg)
            store.update_config(store_ack_policy(cfg), cfg.max_deliver)
            consumer = Consumer(stream, cfg, meta_name or name, created, store)
            stream.add_consumer(consumer)
            if state_error:
                first = _from_first(stream)
                logger.warning(
                    "JetStream consumer '%s > %s' starts without its stored state (%s): delivering again "
                    "from the stream's first sequence %d",
                    stream.name,
                    name,
                    state_error,
                    first.delivered.stream_seq + 1,
                )
                consumer.start(restored=first)
            else:
                consumer.start()
        except Exception as exc:  # one damaged consumer must not stop the others
            logger.error("JetStream could not recover consumer '%s > %s': %s", stream.name, name, exc)
            continue
        recovered.append(consumer)
    return recovered


def _from_first(stream: Stream) -> ConsumerState:
    """Where a consumer whose stored state is damaged starts: the stream's first sequence,
    whatever its deliver policy (a deliver-new consumer would otherwise skip every message it had
    not yet acknowledged): it redelivers, never drops (issue 27). nats-server's
    ``readStoredState`` ignores the error and selects the start again (``selectStartingSeqNo``)."""
    first = stream.store.fast_state().first_seq
    floor = max(first - 1, 0)
    return ConsumerState(delivered=SequencePair(0, floor), ack_floor=SequencePair(0, floor))
