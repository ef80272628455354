"""The JetStream client's exception hierarchy (nats.go ``jetstream/errors.go``, Pythonic names).

Every error carries ``code`` (HTTP-like, or the pull status code), ``err_code`` (the JetStream
error code, 0 for purely client-side errors) and ``description``:

- [`JetStreamError`][] is the base of everything raised by this package (a core ``NatsError``).
- [`JetStreamAPIError`][] is an error the server reported in an API response or PubAck. It is also a
  `pyjetstream.api.JetStreamApiError`, so code written against the shared API catches it.
  [`api_exception`][] turns an ``ApiError`` into the most specific subclass by ``err_code``
  (``StreamNotFound`` for 10059 …), as nats.go's ``errors.Is`` matches by error code.
- Status errors of pull requests (``409 Consumer Deleted`` …) carry the status as ``code``.
- KV and object-store errors subclass the API error they stand for where there is one
  (``KeyNotFound`` is a ``MsgNotFound``, ``BucketNotFound`` a ``StreamNotFound``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyjetstream.api import ApiError, JetStreamApiError
from pyjetstream.client.errors import NatsError


class JetStreamError(NatsError):
    """Base class: ``code`` / ``err_code`` / ``description`` (defaults per subclass)."""

    default_code: ClassVar[int] = 0
    default_err_code: ClassVar[int] = 0
    default_description: ClassVar[str] = "jetstream error"

    def __init__(
        self, description: str | None = None, *, code: int | None = None, err_code: int | None = None
    ):
        self.error = ApiError(
            code=self.default_code if code is None else code,
            err_code=self.default_err_code if err_code is None else err_code,
            description=description or self.default_description,
        )
        # Not super().__init__: JetStreamApiError (later in the MRO of API errors) takes an ApiError.
        Exception.__init__(self, self.error.description)

    @property
    def code(self) -> int:
        return self.error.code

    @property
    def err_code(self) -> int:
        return self.error.err_code

    @property
    def description(self) -> str:
        return self.error.description

    @property
    def api_error(self) -> ApiError | None:
        """The server's error object; ``None`` for client-side errors."""
        return self.error if self.error.err_code else None

    def __str__(self) -> str:
        if self.error.err_code:
            return f"{self.error.description} (code={self.error.code}, err_code={self.error.err_code})"
        if self.error.code:
            return f"{self.error.description} (status {self.error.code})"
        return self.error.description

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, err_code={self.err_code}, description={self.description!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.description, self.code, self.err_code))


def _rebuild(cls: type[JetStreamError], description: str, code: int, err_code: int) -> JetStreamError:
    return cls(description, code=code, err_code=err_code)


class JetStreamAPIError(JetStreamError, JetStreamApiError):
    """An error reported by the JetStream API (or a PubAck): the server's code, err_code, description."""

    default_description = "jetstream api error"


_BY_ERR_CODE: dict[int, type[JetStreamAPIError]] = {}


def _api(code: int, err_code: int, description: str) -> Any:
    """Class decorator: set the defaults and register the class for its ``err_code``."""

    def register(cls: type[JetStreamAPIError]) -> type[JetStreamAPIError]:
        cls.default_code, cls.default_err_code, cls.default_description = code, err_code, description
        _BY_ERR_CODE.setdefault(err_code, cls)
        return cls

    return register


# --- server (API) errors --------------------------------------------------------------------------


@_api(503, 10076, "jetstream not enabled")
class JetStreamNotEnabled(JetStreamAPIError):
    """JetStream is not enabled on the server (also: no responders on the API subject)."""


@_api(503, 10039, "jetstream not enabled for account")
class JetStreamNotEnabledForAccount(JetStreamAPIError):
    pass


@_api(400, 10003, "bad request")
class BadRequest(JetStreamAPIError):
    pass


@_api(404, 10059, "stream not found")
class StreamNotFound(JetStreamAPIError):
    pass


@_api(400, 10058, "stream name already in use")
class StreamNameAlreadyInUse(JetStreamAPIError):
    """A stream with this name exists with a different configuration."""


@_api(400, 10065, "subjects overlap with an existing stream")
class StreamSubjectOverlap(JetStreamAPIError):
    pass


@_api(500, 10052, "invalid stream config")
class StreamInvalidConfig(JetStreamAPIError):
    pass


@_api(400, 10109, "invalid operation on sealed stream")
class StreamSealed(JetStreamAPIError):
    pass


@_api(404, 10014, "consumer not found")
class ConsumerNotFound(JetStreamAPIError):
    pass


@_api(500, 10012, "could not create consumer")
class ConsumerCreate(JetStreamAPIError):
    """The server refused the consumer create/update (e.g. an illegal update)."""


@_api(400, 10013, "consumer name already in use")
class ConsumerNameAlreadyInUse(JetStreamAPIError):
    pass


@_api(400, 10148, "consumer already exists")
class ConsumerExists(JetStreamAPIError):
    """``create_consumer`` found a consumer of that name with a different configuration."""


@_api(400, 10149, "consumer does not exist")
class ConsumerDoesNotExist(JetStreamAPIError):
    """``update_consumer`` on a consumer that does not exist."""


@_api(400, 10026, "maximum consumers limit reached")
class MaximumConsumersLimit(JetStreamAPIError):
    pass


@_api(400, 10027, "maximum number of streams reached")
class MaximumStreamsLimit(JetStreamAPIError):
    pass


@_api(404, 10037, "message not found")
class MsgNotFound(JetStreamAPIError):
    pass


@_api(400, 10071, "wrong last sequence")
class WrongLastSequence(JetStreamAPIError):
    """A publish expectation on the last (per-subject) sequence failed."""


@_api(400, 10070, "wrong last msg ID")
class WrongLastMsgID(JetStreamAPIError):
    pass


@_api(400, 10060, "expected stream does not match")
class StreamNotMatch(JetStreamAPIError):
    pass


@_api(400, 10054, "message size exceeds maximum allowed")
class MessageTooLarge(JetStreamAPIError):
    pass


@_api(503, 10077, "message store failed")
class StoreFailed(JetStreamAPIError):
    """The stream refused to store the message (limits with discard new …)."""


def api_exception(error: ApiError) -> JetStreamAPIError:
    """The exception for a server ``ApiError``: the class registered for its ``err_code`` (wrong
    last sequence 10164 counts as 10071), else a plain [`JetStreamAPIError`][]."""
    err_code = 10071 if error.err_code == 10164 else error.err_code
    cls = _BY_ERR_CODE.get(err_code, JetStreamAPIError)
    return cls(error.description, code=error.code, err_code=error.err_code)


# --- client-side errors -----------------------------------------------------------------------------


def _client(description: str, code: int = 0) -> Any:
    def configure(cls: type[JetStreamError]) -> type[JetStreamError]:
        cls.default_description, cls.default_code = description, code
        return cls

    return configure


@_client("no response from stream")
class NoStreamResponse(JetStreamError):
    """A publish reached no stream (no responders), even after the retries."""


@_client("invalid jetstream publish response")
class InvalidJSAck(JetStreamError):
    pass


@_client("stream name is required")
class StreamNameRequired(JetStreamError, ValueError):
    pass


@_client("invalid stream name")
class InvalidStreamName(JetStreamError, ValueError):
    pass


@_client("consumer name is required")
class ConsumerNameRequired(JetStreamError, ValueError):
    pass


@_client("invalid consumer name")
class InvalidConsumerName(JetStreamError, ValueError):
    pass


@_client("invalid subject name")
class InvalidSubject(JetStreamError, ValueError):
    pass


@_client("invalid jetstream option")
class InvalidOption(JetStreamError, ValueError):
    pass


@_client("message was already acknowledged")
class MsgAlreadyAcked(JetStreamError):
    pass


@_client("message does not have a reply")
class MsgNoReply(JetStreamError):
    pass


@_client("message is not bound to subscription/connection")
class MsgNotBound(JetStreamError):
    pass


@_client("not a jetstream message")
class NotJSMessage(JetStreamError):
    pass


@_client("message deletion unsuccessful")
class MsgDeleteUnsuccessful(JetStreamError):
    pass


@_client("handler cannot be empty")
class HandlerRequired(JetStreamError, ValueError):
    pass


@_client("reply subject should be empty")
class AsyncPublishReplySubjectSet(JetStreamError, ValueError):
    pass


@_client("stalled with too many outstanding async published messages")
class TooManyStalledMsgs(JetStreamError):
    pass


@_client("timeout waiting for the ack of an async publish")
class AsyncPublishTimeout(JetStreamError, TimeoutError):
    pass


@_client("jetstream context closed")
class JetStreamClosed(JetStreamError):
    pass


class FeatureNotSupported(JetStreamError):
    """The server's JetStream API level is below what a feature needs (ADR-44); raised before the
    request is sent, since an older server would misread it silently. ``feature`` (an
    [`pyjetstream.api.api_levels.Feature`][pyjetstream.api.api_levels.Feature]), ``required_level``, ``required_version``,
    ``server_level`` and ``server_version`` say what is missing."""

    def __init__(self, feature: Any, server_level: int, server_version: str) -> None:
        self.feature = feature
        self.required_level = feature.level
        self.required_version = feature.version
        self.server_level = server_level
        self.server_version = server_version
        super().__init__(
            f"{feature.description} needs nats-server {feature.version} or newer (JetStream API level "
            f"{feature.level}); the server is {server_version or 'unknown'} (API level {server_level})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.feature, self.server_level, self.server_version))


@_client("batch publish failed")
class BatchPublishError(JetStreamError):
    """An atomic batch was not committed (the server refused a message, or the batch was abandoned)."""


@_client("consumer does not support multiple filter subjects (needs nats-server 2.10+)")
class ConsumerMultipleFilterSubjectsNotSupported(JetStreamError):
    pass


# Pull statuses: ``code`` is the status of the message that ended the request.


class PullStatusError(JetStreamError):
    """A pull request ended with a status the client treats as an error (``code`` = status)."""

    default_description = "pull request failed"


@_client("stream is not a counter stream (allow_msg_counter)")
class CounterNotEnabled(JetStreamError):
    """``js.counter`` on a stream without ``allow_msg_counter`` (orbit.go ``ErrCounterNotEnabled``)."""


@_client("consumer is not a push consumer")
class NotPushConsumer(JetStreamError, ValueError):
    """A push consumer needs a ``deliver_subject`` (nats.go ``ErrNotPushConsumer``)."""


@_client("consumer is already consuming")
class ConsumerAlreadyConsuming(JetStreamError):
    """``consume`` on a push consumer handle that is already consuming."""


@_client("pin id mismatch", 423)
class PinIdMismatch(PullStatusError):
    """A pinned-client pull carried a pin id the server no longer accepts (status 423); the pin is
    dropped and the next pull asks for a new one."""


@_client("no messages", 404)
class NoMessages(PullStatusError):
    pass


@_client("message size exceeds max bytes", 409)
class MaxBytesExceeded(PullStatusError):
    pass


@_client("consumer deleted", 409)
class ConsumerDeleted(PullStatusError):
    pass


@_client("leadership change", 409)
class ConsumerLeadershipChanged(PullStatusError):
    pass


@_client("consumer is push based", 409)
class ConsumerIsPushBased(PullStatusError):
    pass


@_client("no heartbeat received")
class NoHeartbeat(JetStreamError):
    pass


@_client("messages iterator closed")
class MsgIteratorClosed(JetStreamError):
    pass


@_client("recreating ordered consumer")
class OrderedConsumerReset(JetStreamError):
    pass


@_client("ordered consumer initialized as fetch")
class OrderConsumerUsedAsFetch(JetStreamError):
    pass


@_client("ordered consumer initialized as consume")
class OrderConsumerUsedAsConsume(JetStreamError):
    pass


@_client("cannot run concurrent processing using ordered consumer")
class OrderedConsumerConcurrentRequests(JetStreamError):
    pass


@_client("consumer instance not yet created")
class OrderedConsumerNotCreated(JetStreamError):
    pass


# --- key-value store --------------------------------------------------------------------------------


@_client("invalid bucket name")
class InvalidBucketName(JetStreamError, ValueError):
    pass


@_client("invalid key")
class InvalidKey(JetStreamError, ValueError):
    pass


@_client("config required")
class KeyValueConfigRequired(JetStreamError, ValueError):
    pass


@_client("history limited to a max of 64")
class HistoryTooLarge(JetStreamError, ValueError):
    pass


class BucketNotFound(StreamNotFound):
    default_description = "bucket not found"


class BucketExists(StreamNameAlreadyInUse):
    default_description = "bucket name already in use"


class KeyNotFound(MsgNotFound):
    default_description = "key not found"


class KeyDeleted(KeyNotFound):
    """The key's latest entry is a delete or purge marker; ``entry`` is that marker (if known)."""

    default_description = "key was deleted"

    def __init__(self, description: str | None = None, *, entry: Any = None, **kw: Any) -> None:
        super().__init__(description, **kw)
        self.entry = entry


class KeyExists(WrongLastSequence):
    default_description = "key exists"


@_client("no keys found")
class NoKeysFound(JetStreamError):
    pass


# --- object store -----------------------------------------------------------------------------------


@_client("object not found", 404)
class ObjectNotFound(JetStreamError):
    pass


@_client("no objects found")
class NoObjectsFound(JetStreamError):
    pass


@_client("object name is required")
class ObjectNameRequired(JetStreamError, ValueError):
    pass


@_client("received a corrupt object, digests do not match")
class DigestMismatch(JetStreamError):
    pass


@_client("object-store meta information invalid")
class BadObjectMeta(JetStreamError):
    pass


@_client("link cannot be set when putting the object in bucket")
class LinkNotAllowed(JetStreamError, ValueError):
    pass


@_client("an object already exists with that name")
class ObjectAlreadyExists(JetStreamError):
    pass


@_client("cannot update meta for a deleted object")
class UpdateMetaDeleted(JetStreamError):
    pass


@_client("not allowed to link to a deleted object")
class NoLinkToDeleted(JetStreamError, ValueError):
    pass


@_client("not allowed to link to another link")
class NoLinkToLink(JetStreamError, ValueError):
    pass


@_client("invalid Get, object is a link to a bucket")
class CantGetBucket(JetStreamError):
    pass


__all__ = [
    name
    for name, value in dict(globals()).items()
    if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == __name__
]
__all__ += ["api_exception"]
