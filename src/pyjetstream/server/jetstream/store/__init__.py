"""JetStream storage engine: the MessageStore interface, MemoryStore and FileStore.

Plain synchronous, single-threaded classes (no asyncio). How the stream layer drives them:

* publishes handled in one client read (or event-loop turn) go inside ``with store.batch():`` and are
  acknowledged after the block exits (that is when they are written to the OS — and fsynced
  with ``sync="always"``); a lone ``store_msg`` call writes before it returns;
* a timer at ``next_expiry()`` calls ``expire_msgs()``;
* with ``sync="interval"`` a timer every ``FileStoreConfig.sync_interval`` seconds calls
  ``sync()`` — or runs ``store.sync_later()`` in a worker thread to keep fsync off the loop;
* stream and consumer definitions go through ``write_meta`` / ``consumer_store(...).write_meta``
  and come back after a restart with ``read_meta`` / ``consumer_names``.

See ``base`` for the contract and ``filestore`` for the on-disk format and guarantees.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .base import (
    ACK_ALL,
    ACK_EXPLICIT,
    ACK_NONE,
    COMPRESSION_NONE,
    COMPRESSION_S2,
    DISCARD_NEW,
    DISCARD_OLD,
    ConsumerState,
    ConsumerStoreBase,
    ErrBadConsumerState,
    ErrCorruptRecord,
    ErrInsufficientResources,
    ErrInvalidSequence,
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    ErrNoAckPolicy,
    ErrSequenceMismatch,
    ErrStoreClosed,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    ErrStoreWrite,
    LostData,
    MessageStore,
    SequencePair,
    SimpleState,
    StoreConfig,
    StoredMsg,
    StoreError,
    StreamState,
)
from .filestore import SYNC_ALWAYS, SYNC_INTERVAL, FileStore, FileStoreConfig

if TYPE_CHECKING:
    from .consumer_store import FileConsumerStore, MemoryConsumerStore
    from .memstore import MemoryStore

# Imported on first use (PEP 562): a server restarting file streams without consumers does not
# load the consumer stores or the memory store (issue 24, tests/server/test_startup_imports.py).
_LAZY = {"FileConsumerStore": "consumer_store", "MemoryConsumerStore": "consumer_store", "MemoryStore": "memstore"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "ACK_ALL",
    "ACK_EXPLICIT",
    "ACK_NONE",
    "COMPRESSION_NONE",
    "COMPRESSION_S2",
    "DISCARD_NEW",
    "DISCARD_OLD",
    "SYNC_ALWAYS",
    "SYNC_INTERVAL",
    "ConsumerState",
    "ConsumerStoreBase",
    "ErrBadConsumerState",
    "ErrCorruptRecord",
    "ErrInsufficientResources",
    "ErrInvalidSequence",
    "ErrMaxBytes",
    "ErrMaxMsgs",
    "ErrMaxMsgsPerSubject",
    "ErrMsgTooLarge",
    "ErrNoAckPolicy",
    "ErrSequenceMismatch",
    "ErrStoreClosed",
    "ErrStoreEOF",
    "ErrStoreMsgNotFound",
    "ErrStoreWrite",
    "FileConsumerStore",
    "FileStore",
    "FileStoreConfig",
    "LostData",
    "MemoryConsumerStore",
    "MemoryStore",
    "MessageStore",
    "SequencePair",
    "SimpleState",
    "StoreConfig",
    "StoreError",
    "StoredMsg",
    "StreamState",
]
