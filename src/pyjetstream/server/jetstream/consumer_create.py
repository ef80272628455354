"""Adding a consumer to a stream: create, update and the ``action`` rules (``addConsumerWithAssignment``).

``add_consumer`` is what ``CONSUMER.CREATE`` ends in once the request itself was checked; it
raises `JetStreamApiError` with nats-server's error for anything
it refuses. Creating a consumer that exists is an update (⟨2.10+⟩ unless ``action`` says
``create`` with a different config, or ``update`` for a missing one).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api import errors as E
from pyjetstream.api.enums import AckPolicy, ConsumerAction, DeliverPolicy, RetentionPolicy, StorageType
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.versioning import copy_required_level
from pyjetstream.protocol.subjects import subjects_overlap
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.consumer_config import (
    ConsumerCaps,
    apply_defaults,
    check_config,
    check_name,
    check_update,
    filters_of,
    new_ephemeral_name,
    stamp_inactive_threshold,
    store_ack_policy,
)
from pyjetstream.server.jetstream.consumer_persistence import encode_consumer_meta
from pyjetstream.server.jetstream.store.base import ConsumerStoreBase, StoreError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["add_consumer", "open_consumer_store"]


def _raise(error: object) -> None:
    if error is not None:
        raise JetStreamApiError(error)  # type: ignore[arg-type]


def _limitable(consumer: Consumer) -> bool:
    """Counted against ``max_consumers`` and work-queue exclusivity: not a direct or ⟨2.14+⟩
    sourcing consumer (nats-server ``numLimitableConsumers``)."""
    return not (consumer.cfg.direct or consumer.cfg.sourcing)


def _partition_unique(stream: Stream, name: str, filters: list[str]) -> bool:
    """Workqueue streams: no two public consumers may select the same subjects (direct and
    sourcing consumers are ignored, ``partitionUnique``)."""
    for other in stream.consumers.values():
        if other.name == name or not _limitable(other):
            continue
        theirs = filters_of(other.cfg)
        if not theirs or not filters:
            return False
        if any(subjects_overlap(a, b) for a in filters for b in theirs):
            return False
    return True


def open_consumer_store(stream: Stream, name: str, cfg: ConsumerConfig) -> ConsumerStoreBase | None:
    """The persisted state of a file stream's consumer (``None``: in memory only). A direct
    consumer (a mirror's or source's on its origin) has none, as in nats-server: ours would
    write its state on every delivery and bring it back, orphaned, after a restart."""
    if stream.cfg.storage != StorageType.FILE or cfg.mem_storage or cfg.direct:
        return None
    store = stream.store.consumer_store(name)
    store.update_config(store_ack_policy(cfg), cfg.max_deliver)
    return store


def consumer_caps(stream: Stream) -> ConsumerCaps:
    """The server's ``jetstream { limits {} }`` and the account's max_ack_pending, for a config."""
    server = getattr(stream.server.options, "jetstream_limits", None)
    return ConsumerCaps(
        max_ack_pending=server.max_ack_pending if server is not None else 0,
        max_request_batch=server.max_request_batch if server is not None else 0,
        account_max_ack_pending=stream.engine.limits.max_ack_pending,
    )


def add_consumer(
    stream: Stream,
    cfg: ConsumerConfig,
    action: ConsumerAction = ConsumerAction.CREATE_OR_UPDATE,
    pedantic: bool = False,
) -> Consumer:
    """Create (or update) a consumer from a request's config (``addConsumerWithAssignment``):
    defaults (refused with ``pedantic`` where they would change it), checks, then the create or
    update rules; raises JetStreamApiError."""
    caps = consumer_caps(stream)
    cfg = apply_defaults(cfg, stream.cfg, pedantic, caps)
    _raise(check_config(cfg, stream.cfg, caps=caps))
    name = cfg.durable_name or cfg.name
    existing = stream.consumers.get(name) if name else None
    if existing is not None:
        # ⟨2.11+⟩ only CONSUMER.PAUSE changes a pause: an update keeps the current one.
        cfg = msgspec.structs.replace(cfg, pause_until=existing.cfg.pause_until)
        new_cfg = stamp_inactive_threshold(cfg)
        # nats-server compares the request as sent (an ephemeral's default inactive_threshold is
        # not stamped yet), its required level taken from the stored config (copyConsumerMetadata).
        compared = msgspec.structs.replace(cfg, metadata=copy_required_level(cfg.metadata, existing.cfg.metadata))
        if action == ConsumerAction.CREATE and compared != existing.cfg:
            raise JetStreamApiError(E.JSConsumerAlreadyExists())
        if stream.cfg.retention == RetentionPolicy.WORKQUEUE and not _partition_unique(
            stream, name, filters_of(new_cfg)
        ):
            raise JetStreamApiError(E.JSConsumerWQConsumerNotUniqueErr())
        server = stream.server
        _raise(check_update(existing.cfg, new_cfg, server.has_interest))
        if new_cfg != existing.cfg:
            existing.update_config(new_cfg)
        if new_cfg.sourcing:
            # ⟨2.14+⟩ A sourcing stream's create request for its durable consumer (ADR-60) is
            # also a reset to the ack floor: delivery sequences from 1, nothing pending.
            existing.reset(0)
        return existing
    if action == ConsumerAction.UPDATE:
        raise JetStreamApiError(E.JSConsumerDoesNotExist())
    max_consumers = stream.cfg.max_consumers
    public = stream.csl.limitable
    if max_consumers > 0 and public >= max_consumers:
        raise JetStreamApiError(E.JSMaximumConsumersLimitErr())
    if not cfg.direct:
        _raise(stream.engine.check_consumer_limit(public, max_consumers))
    if stream.cfg.retention == RetentionPolicy.WORKQUEUE and not cfg.direct and not cfg.sourcing:
        if cfg.ack_policy not in (AckPolicy.EXPLICIT, AckPolicy.FLOW_CONTROL):
            raise JetStreamApiError(E.JSConsumerWQRequiresExplicitAckErr())
        if cfg.deliver_policy != DeliverPolicy.ALL:
            raise JetStreamApiError(E.JSConsumerWQConsumerNotDeliverAllErr())
        if public:
            if not filters_of(cfg):
                raise JetStreamApiError(E.JSConsumerWQMultipleUnfilteredErr())
            if not _partition_unique(stream, name, filters_of(cfg)):
                raise JetStreamApiError(E.JSConsumerWQConsumerNotUniqueErr())
    if not name:
        # Legacy ephemeral: a server-chosen name, which (as in nats-server) stays out of the config.
        name = new_ephemeral_name()
        while name in stream.consumers:
            name = new_ephemeral_name()
    _raise(check_name(name))
    cfg = stamp_inactive_threshold(cfg)
    created = time.time_ns()
    try:
        store = open_consumer_store(stream, name, cfg)
        if store is not None:
            store.write_meta(encode_consumer_meta(name, cfg, created))
    except (StoreError, OSError) as exc:
        raise JetStreamApiError(E.JSConsumerStoreFailedErrF(err=str(exc))) from exc
    consumer = Consumer(stream, cfg, name, created, store)
    stream.add_consumer(consumer)
    consumer.start()
    advisories.consumer_action(stream.engine, stream.name, name, "create")
    return consumer
