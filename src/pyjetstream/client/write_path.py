"""A client's write path: publishes framed into one write buffer, in call order, handed to the socket
at the end of the event-loop turn or once it holds ``WRITE_CHUNK`` (see `pyjetstream.client.connection`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pyjetstream.client.core import (
    SUBJECT_CACHE_MAX,
    WHITESPACE,
    WRITE_CHUNK,
    ClientCore,
    Status,
    check_subject,
)
from pyjetstream.client.errors import (
    BadSubjectError,
    ConnectionClosedError,
    ConnectionDrainingError,
    MaxPayloadError,
    OutboundBufferLimitError,
)
from pyjetstream.client.msg import BLOCK_END, BLOCK_START, HeadersArg, encode_user_headers
from pyjetstream.client.transport import WireProtocol
from pyjetstream.protocol.writers import append_hpub, append_pub, append_requests, hpub_line, pub_line


class Writer(ClientCore):
    """Publishing, and the write buffer every byte we send goes through."""

    def publish_nowait(
        self,
        subject: str,
        payload: bytes = b"",
        *,
        reply: str = "",
        headers: HeadersArg | None = None,
    ) -> None:
        """Buffer a publish without awaiting: the synchronous core of ``publish``.

        For bulk producers (the JetStream layer): it never waits for socket buffer space, so call
        ``await client.wait_writable()`` (or ``flush()``) now and then to bound memory.
        """
        status = self._status
        if status >= Status.DRAINING_PUBS:
            if status is Status.CLOSED:
                raise ConnectionClosedError("connection closed")
            raise ConnectionDrainingError("connection is draining: publishing is over")
        subj = self._valid_subjects.get(subject)
        if subj is None:
            subj = self._remember_subject(subject)
        if reply:
            if WHITESPACE.search(reply):
                raise BadSubjectError(f"invalid reply subject {reply!r}")
            reply_b = reply.encode()
        else:
            reply_b = b""
        if type(payload) is not bytes:
            # Before anything is buffered: a failure halfway through would corrupt the stream.
            payload = memoryview(payload).tobytes()
        size = len(payload)
        if headers is None:
            if size > self._max_payload:
                raise MaxPayloadError(f"payload of {size} bytes exceeds max_payload {self._max_payload}")
            head = pub_line(subj, reply_b, size)
            hdr = b""
        else:
            hdr = encode_user_headers(headers)
            total = len(hdr) + size
            if total > self._max_payload:
                raise MaxPayloadError(
                    f"headers + payload of {total} bytes exceed max_payload {self._max_payload}"
                )
            head = hpub_line(subj, reply_b, len(hdr), total)
        buf = self._wbuf
        if self._transport is None and len(buf) + len(head) + len(hdr) + size > self._opts.pending_size:
            raise OutboundBufferLimitError(
                f"reconnect buffer full ({len(buf)} of {self._opts.pending_size} bytes)"
            )
        # The control line comes from protocol/writers (the one PUB/HPUB framing); appending the
        # parts to the bytearray copies the payload once, where a join would copy it twice.
        buf += head
        if hdr:
            buf += hdr
        buf += payload
        buf += b"\r\n"
        self.out_msgs += 1
        self.out_bytes += size
        if self._transport is not None:
            if len(buf) >= WRITE_CHUNK:
                self._flush_writes()
            elif not self._flush_scheduled:
                # First write of this loop turn goes out now (latency); later ones coalesce until
                # the end of the turn (throughput).
                self._flush_scheduled = True
                buf = self._wbuf
                self._wbuf = bytearray()
                self._transport.write(buf)
                self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    def publish_requests_nowait(
        self,
        messages: Sequence[tuple[str, bytes, HeadersArg | None]],
        reply_prefix: str,
        reply_ids: Sequence[int],
        reply_suffix: str = "",
    ) -> None:
        """Buffer a run of publishes, message *i* with the reply ``<reply_prefix><reply_ids[i]><reply_suffix>``:
        [`publish_nowait`][] of each, checked first and framed in one pass (one write, no reply
        string per message) — for a bulk producer that numbers its requests, such as the Spark
        sink's pipelined JetStream publishes (one wildcard subscription takes every reply).

        All or nothing: an invalid subject, header block or size raises before anything is
        buffered.
        """
        self._check_publishing()
        if WHITESPACE.search(reply_prefix) or WHITESPACE.search(reply_suffix):
            raise BadSubjectError(f"invalid reply subject {reply_prefix + '<n>' + reply_suffix!r}")
        subjects, hdrs, payloads, size = self._checked_run(messages)
        frames: list[bytes] = []
        length = append_requests(
            frames, subjects, reply_prefix.encode(), reply_ids, hdrs, payloads, reply_suffix.encode()
        )
        self._buffer_run(frames, length, len(payloads), size)

    def publish_many_nowait(self, messages: Sequence[tuple[str, bytes, HeadersArg | None]]) -> None:
        """Buffer a run of publishes without replies: [`publish_nowait`][] of each, checked first
        and buffered with one write (all or nothing) — for a bulk producer such as the staged
        messages of an atomic batch."""
        self._check_publishing()
        subjects, hdrs, payloads, size = self._checked_run(messages)
        frames: list[bytes] = []
        length = 0
        for subj, hdr, payload in zip(subjects, hdrs, payloads, strict=True):
            if hdr is None:
                length += append_pub(frames, subj, b"", payload)
            else:
                length += append_hpub(frames, subj, b"", hdr, payload)
        self._buffer_run(frames, length, len(payloads), size)

    def _check_publishing(self) -> None:
        status = self._status
        if status >= Status.DRAINING_PUBS:
            if status is Status.CLOSED:
                raise ConnectionClosedError("connection closed")
            raise ConnectionDrainingError("connection is draining: publishing is over")

    def _checked_run(
        self, messages: Sequence[tuple[str, bytes, HeadersArg | None]]
    ) -> tuple[list[bytes], list[bytes | None], list[bytes], int]:
        """Each message checked as [`publish_nowait`][] checks it: the encoded subjects, header
        blocks and payloads, and the payloads' total size."""
        valid = self._valid_subjects
        max_payload = self._max_payload
        subjects: list[bytes] = []
        hdrs: list[bytes | None] = []
        payloads: list[bytes] = []
        size = 0
        for subject, payload, headers in messages:
            subj = valid.get(subject)
            if subj is None:
                subj = self._remember_subject(subject)
            subjects.append(subj)
            if type(payload) is not bytes:
                payload = memoryview(payload).tobytes()
            payloads.append(payload)
            n = len(payload)
            size += n
            if headers is None:
                hdrs.append(None)
                if n > max_payload:
                    raise MaxPayloadError(f"payload of {n} bytes exceeds max_payload {max_payload}")
            else:
                if type(headers) is not bytes or not (
                    headers.startswith(BLOCK_START) and headers.endswith(BLOCK_END)
                ):
                    headers = encode_user_headers(headers)  # (raises for bytes that are not a block)
                hdrs.append(headers)
                if len(headers) + n > max_payload:
                    raise MaxPayloadError(
                        f"headers + payload of {len(headers) + n} bytes exceed max_payload {max_payload}"
                    )
        return subjects, hdrs, payloads, size

    def _buffer_run(self, frames: list[bytes], length: int, count: int, size: int) -> None:
        """Buffer a run's frames (``length`` bytes, ``count`` messages, ``size`` payload bytes) as
        [`publish_nowait`][] buffers one: the reconnect buffer's limit, then a write."""
        buf = self._wbuf
        if self._transport is None and len(buf) + length > self._opts.pending_size:
            raise OutboundBufferLimitError(
                f"reconnect buffer full ({len(buf)} of {self._opts.pending_size} bytes)"
            )
        buf += b"".join(frames)
        self.out_msgs += count
        self.out_bytes += size
        if self._transport is not None:
            if len(buf) >= WRITE_CHUNK:
                self._flush_writes()
            elif not self._flush_scheduled:
                self._flush_scheduled = True
                self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    async def publish(
        self,
        subject: str,
        payload: bytes = b"",
        *,
        reply: str = "",
        headers: HeadersArg | None = None,
    ) -> None:
        """Publish ``payload`` to ``subject``. Returns once buffered (``flush()`` to wait for the server).

        ``headers``: a mapping of name to a ``str`` or a list of ``str`` (repeated header), or a HeaderBlock.
        """
        self.publish_nowait(subject, payload, reply=reply, headers=headers)
        if self._write_paused:
            await self.wait_writable()

    async def wait_writable(self) -> None:
        """Wait until the socket's write buffer is below its low-water mark (no-op when it is)."""
        while self._write_paused and self._transport is not None:
            if self._writable is None or self._writable.done():
                self._writable = self._loop.create_future()  # type: ignore[union-attr]
            await asyncio.shield(self._writable)

    def _remember_subject(self, subject: str) -> bytes:
        """Validate ``subject`` once and cache its encoded form for the PUB lines that follow."""
        check_subject(subject, wildcards=False)
        if len(self._valid_subjects) >= SUBJECT_CACHE_MAX:
            self._valid_subjects.clear()
        encoded = subject.encode()
        self._valid_subjects[subject] = encoded
        return encoded

    # ===================================================================== write buffer

    def _send_proto(self, data: bytes) -> None:
        """SUB/UNSUB: written only while connected (the reconnect replay rebuilds them otherwise)."""
        if self._transport is None:
            return
        self._wbuf += data
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    def send_buffered(self) -> None:
        """Hand everything buffered to the socket now instead of at the end of this loop turn."""
        self._flush_writes()

    def _flush_writes(self) -> None:
        self._flush_scheduled = False
        transport = self._transport
        if transport is None or not self._wbuf:
            return
        # Hand the buffer itself over (no copy); the transport owns it from here.
        buf = self._wbuf
        self._wbuf = bytearray()
        transport.write(buf)

    def _pause_writing(self, proto: WireProtocol) -> None:
        if proto is self._proto:
            self._write_paused = True

    def _resume_writing(self, proto: WireProtocol) -> None:
        if proto is self._proto:
            self._set_writable()

    def _set_writable(self) -> None:
        self._write_paused = False
        fut = self._writable
        if fut is not None and not fut.done():
            fut.set_result(None)
