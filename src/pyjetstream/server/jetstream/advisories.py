"""Publishing JetStream advisories (``$JS.EVENT.ADVISORY.…``) into the account.

Advisories are cheap when nobody listens: the router finds no subscription and drops them. Their
models (``pyjetstream.api.advisories``, 23 msgspec Structs) are imported at the first advisory, not
at start (a restart's CPU is mostly imports; tests/server/test_startup_imports.py).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from pyjetstream.api import subjects as S
from pyjetstream.api.enums import AdvisoryAction
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.server.jetstream.api_common import encode_response

if TYPE_CHECKING:
    from pyjetstream.api.advisories import TypedEvent
    from pyjetstream.server.jetstream.engine import JetStreamEngine

_STREAM_SUBJECTS = {
    "create": S.advisory_stream_created,
    "delete": S.advisory_stream_deleted,
    "modify": S.advisory_stream_updated,
}
_CONSUMER_SUBJECTS = {"create": S.advisory_consumer_created, "delete": S.advisory_consumer_deleted}


def new_event_id() -> str:
    return os.urandom(11).hex()


def publish(engine: JetStreamEngine, subject: str, event: TypedEvent) -> None:
    server = engine.server
    if not server.has_interest(subject):
        return
    event.id = new_event_id()
    event.timestamp = NanoTime(time.time_ns())
    if engine.domain and hasattr(event, "domain"):
        event.domain = engine.domain
    # After the API reply, as nats-server's send queue does: a stream capturing advisories
    # must not see one before the client sees the answer that caused it.
    server.loop.call_soon(server.publish_internal, subject, encode_response(event))


def stream_action(engine: JetStreamEngine, stream: str, action: str) -> None:
    from pyjetstream.api.advisories import StreamActionAdvisory  # Deferred: see the module's docstring.

    publish(
        engine,
        _STREAM_SUBJECTS[action](stream),
        StreamActionAdvisory(stream=stream, action=AdvisoryAction(action)),
    )


def consumer_action(engine: JetStreamEngine, stream: str, consumer: str, action: str) -> None:
    from pyjetstream.api.advisories import ConsumerActionAdvisory  # Deferred: see the module's docstring.

    publish(
        engine,
        _CONSUMER_SUBJECTS[action](stream, consumer),
        ConsumerActionAdvisory(stream=stream, consumer=consumer, action=AdvisoryAction(action)),
    )
