"""The simplified JetStream client API (nats.go ``jetstream`` in asyncio Python).

    nc = await pyjetstream.client.connect("nats://127.0.0.1:4222")
    js = jetstream(nc)
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    ack = await js.publish("ORDERS.new", b"hello", msg_id="id-1")
    consumer = await stream.create_or_update_consumer(ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT))
    async for msg in await consumer.fetch(10):
        await msg.ack()

Modules: `context` (JetStream), `stream`, `consumer` / `pull` / `consume`
(receiving), `ordered`, [`msg`][pyjetstream.client.jetstream.msg], `publish`, [`errors`][pyjetstream.client.jetstream.errors], `kv`,
`object_store`, [`sync`][pyjetstream.client.jetstream.sync] (blocking facade), `config` / `models` (the configs
and infos, every duration in seconds: `pyjetstream.api.durations`).
"""

from pyjetstream.api.ack import MsgMetadata
from pyjetstream.api.enums import (
    AckPolicy,
    DeliverPolicy,
    DiscardPolicy,
    PriorityPolicy,
    ReplayPolicy,
    RetentionPolicy,
    StorageType,
)
from pyjetstream.api.kv import KvOperation
from pyjetstream.api.models_account import AccountInfo
from pyjetstream.api.models_common import ExternalStream
from pyjetstream.api.models_msg import PubAck
from pyjetstream.api.models_stream import StreamConsumerSource, StreamSource
from pyjetstream.api.objstore import ObjectInfo, ObjectLink
from pyjetstream.client.jetstream import errors
from pyjetstream.client.jetstream.batch import BatchGap, BatchPublisher, FastPubAck, FastPublisher
from pyjetstream.client.jetstream.config import ConsumerConfig, StreamConfig
from pyjetstream.client.jetstream.consume import ConsumeContext, MessagesContext
from pyjetstream.client.jetstream.consumer import PullConsumer
from pyjetstream.client.jetstream.context import ConsumerResetResult, JetStream, jetstream, new
from pyjetstream.client.jetstream.counter import Counter, CounterEntry
from pyjetstream.client.jetstream.errors import *  # noqa: F403
from pyjetstream.client.jetstream.kv import (
    KeyValue,
    KeyValueConfig,
    KeyValueEntry,
    KeyValueStatus,
    KeyWatcher,
)
from pyjetstream.client.jetstream.models import ConsumerInfo, StreamConsumerLimits, StreamInfo
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.object_store import (
    ObjectMeta,
    ObjectResult,
    ObjectStore,
    ObjectStoreConfig,
    ObjectStoreStatus,
    ObjectWatcher,
)
from pyjetstream.client.jetstream.ordered import (
    OrderedConsumeContext,
    OrderedConsumer,
    OrderedConsumerConfig,
    OrderedMessagesContext,
)
from pyjetstream.client.jetstream.publish import (
    SCHEDULE_DAILY,
    SCHEDULE_HOURLY,
    SCHEDULE_MONTHLY,
    SCHEDULE_WEEKLY,
    SCHEDULE_YEARLY,
    TTL_NEVER,
    MsgSchedule,
    PubAckFuture,
    PublishedMsg,
)
from pyjetstream.client.jetstream.pull import MessageBatch
from pyjetstream.client.jetstream.push import PushConsumeContext, PushConsumer
from pyjetstream.client.jetstream.stream import RawStreamMsg, Stream

Consumer = PullConsumer
Msg = JetStreamMsg

__all__ = [
    "AccountInfo",
    "AckPolicy",
    "BatchGap",
    "BatchPublisher",
    "ConsumeContext",
    "Consumer",
    "ConsumerConfig",
    "ConsumerInfo",
    "ConsumerResetResult",
    "Counter",
    "CounterEntry",
    "DeliverPolicy",
    "DiscardPolicy",
    "ExternalStream",
    "FastPubAck",
    "FastPublisher",
    "JetStream",
    "JetStreamMsg",
    "KeyValue",
    "KeyValueConfig",
    "KeyValueEntry",
    "KeyValueStatus",
    "KeyWatcher",
    "KvOperation",
    "MessageBatch",
    "MessagesContext",
    "Msg",
    "MsgMetadata",
    "MsgSchedule",
    "ObjectInfo",
    "ObjectLink",
    "ObjectMeta",
    "ObjectResult",
    "ObjectStore",
    "ObjectStoreConfig",
    "ObjectStoreStatus",
    "ObjectWatcher",
    "OrderedConsumeContext",
    "OrderedConsumer",
    "OrderedConsumerConfig",
    "OrderedMessagesContext",
    "PriorityPolicy",
    "PubAck",
    "PubAckFuture",
    "PublishedMsg",
    "PullConsumer",
    "PushConsumeContext",
    "PushConsumer",
    "RawStreamMsg",
    "ReplayPolicy",
    "SCHEDULE_DAILY",
    "SCHEDULE_HOURLY",
    "SCHEDULE_MONTHLY",
    "SCHEDULE_WEEKLY",
    "SCHEDULE_YEARLY",
    "RetentionPolicy",
    "StorageType",
    "Stream",
    "StreamConfig",
    "StreamConsumerLimits",
    "StreamConsumerSource",
    "StreamInfo",
    "StreamSource",
    "TTL_NEVER",
    "errors",
    "jetstream",
    "new",
    *errors.__all__,
]
