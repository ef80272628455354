"""Bringing a file stream's consumers back after a restart.

Every consumer directory of the stream's store (``obs/<name>/``) holds the consumer's definition
(``meta.inf``) and its state (``o.dat``: delivered, ack floor, pending acks, redelivery counts).
Like nats-server, ephemerals come back too and are then removed by their inactivity timer if
nobody resumes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.consumer_config import stamp_inactive_threshold, store_ack_policy
from pyjetstream.server.jetstream.consumer_persistence import decode_consumer_meta

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
            if state_error:
                logger.warning(
                    "JetStream consumer '%s > %s' starts without its stored state: %s", stream.name, name, state_error
                )
            meta_name, cfg, created = decode_consumer_meta(meta)
            cfg = stamp_inactive_threshold(cfg)
            store.update_config(store_ack_policy(cfg), cfg.max_deliver)
            consumer = Consumer(stream, cfg, meta_name or name, created, store)
            stream.add_consumer(consumer)
            consumer.start()
        except Exception as exc:  # one damaged consumer must not stop the others
            logger.error("JetStream could not recover consumer '%s > %s': %s", stream.name, name, exc)
            continue
        recovered.append(consumer)
    return recovered
