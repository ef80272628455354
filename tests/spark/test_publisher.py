"""The async write's publisher (``spark.publisher.Publisher``) without Spark: re-sends after a 503
and after a lost ack, the retry budget, and the task's figures, on real servers of both kinds."""

from __future__ import annotations

import asyncio

import pytest
from tests.spark import jsutil
from tests.support.targets import Target

from pyjetstream.client import Msg, connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark.errors import PublishError
from pyjetstream.spark.publisher import Publisher


def _messages(subject: str, n: int, first: int = 0) -> list[tuple[str, bytes, bytes]]:
    return [
        (subject, b"%d" % i, b"NATS/1.0\r\nNats-Msg-Id: id-%d\r\n\r\n" % i) for i in range(first, first + n)
    ]


def test_runs_are_acknowledged_in_windows_and_counted(js_server: Target, stream_name: str) -> None:
    """More rows than the window, in several calls: every row stored once, in order; a second
    write of the same ids is counted as duplicates."""
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])

    async def write() -> tuple[int, int, int, int, int]:
        nc = await connect(url)
        try:
            pub = Publisher(nc, window=64, ack_timeout=5.0, retries=2)
            await pub.start()
            await pub.publish_many(_messages(f"{stream_name}.a", 150))
            await pub.publish_many(iter(_messages(f"{stream_name}.a", 150, first=150)))
            stats = await pub.flush()
            await pub.close()
            return stats.published, stats.duplicates, stats.retries, stats.first_seq, stats.last_seq
        finally:
            await nc.close()

    assert asyncio.run(write()) == (300, 0, 0, 1, 300)
    assert asyncio.run(write()) == (300, 300, 0, 0, 300)
    stored = jsutil.stored(url, stream_name)
    assert [m.data for m in stored] == [b"%d" % i for i in range(300)]


def test_no_stream_yet_is_tried_again(js_server: Target, stream_name: str) -> None:
    """503 (no stream takes the subject): each row is sent again after a short wait, within the
    retry budget; once the stream exists, every row is stored once."""
    url = js_server.url

    async def write() -> tuple[int, int]:
        nc = await connect(url)
        admin = await connect(url)
        try:
            pub = Publisher(nc, window=1024, ack_timeout=5.0, retries=50)
            await pub.start()
            await pub.publish_many(_messages(f"{stream_name}.a", 100))
            await asyncio.sleep(0.3)  # some 503s have come back by now
            await jetstream(admin).create_stream(StreamConfig(name=stream_name, subjects=[f"{stream_name}.>"]))
            stats = await pub.flush()
            await pub.close()
            return stats.published, stats.retries
        finally:
            await nc.close()
            await admin.close()

    published, retries = asyncio.run(write())
    assert published == 100
    assert retries >= 100
    assert [m.data for m in jsutil.stored(url, stream_name)] == [b"%d" % i for i in range(100)]


def test_lost_acks_are_resent_then_fail_the_task(js_server: Target, stream_name: str) -> None:
    """No ack at all (a plain subscriber takes the subject, no stream does): each row goes out
    ``retries + 1`` times, unchanged, then the task fails with the attempts in the message."""
    url = js_server.url
    subject = f"{stream_name}.lost"

    async def write() -> tuple[str, list[Msg]]:
        nc = await connect(url)
        watcher = await connect(url)
        seen: list[Msg] = []
        try:
            await watcher.subscribe(subject, cb=seen.append)
            await watcher.flush()
            pub = Publisher(nc, window=1024, ack_timeout=0.3, retries=2)
            await pub.start()
            await pub.publish_many(_messages(subject, 20))
            with pytest.raises(PublishError) as info:
                await pub.flush()
            await pub.close()
            await watcher.flush()
            assert pub.stats.retries == 40
            return str(info.value), seen
        finally:
            await nc.close()
            await watcher.close()

    text, seen = asyncio.run(write())
    assert text == f"no JetStream ack for a publish to {subject!r} after 3 attempts of 0.3s each"
    assert sorted(m.data for m in seen) == sorted([b"%d" % i for i in range(20)] * 3)
    assert all(m.headers["Nats-Msg-Id"] == "id-" + m.data.decode() for m in seen)


def test_no_stream_at_all_fails_the_task(js_server: Target, stream_name: str) -> None:
    url = js_server.url

    async def write() -> str:
        nc = await connect(url)
        try:
            pub = Publisher(nc, window=1024, ack_timeout=5.0, retries=1)
            await pub.start()
            await pub.publish_many(_messages(f"{stream_name}.none", 5))
            with pytest.raises(PublishError) as info:
                await pub.flush()
            return str(info.value)
        finally:
            await nc.close()

    assert asyncio.run(write()) == (
        f"JetStream refused a publish to '{stream_name}.none': no stream matches the subject"
    )
