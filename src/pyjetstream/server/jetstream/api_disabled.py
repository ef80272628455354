"""``$JS.API`` of an account without JetStream: every request gets 10039 (nats-server ``jetstream_api.go``).

nats-server serves the API for every account (the system account imports ``$JS.API.>`` into each
one: one subscription, as here), and each handler first checks ``acc.JetStreamEnabled()``,
answering "JetStream not enabled for account" in the endpoint's own response type. A request no
handler takes — one a stream or consumer answers itself (``CONSUMER.MSG.NEXT``, ``DIRECT.GET``),
or an unknown ``$JS.API`` subject — gets the no-responders status a requester asks for.
"""

from __future__ import annotations

from typing import Any

from pyjetstream.api import errors as E
from pyjetstream.api import responses as R
from pyjetstream.api.subjects import ApiEndpoint, api_handler_subjects, match_api_subject
from pyjetstream.server.jetstream.api_common import encode_response

__all__ = ["RESPONSE_TYPES", "DisabledApi"]

#: The response model of each endpoint (its ``type`` string and paging fields).
RESPONSE_TYPES: dict[ApiEndpoint, type[R.ApiResponse]] = {
    ApiEndpoint.INFO: R.AccountInfoResponse,
    ApiEndpoint.STREAM_CREATE: R.StreamCreateResponse,
    ApiEndpoint.STREAM_UPDATE: R.StreamUpdateResponse,
    ApiEndpoint.STREAM_NAMES: R.StreamNamesResponse,
    ApiEndpoint.STREAM_LIST: R.StreamListResponse,
    ApiEndpoint.STREAM_INFO: R.StreamInfoResponse,
    ApiEndpoint.STREAM_DELETE: R.StreamDeleteResponse,
    ApiEndpoint.STREAM_PURGE: R.StreamPurgeResponse,
    ApiEndpoint.STREAM_SNAPSHOT: R.StreamSnapshotResponse,
    ApiEndpoint.STREAM_RESTORE: R.StreamRestoreResponse,
    ApiEndpoint.STREAM_MSG_GET: R.MsgGetResponse,
    ApiEndpoint.STREAM_MSG_DELETE: R.MsgDeleteResponse,
    ApiEndpoint.STREAM_PEER_REMOVE: R.StreamRemovePeerResponse,
    ApiEndpoint.STREAM_LEADER_STEPDOWN: R.StreamLeaderStepDownResponse,
    ApiEndpoint.TEMPLATE_CREATE: R.StreamTemplateCreateResponse,
    ApiEndpoint.TEMPLATE_NAMES: R.StreamTemplateNamesResponse,
    ApiEndpoint.TEMPLATE_INFO: R.StreamTemplateInfoResponse,
    ApiEndpoint.TEMPLATE_DELETE: R.StreamTemplateDeleteResponse,
    ApiEndpoint.CONSUMER_CREATE: R.ConsumerCreateResponse,
    ApiEndpoint.CONSUMER_DURABLE_CREATE: R.ConsumerCreateResponse,
    ApiEndpoint.CONSUMER_NAMES: R.ConsumerNamesResponse,
    ApiEndpoint.CONSUMER_LIST: R.ConsumerListResponse,
    ApiEndpoint.CONSUMER_INFO: R.ConsumerInfoResponse,
    ApiEndpoint.CONSUMER_DELETE: R.ConsumerDeleteResponse,
    ApiEndpoint.CONSUMER_LEADER_STEPDOWN: R.ConsumerLeaderStepDownResponse,
    ApiEndpoint.CONSUMER_PAUSE: R.ConsumerPauseResponse,
    ApiEndpoint.CONSUMER_UNPIN: R.ConsumerUnpinResponse,
    ApiEndpoint.META_LEADER_STEPDOWN: R.MetaLeaderStepDownResponse,
    ApiEndpoint.SERVER_REMOVE: R.MetaServerRemoveResponse,
    ApiEndpoint.ACCOUNT_PURGE: R.AccountPurgeResponse,
}

API_SUBJECTS = "$JS.API.>"
# Answered by a stream or consumer itself: no subscriber in an account without JetStream.
_SELF_ANSWERED = frozenset(
    {ApiEndpoint.CONSUMER_MSG_NEXT, ApiEndpoint.ACCOUNT_STREAM_MOVE, ApiEndpoint.ACCOUNT_STREAM_CANCEL_MOVE}
)

# What nats-server's API handlers take (the rest: nobody there to answer).
_HANDLED = frozenset(endpoint for endpoint, _ in api_handler_subjects(_SELF_ANSWERED))


class DisabledApi:
    """The API subscriptions of an account without JetStream (``account`` is its Account)."""

    def __init__(self, account: Any) -> None:
        self.account = account
        self._subs: list[Any] = []

    def subscribe(self) -> None:
        self._subs.append(self.account.subscribe_internal(API_SUBJECTS, self.on_request))

    def shutdown(self) -> None:
        for sub in self._subs:
            sub.unsubscribe()
        self._subs.clear()

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        match = match_api_subject(subject)
        if match is None or match.endpoint not in _HANDLED:
            if client is not None and client.no_responders:  # as when nobody subscribes to it
                self.account.server.no_responders(client, reply, subject)
            return
        model = RESPONSE_TYPES.get(match.endpoint)
        if model is None:  # taken by nats-server's API namespace, but not answered there either
            return
        response = model(error=E.JSNotEnabledForAccountErr())
        self.account.publish_internal(reply, encode_response(response))
