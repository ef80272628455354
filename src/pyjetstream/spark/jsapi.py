"""The few JetStream API calls the data source makes, over a core connection.

Stream info, and ephemeral "range" consumers: pull, ``AckNone``, in memory, one replica,
removed by the server after ``inactive_threshold`` if a task dies before deleting it
(the shape of nats.go's ordered consumer). Kept to raw ``$JS.API`` requests with the shared
api models so the data source depends only on the wire vocabulary.
"""

from __future__ import annotations

from pyjetstream.api import (
    AckPolicy,
    ConsumerConfig,
    ConsumerCreateResponse,
    ConsumerDeleteResponse,
    ConsumerInfo,
    ConsumerInfoResponse,
    CreateConsumerRequest,
    DeliverPolicy,
    JetStreamApiError,
    StreamInfo,
    StreamInfoResponse,
    decode_response,
    encode,
    raise_for_error,
)
from pyjetstream.api.subjects import JSApi
from pyjetstream.api.timefmt import NS_PER_S, NanoTime
from pyjetstream.client import Client, NoRespondersError
from pyjetstream.spark.errors import JetStreamSparkError, StreamNotFoundError

__all__ = ["STREAM_NOT_FOUND", "JetStreamApi"]

STREAM_NOT_FOUND = 10059
# A reader consumer the server forgets on its own when its task vanished.
READER_INACTIVE_THRESHOLD_NS = 30 * NS_PER_S


class JetStreamApi:
    """Typed requests to ``$JS.API`` on one connection."""

    def __init__(self, nc: Client, timeout: float = 5.0, api: JSApi | None = None) -> None:
        self.nc = nc
        self.timeout = timeout
        self.api = api or JSApi()

    async def _request(self, subject: str, body: bytes = b"") -> bytes:
        try:
            msg = await self.nc.request(subject, body, timeout=self.timeout)
        except NoRespondersError:
            raise JetStreamSparkError(
                f"JetStream is not enabled on {self.nc.connected_url} (no responders on {subject})"
            ) from None
        return msg.data

    async def stream_info(self, stream: str) -> StreamInfo:
        data = await self._request(self.api.stream_info(stream))
        resp = decode_response(data, StreamInfoResponse)
        if resp.error is not None and resp.error.err_code == STREAM_NOT_FOUND:
            raise StreamNotFoundError(stream, str(self.nc.connected_url))
        raise_for_error(resp)
        return resp.payload()

    def supports_multi_filter(self) -> bool:
        """``filter_subjects`` arrived in nats-server 2.10."""
        version = str(self.nc.server_info.get("version", "0"))
        try:
            major, minor = (int(p) for p in version.split("-")[0].split(".")[:2])
        except ValueError:
            return False
        return (major, minor) >= (2, 10)

    async def create_reader(
        self,
        stream: str,
        *,
        start_seq: int | None = None,
        start_time_ns: int | None = None,
        filter_subjects: tuple[str, ...] = (),
    ) -> ConsumerInfo:
        """An ephemeral pull consumer from ``start_seq`` (or the first message at/after a time)."""
        config = ConsumerConfig(
            ack_policy=AckPolicy.NONE,
            max_deliver=1,
            inactive_threshold=READER_INACTIVE_THRESHOLD_NS,
            num_replicas=1,
            mem_storage=True,
        )
        if start_time_ns is not None:
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = NanoTime(start_time_ns)
        elif start_seq is not None and start_seq > 1:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = start_seq
        if len(filter_subjects) == 1:
            config.filter_subject = filter_subjects[0]
        elif filter_subjects:
            config.filter_subjects = list(filter_subjects)
        body = encode(CreateConsumerRequest(stream_name=stream, config=config))
        data = await self._request(self.api.consumer_create(stream), body)
        resp = decode_response(data, ConsumerCreateResponse)
        if resp.error is not None and resp.error.err_code == STREAM_NOT_FOUND:
            raise StreamNotFoundError(stream, str(self.nc.connected_url))
        raise_for_error(resp)
        return resp.payload()

    async def consumer_info(self, stream: str, consumer: str) -> ConsumerInfo:
        data = await self._request(self.api.consumer_info(stream, consumer))
        resp = decode_response(data, ConsumerInfoResponse)
        raise_for_error(resp)
        return resp.payload()

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        data = await self._request(self.api.consumer_delete(stream, consumer))
        resp = decode_response(data, ConsumerDeleteResponse)
        raise_for_error(resp)

    async def first_seq_at(self, stream: str, time_ns: int) -> int:
        """The sequence of the first message stored at or after ``time_ns`` (last seq + 1 if none).

        The server resolves a by-start-time consumer's start sequence at creation and reports
        it as ``delivered.stream_seq + 1``; the consumer is deleted right away.
        """
        info = await self.create_reader(stream, start_time_ns=time_ns)
        try:
            return info.delivered.stream_seq + 1
        finally:
            try:
                await self.delete_consumer(stream, info.name)
            except JetStreamApiError:
                pass  # it expires on its own
