"""The JetStream calls the data source makes, on the client API (`pyjetstream.client.jetstream`).

Control plane only: stream info, and ephemeral "range" consumers — pull, ``AckNone``, in
memory, one replica, removed by the server after ``inactive_threshold`` if a task dies
before deleting it (the shape of nats.go's ordered consumer). The data plane (pulling
messages into Arrow columns) is in `range_reader`, on the core connection.
"""

from __future__ import annotations

from pyjetstream.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy, StreamInfo
from pyjetstream.api.api_levels import Feature
from pyjetstream.api.timefmt import NS_PER_S, NanoTime
from pyjetstream.client import Client
from pyjetstream.client.jetstream import JetStream, jetstream
from pyjetstream.client.jetstream.errors import JetStreamNotEnabled, StreamNotFound
from pyjetstream.spark.errors import JetStreamSparkError, StreamNotFoundError

__all__ = ["READER_INACTIVE_THRESHOLD_NS", "JetStreamApi"]

# A reader consumer the server forgets on its own when its task vanished. Generous, because
# a task's consumer idles while Spark processes the batch it was just handed.
READER_INACTIVE_THRESHOLD_NS = 120 * NS_PER_S


class JetStreamApi:
    """The source's view of one connection's JetStream."""

    def __init__(self, nc: Client, timeout: float = 5.0) -> None:
        self.nc = nc
        self.js: JetStream = jetstream(nc, timeout=timeout)
        self.api = self.js.api

    def _where(self) -> str:
        return str(self.nc.connected_url or "the server")

    async def stream_info(self, stream: str) -> StreamInfo:
        try:
            return (await self.js.stream(stream)).cached_info()
        except StreamNotFound:
            raise StreamNotFoundError(stream, self._where()) from None
        except JetStreamNotEnabled:
            raise JetStreamSparkError(f"JetStream is not enabled on {self._where()}") from None

    def supports_multi_filter(self) -> bool:
        """``filter_subjects`` arrived in nats-server 2.10."""
        return self.js.server_version() >= (2, 10, 0)

    async def supports_batch_get(self) -> bool:
        """Batched DIRECT.GET (``batch``, replies ending in ``204 EOB``) arrived with API level 1
        (nats-server 2.11): INFO's ``api_lvl``, else ``$JS.API.INFO`` (asked once per connection)."""
        return await self.js.api_level() >= Feature.BATCH_GET.level

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
        try:
            consumer = await self.js.create_or_update_consumer(stream, config)
        except StreamNotFound:
            raise StreamNotFoundError(stream, self._where()) from None
        return consumer.cached_info()

    async def consumer_info(self, stream: str, consumer: str) -> ConsumerInfo:
        return (await self.js.consumer(stream, consumer)).cached_info()

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        await self.js.delete_consumer(stream, consumer)

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
            except Exception:
                pass  # it expires on its own
