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
# Not re-exported as ``jetstream`` here: that name is the subpackage itself. Loaded on first use, so
# core-only users (and the CLI's ``pub``/``sub``) do not pay for importing it.
__all__ += ["JetStream", "JetStreamMsg", "new_jetstream"]

_JETSTREAM_NAMES = {"JetStream": "JetStream", "JetStreamMsg": "JetStreamMsg", "new_jetstream": "jetstream"}


def __getattr__(name: str) -> object:
    if name == "jetstream":
        import importlib

        return importlib.import_module("pyjetstream.client.jetstream")
    if name in _JETSTREAM_NAMES:
        from pyjetstream.client import jetstream as js_package

        value = getattr(js_package, _JETSTREAM_NAMES[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
