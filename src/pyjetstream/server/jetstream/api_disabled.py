"""``$JS.API`` of an account without JetStream: every request gets 10039 (nats-server ``jetstream_api.go``).

nats-server serves the API for every account (the system account imports ``$JS.API.>`` into each
one: one subscription, as here), and each handler checks ``acc.checkJetStream()`` after its
earlier checks (clustering required, a body it decodes first) and the required API level,
answering "JetStream not enabled for account" in the endpoint's own response type. The
templates (gone from 2.15) and the system account's META/SERVER/ACCOUNT requests get no answer
at all. A request no
handler takes — one a stream or consumer answers itself (``CONSUMER.MSG.NEXT``, ``DIRECT.GET``),
or an unknown ``$JS.API`` subject — gets the no-responders status a requester asks for.
"""

from __future__ import annotations

from typing import Any

from pyjetstream.api import errors as E
from pyjetstream.api.subjects import ApiEndpoint, api_handler_subjects, match_api_subject
from pyjetstream.server.jetstream.api_common import encode_response, error_response
from pyjetstream.server.jetstream.api_level import earlier_error, level_refusal

__all__ = ["DisabledApi"]

API_SUBJECTS = "$JS.API.>"
# Answered by a stream or consumer itself: no subscriber in an account without JetStream.
_SELF_ANSWERED = frozenset({ApiEndpoint.CONSUMER_MSG_NEXT})

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
        # nats-server's handlers check the account's JetStream last: after their earlier checks
        # (clustering, a body) and the required API level.
        strict = getattr(self.account.options, "jetstream_strict", True)
        error = earlier_error(match.endpoint, payload, strict)
        response = level_refusal(match.endpoint, hdr, payload, strict)
        if response is None:
            response = error_response(match.endpoint, error or E.JSNotEnabledForAccountErr())
        if response is None:  # taken by nats-server's API namespace, but not answered there either
            return
        self.account.publish_internal(reply, encode_response(response))
