"""The core NATS client: ``client = await pyjetstream.client.connect(url)``.

Publish/subscribe/request over one connection with write coalescing, a ``flush()`` that orders after
everything buffered, drain, reconnect with subscription replay, TLS and token/user/nkey/JWT auth.
"""

from pyjetstream.client.connection import Client, Status, connect
from pyjetstream.client.errors import (
    AuthorizationError,
    BadSubjectError,
    BadSubscriptionError,
    ConnectionClosedError,
    ConnectionDrainingError,
    DrainTimeoutError,
    HeaderError,
    MaxPayloadError,
    NatsError,
    NoRespondersError,
    NoServersError,
    OutboundBufferLimitError,
    PermissionsViolationError,
    ProtocolError,
    SlowConsumerError,
    StaleConnectionError,
    TimeoutError,
)
from pyjetstream.client.inbox import NUID, new_inbox, next_nuid
from pyjetstream.client.msg import Msg
from pyjetstream.client.subscription import Subscription
from pyjetstream.protocol import HeaderBlock

__all__ = [
    "NUID",
    "AuthorizationError",
    "BadSubjectError",
    "BadSubscriptionError",
    "Client",
    "ConnectionClosedError",
    "ConnectionDrainingError",
    "DrainTimeoutError",
    "HeaderBlock",
    "HeaderError",
    "MaxPayloadError",
    "Msg",
    "NatsError",
    "NoRespondersError",
    "NoServersError",
    "OutboundBufferLimitError",
    "PermissionsViolationError",
    "ProtocolError",
    "SlowConsumerError",
    "StaleConnectionError",
    "Status",
    "Subscription",
    "TimeoutError",
    "connect",
    "new_inbox",
    "next_nuid",
]

# JetStream (simplified API, nats.go ``jetstream`` package): the subpackage ``pyjetstream.client.jetstream``.
# Not re-exported as ``jetstream`` here: that name is the subpackage itself.
from pyjetstream.client.jetstream import JetStream, JetStreamMsg
from pyjetstream.client.jetstream import jetstream as new_jetstream

__all__ += ["JetStream", "JetStreamMsg", "new_jetstream"]
