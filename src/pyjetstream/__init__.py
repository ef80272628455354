"""pyjetstream: NATS JetStream in Python — an embedded server, a simplified client, a Spark source, a CLI.

    import pyjetstream as pjs
    nc = await pjs.connect("nats://127.0.0.1:4222")
    js = pjs.jetstream(nc)
    stream = await js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))

Names are loaded on first use, so ``import pyjetstream`` (and the CLI's start-up) stays fast.
"""

from __future__ import annotations

import importlib

from pyjetstream import _compiled

# ``typing.TYPE_CHECKING`` without importing ``typing`` here: its import (msgspec and asyncio make it
# anyway, later) set off CPython's first collections of every server start, before the command
# pauses the collector (`pyjetstream.cli.main._run`). Type checkers read the name as True.
TYPE_CHECKING = False

# The compiled hot modules, when a build from this very source is there (else pure Python).
_compiled.install()

if TYPE_CHECKING:
    from typing import Any

    from pyjetstream.client import Client, Msg, NatsError, Subscription, connect
    from pyjetstream.client.jetstream import (
        AckPolicy,
        ConsumerConfig,
        DeliverPolicy,
        DiscardPolicy,
        JetStream,
        KeyValueConfig,
        MsgSchedule,
        ObjectMeta,
        ObjectStoreConfig,
        OrderedConsumerConfig,
        PriorityPolicy,
        PubAck,
        ReplayPolicy,
        RetentionPolicy,
        StorageType,
        StreamConfig,
        errors,
        jetstream,
        sync,
    )
    from pyjetstream.server.server import Server
    from pyjetstream.server.thread import ServerThread

# name -> module it comes from
_EXPORTS = {
    "Server": "pyjetstream.server",
    "ServerThread": "pyjetstream.server",
    "connect": "pyjetstream.client",
    "Client": "pyjetstream.client",
    "Msg": "pyjetstream.client",
    "Subscription": "pyjetstream.client",
    "NatsError": "pyjetstream.client",
    **{
        name: "pyjetstream.client.jetstream"
        for name in (
            "jetstream",
            "JetStream",
            "StreamConfig",
            "ConsumerConfig",
            "AckPolicy",
            "DeliverPolicy",
            "ReplayPolicy",
            "RetentionPolicy",
            "DiscardPolicy",
            "StorageType",
            "OrderedConsumerConfig",
            "KeyValueConfig",
            "ObjectStoreConfig",
            "ObjectMeta",
            "PubAck",
            "MsgSchedule",
            "PriorityPolicy",
            "errors",
            "sync",
        )
    },
}

__all__ = [
    "AckPolicy",
    "Client",
    "ConsumerConfig",
    "DeliverPolicy",
    "DiscardPolicy",
    "JetStream",
    "KeyValueConfig",
    "Msg",
    "MsgSchedule",
    "NatsError",
    "ObjectMeta",
    "ObjectStoreConfig",
    "OrderedConsumerConfig",
    "PriorityPolicy",
    "PubAck",
    "ReplayPolicy",
    "RetentionPolicy",
    "Server",
    "ServerThread",
    "StorageType",
    "StreamConfig",
    "Subscription",
    "connect",
    "errors",
    "jetstream",
    "sync",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except AttributeError:  # a submodule (``sync``) is imported on demand
        value = importlib.import_module(f"{module}.{name}")
    globals()[name] = value
    return value
