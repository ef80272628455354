"""Counters on a stream (ADR-49, 2.12+): ``js.counter("HITS")`` → [`Counter`][].

A counter stream has ``allow_msg_counter``: publishing an empty body with ``Nats-Incr: +N`` / ``-N``
adds to the subject's total, the PubAck carries the new total (``val``) and the stored message is
``{"val":"<total>"}`` with the increment kept in ``Nats-Incr``. Totals are arbitrary-precision
integers (Python ``int``). A counter stream that sources others also records, per source stream and
subject, the total it last saw (``Nats-Counter-Sources``). Mirrors orbit.go's ``counters`` package:
``add``, ``load``, ``get``, ``get_many``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.counters import decode_sources, decode_value, parse_incr
from pyjetstream.api.headers import COUNTER_SOURCES, INCR
from pyjetstream.client.jetstream.errors import CounterNotEnabled, InvalidOption, JetStreamError

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.stream import RawStreamMsg, Stream


@dataclass(frozen=True, slots=True)
class CounterEntry:
    """A subject's counter: its ``value``, the ``increment`` of the message that set it, and, for
    a counter that sources others, ``sources``: ``{source stream: {subject: total}}``."""

    subject: str
    value: int
    increment: int
    sources: dict[str, dict[str, int]] = field(default_factory=dict)


def parse_counter_msg(msg: RawStreamMsg) -> CounterEntry:
    """A stored counter message as an entry (the body and headers decoded by `pyjetstream.api.counters`)."""
    block = msg.header_block
    try:
        value = decode_value(msg.data)
        incr = block.get(INCR) if block is not None else None
        increment = parse_incr(incr) if incr else 0
        raw_sources = block.get(COUNTER_SOURCES) if block is not None else None
        decoded = decode_sources(raw_sources.encode()) if raw_sources else {}
        sources = {stream: {subj: parse_incr(v) for subj, v in subjects.items()} for stream, subjects in decoded.items()}
    except ValueError as exc:
        raise JetStreamError(f"invalid counter message on {msg.subject!r}: {exc}") from None
    return CounterEntry(msg.subject, value, increment, sources)


class Counter:
    """The counters of one stream (``allow_msg_counter``); get one with ``await js.counter(name)``."""

    def __init__(self, js: JetStream, stream: Stream) -> None:
        self._js = js
        self._stream = stream

    @property
    def stream(self) -> Stream:
        return self._stream

    async def add(self, subject: str, value: int) -> int:
        """Add ``value`` (negative to subtract) to ``subject``'s counter; the new total."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidOption("a counter increment is an int")
        ack = await self._js.publish(subject, b"", headers={INCR: f"{value:+d}"})
        try:
            return int(ack.val)
        except ValueError:
            raise JetStreamError(f"the stream did not return a counter value for {subject!r}") from None

    async def load(self, subject: str) -> int:
        """``subject``'s current total (`MsgNotFound` when it was never counted)."""
        return (await self.get(subject)).value

    async def get(self, subject: str) -> CounterEntry:
        """``subject``'s counter with its last increment and sources."""
        msg = await self._stream.get_last_msg_for_subject(subject)
        return parse_counter_msg(msg)

    async def get_many(self, subjects: Iterable[str]) -> AsyncIterator[CounterEntry]:
        """The counters of every subject matching ``subjects`` (wildcards allowed), in one batched
        direct get (the stream needs ``allow_direct``)."""
        async for msg in self._stream.get_last_msgs_for(subjects):
            yield parse_counter_msg(msg)

    def __repr__(self) -> str:
        return f"<Counter stream={self._stream.name!r}>"


async def counter(js: JetStream, stream_name: str) -> Counter:
    await js.require(Feature.COUNTERS)
    stream = await js.stream(stream_name)
    if not stream.cached_info().config.allow_msg_counter:
        raise CounterNotEnabled(f"stream {stream_name!r} is not a counter stream (allow_msg_counter)")
    return Counter(js, stream)
