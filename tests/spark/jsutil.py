"""Blocking JetStream helpers for the Spark tests (on the client's sync facade)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyjetstream.client.jetstream import StreamConfig, sync
from pyjetstream.spark.direct_reader import DIRECT_GET_HEADERS


@dataclass
class Stored:
    """A message as the stream stores it (what a read must return)."""

    subject: str
    seq: int
    time_ns: int
    headers: dict[str, list[str]] | None
    data: bytes


@contextmanager
def jetstream(url: str) -> Iterator[Any]:
    nc = sync.connect(url)
    try:
        yield nc.jetstream()
    finally:
        nc.close()


def create_stream(url: str, name: str, subjects: list[str], **config: Any) -> None:
    with jetstream(url) as js:
        js.create_stream(StreamConfig(name=name, subjects=subjects, **config))


def publish(
    url: str, messages: Iterable[tuple[str, bytes] | tuple[str, bytes, dict[str, Any] | None]]
) -> list[int]:
    """Publish in order, each acknowledged; returns the stream sequences."""
    seqs = []
    with jetstream(url) as js:
        futures = []
        for message in messages:
            subject, data, *rest = message
            headers = rest[0] if rest else None
            futures.append(js.publish_async(subject, data, headers=headers))
        js.publish_async_complete(timeout=30)
        for fut in futures:
            seqs.append(fut.result().seq)
    return seqs


def stored(url: str, stream: str) -> list[Stored]:
    """Every message of the stream, read back one by one (STREAM.MSG.GET or DIRECT.GET), with its
    own headers only."""
    out: list[Stored] = []
    with jetstream(url) as js:
        s = js.stream(stream)
        state = s.info().state
        if not state.messages:
            return out
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                raw = s.get_msg(seq)
            except Exception:
                continue  # deleted
            block = raw.header_block
            # A stream with allow_direct answers by direct get, which adds Nats-Stream & co.
            own = {k: v for k, v in block.headers.items() if k not in DIRECT_GET_HEADERS} if block else {}
            headers = own or None
            out.append(Stored(raw.subject, raw.sequence, int(raw.time), headers, raw.data))
    return out


def stream_state(url: str, stream: str) -> Any:
    with jetstream(url) as js:
        return js.stream(stream).info().state


def delete_msgs(url: str, stream: str, seqs: Iterable[int]) -> None:
    with jetstream(url) as js:
        s = js.stream(stream)
        for seq in seqs:
            s.delete_msg(seq)


def purge(url: str, stream: str, **options: Any) -> None:
    with jetstream(url) as js:
        js.stream(stream).purge(**options)
