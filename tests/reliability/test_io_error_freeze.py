"""An I/O error (not a full disk) while writing a stream (issue #15), embedded server only (the
failing file layer is put in place of the block writes in this process): as nats-server 2.14+
(``setWriteErrLocked``), the stream stops taking writes, says so once (one log line, and here a
``$JS.EVENT.ADVISORY.STREAM.WRITE_ERROR.<stream>`` advisory), and keeps serving reads, consumers
and the API; unlike nats-server, which leaves the refused publishes unanswered, each gets 10077.
A restart takes writes again and finds every acknowledged message."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import nats
import pytest

from pyjetstream import Server
from pyjetstream.server.jetstream.store import blockfiles

TIMEOUT = 10.0


class FailingDisk:
    def __init__(self) -> None:
        self.failing = False

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        if self.failing:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.pwrite(fd, data, offset)


async def test_io_error_freezes_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    disk = FailingDisk()
    monkeypatch.setattr(blockfiles._io, "pwrite", disk.pwrite)
    store_dir = str(tmp_path / "js")
    async with Server(jetstream=True, store_dir=store_dir) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="F", subjects=["f"])
        await js.add_stream(name="G", subjects=["g"])
        for i in range(5):
            await js.publish("f", b"%d" % i)
        psub = await js.pull_subscribe("f", "C")
        adv = await nc.subscribe("$JS.EVENT.ADVISORY.STREAM.WRITE_ERROR.>")
        await nc.flush()
        disk.failing = True
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            answers = []
            for _ in range(5):
                reply = await nc.request("f", b"x", timeout=TIMEOUT)
                answers.append(json.loads(reply.data))
            disk.failing = False  # the disk works again: the stream stays frozen
            for _ in range(3):
                reply = await nc.request("f", b"y", timeout=TIMEOUT)
                answers.append(json.loads(reply.data))
        for a in answers:
            assert a["error"]["code"] == 503 and a["error"]["err_code"] == 10077, a
            assert "write failed" in a["error"]["description"]
        lines = [r.getMessage() for r in caplog.records if "F" in r.getMessage() and r.levelno >= logging.ERROR]
        assert lines == [
            f"JetStream stream '$G > F' critical write error: write failed: {os.strerror(errno.EIO)}"
        ], lines
        event = json.loads((await adv.next_msg(timeout=TIMEOUT)).data)
        assert event["type"] == "io.nats.jetstream.advisory.v1.stream_write_error"
        assert event["stream"] == "F" and "write failed" in event["error"]
        # Reads, consumers and the API keep working; other streams take writes.
        info = await js.stream_info("F")
        assert (info.state.messages, info.state.last_seq) == (5, 5)
        msgs = await psub.fetch(5, timeout=TIMEOUT)
        assert [m.data for m in msgs] == [b"0", b"1", b"2", b"3", b"4"]
        for m in msgs:
            await m.ack_sync()
        assert (await js.get_msg("F", 3)).data == b"2"
        assert (await js.publish("g", b"ok")).seq == 1
        await nc.close()
    async with Server(jetstream=True, store_dir=store_dir) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        info = await js.stream_info("F")
        assert (info.state.messages, info.state.last_seq, info.state.lost) == (5, 5, None)
        assert (await js.publish("f", b"again")).seq == 6
        await nc.close()
