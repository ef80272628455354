"""Dispatch of ``$JS.API`` requests to their handlers, and the replies (nats-server ``jetstream_api.go``).

The router subscribes to exactly the subjects nats-server subscribes to, so a request to an
unknown API subject gets the same 503 no-responders answer. Requests without a reply subject are
ignored. Handlers return a response model (with ``error`` set on failure); the router encodes it
with Go's HTML escaping (``<`` ``>`` ``&`` as ``\\u003c`` …) and counts API totals and errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyjetstream.api.headers import no_responders_block
from pyjetstream.api.responses import ApiResponse
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch, match_api_subject
from pyjetstream.server.jetstream import api_stream
from pyjetstream.server.jetstream.api_common import encode_response
from pyjetstream.server.jetstream.api_level import level_refusal

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine

# A handler answers with a response, a (response, header block) pair, or None (no answer).
Handler = Callable[["JetStreamEngine", ApiMatch, bytes, str], ApiResponse | tuple[ApiResponse, bytes] | None]

# nats-server subscribes to the API namespace once and dispatches inside, so a request to an
# endpoint it does not serve gets no reply at all (clients see a timeout, as with nats-server).
# DIRECT.GET and CONSUMER.MSG.NEXT are different: nats-server serves them with per-stream and
# per-consumer subscriptions, so a request nobody serves gets 503 no-responders (2.11+ with a
# Nats-Subject header); the router answers those for the missing subscriber.
API_SUBSCRIPTION = "$JS.API.>"
_SELF_SERVED = ("$JS.API.DIRECT.GET.", "$JS.API.CONSUMER.MSG.NEXT.")


# Answered by the consumer's own subscription. nats-server has no API subscription for MSG.NEXT
# (a missing consumer: 503 no responders) but its API namespace does take RESET (no answer).
_CONSUMER_OWN = (ApiEndpoint.CONSUMER_MSG_NEXT,)


# Handler modules imported at the first request one of their endpoints gets, so that a server
# start imports only what it uses (the consumer machinery is a third of the package; snapshots
# bring the S2 codec): their endpoints, which tests/jetstream/test_api_router.py checks against
# each module's HANDLERS.
LAZY_HANDLERS: dict[str, tuple[ApiEndpoint, ...]] = {
    "pyjetstream.server.jetstream.api_consumer": (
        ApiEndpoint.CONSUMER_CREATE,
        ApiEndpoint.CONSUMER_DURABLE_CREATE,
        ApiEndpoint.CONSUMER_INFO,
        ApiEndpoint.CONSUMER_DELETE,
        ApiEndpoint.CONSUMER_NAMES,
        ApiEndpoint.CONSUMER_LIST,
        ApiEndpoint.CONSUMER_PAUSE,
        ApiEndpoint.CONSUMER_UNPIN,
    ),
    "pyjetstream.server.jetstream.snapshot": (ApiEndpoint.STREAM_SNAPSHOT, ApiEndpoint.STREAM_RESTORE),
    "pyjetstream.server.jetstream.api_account": (ApiEndpoint.INFO,),
    # (clustered-only requests, all refused by a single server)
    "pyjetstream.server.jetstream.api_cluster": (
        ApiEndpoint.STREAM_LEADER_STEPDOWN,
        ApiEndpoint.STREAM_PEER_REMOVE,
        ApiEndpoint.STREAM_PEER_EVACUATE,
        ApiEndpoint.STREAM_CANCEL_MOVE,
        ApiEndpoint.CONSUMER_LEADER_STEPDOWN,
    ),
}
_LAZY_MODULE = {endpoint: module for module, endpoints in LAZY_HANDLERS.items() for endpoint in endpoints}


def _handlers() -> dict[ApiEndpoint, Handler]:
    table: dict[ApiEndpoint, Handler] = {}
    table.update(api_stream.HANDLERS)
    return table


class ApiRouter:
    def __init__(self, engine: JetStreamEngine) -> None:
        self.engine = engine
        self.handlers = _handlers()
        self._subs: list[Any] = []
        # The match result last found to hold a live subscriber besides this router
        # (`_no_responders_unless_served`; one: it keeps the subscriptions in it alive).
        self._served: Any = None

    def handler(self, endpoint: ApiEndpoint) -> Handler | None:
        """The handler of ``endpoint`` (its module imported at its first request: `LAZY_HANDLERS`)."""
        handler = self.handlers.get(endpoint)
        if handler is None and endpoint in _LAZY_MODULE:
            self.handlers.update(importlib.import_module(_LAZY_MODULE[endpoint]).HANDLERS)
            handler = self.handlers.get(endpoint)
        return handler

    def subscribe(self) -> None:
        server = self.engine.server
        # ``$JS.<domain>.API.>`` reaches it through the account's subject mappings (nats-server's:
        # `Account.enable_jetstream`), not a subscription of its own.
        self._subs.append(server.subscribe_internal(API_SUBSCRIPTION, self.on_request))

    def _no_responders_unless_served(self, subject: str, reply: str, client: Any) -> None:
        """A DIRECT.GET / MSG.NEXT request no stream or consumer subscribes to: no-responders.
        Called only for a requester that asked for them (``client.no_responders``)."""
        # Every pull request and direct get passes here (``$JS.API.>`` matches them too): plain
        # loops that stop at the first other live subscriber, no generator or set per request
        # (~1 µs of the ~4.5 a waiting request cost).
        # A sublist's match result is a new object whenever a subscription under it comes or goes
        # (and a subscription is closed as it is removed): a result found served stays so, and a
        # run of requests to one consumer or stream is one lookup each.
        account = self.engine.server
        result = account.sublist.match(subject)
        if result is self._served:
            return
        psubs, qsubs = result
        for group in qsubs:  # (first: a stream's direct gets are a queue group)
            for sub in group:
                if not sub.closed:
                    self._served = result
                    return
        mine = self._subs
        for sub in psubs:
            if not sub.closed and sub not in mine:
                self._served = result
                return
        account.server.no_responders(client, reply, subject)

    def shutdown(self) -> None:
        for sub in self._subs:
            sub.unsubscribe()
        self._subs.clear()
        self._served = None

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        if subject.startswith(_SELF_SERVED):
            if client is not None and getattr(client, "no_responders", False):
                self._no_responders_unless_served(subject, reply, client)
            return
        match = match_api_subject(subject)
        if match is None:
            return
        if match.endpoint in _CONSUMER_OWN:
            # Each pull consumer subscribes its own MSG.NEXT subject and answers there. For a
            # consumer that does not exist nats-server has no subscription: a requester that
            # asked for it gets the core 503 no-responders status (clients rely on it, 2.11+).
            stream = self.engine.streams.get(match.stream)
            if (stream is None or match.consumer not in stream.consumers) and client is not None:
                if client.no_responders:
                    self.engine.server.publish_internal(reply, b"", hdr=no_responders_block(subject))
            return
        handler = self.handler(match.endpoint)  # (none for CONSUMER.RESET: consumers answer it)
        if handler is None:
            return
        # Every handler of nats-server refuses a Nats-Required-Api-Level above its own (10185),
        # most before anything else: checked here for all, so none can forget it.
        refused = level_refusal(match.endpoint, hdr, payload, self.engine.strict)
        if refused is not None:
            self.engine.api_answered(True)
            self.engine.server.publish_internal(reply, encode_response(refused))
            return
        # The request's header block, for the few handlers that read one (Nats-Stream-Identity);
        # one request at a time on the loop, so an attribute is enough.
        self.engine.request_hdr = hdr
        try:
            response = handler(self.engine, match, payload, reply)
        except Exception:
            self.engine.server.logger.exception("JetStream API handler for %s failed", subject)
            self.engine.api_answered(True)
            return
        finally:
            self.engine.request_hdr = None
        # Counted once answered, as nats-server's trackAPI in sendAPIResponse: the account INFO
        # a request gets does not count that request yet.
        if response is None:
            self.engine.api_answered(False)
            return
        reply_hdr = None
        if isinstance(response, tuple):  # (response, header block): an answer with headers
            response, reply_hdr = response
        self.engine.api_answered(response.error is not None)
        self.engine.server.publish_internal(reply, encode_response(response), hdr=reply_hdr)
