"""A client's read path: what the server sends, parsed, delivered to subscriptions, requests and
flushes, and the control protocol (PING/PONG, INFO, -ERR)."""

from __future__ import annotations

import logging
from typing import Any, cast

from pyjetstream.client.core import (
    ClientCore,
)
from pyjetstream.client.errors import ProtocolError, StaleConnectionError
from pyjetstream.client.msg import Msg
from pyjetstream.client.server_errors import error_from_server, server_keeps_connection
from pyjetstream.client.transport import WireProtocol
from pyjetstream.protocol import (
    MAX_PAYLOAD,
    PONG,
    Err,
    FrameRun,
    Info,
    MsgRun,
    Ok,
    Ping,
    Pong,
    ProtocolViolation,
)
from pyjetstream.protocol import Msg as WireMsg

logger = logging.getLogger("pyjetstream.client")


class Reader(ClientCore):
    """What comes from the server."""

    def _data_received(self, proto: WireProtocol, data: bytes) -> None:
        if proto is not self._proto:
            return
        try:
            events = self._parser.feed(data)
            if self._hs is not None:
                for event in events:
                    self._handshake_event(proto, event)
                return
            subs = self._subs.by_sid
            resp_sid = self._requests.sid
            in_msgs = in_bytes = 0
            for event in events:
                if type(event) is WireMsg:
                    sid = event.sid
                    in_msgs += 1
                    in_bytes += len(event.payload)
                    if sid == resp_sid:
                        self._requests.deliver(event)
                        continue
                    sub = subs.get(sid)
                    if sub is None:
                        continue
                    msg = Msg(event.subject, event.payload, event.reply, event.hdr, sid, self, sub)  # type: ignore[arg-type]  # (a Client)
                    if not sub._deliver(msg):
                        # Reached its auto-unsubscribe count: the server removed it too.
                        if subs.get(sid) is sub:
                            del subs[sid]
                        sub._finish()
                elif type(event) is FrameRun:
                    offsets = event.offsets
                    in_msgs += len(offsets) // 3
                    in_bytes += int(offsets[-1] - offsets[0])
                    sub = subs.get(event.sid)
                    if sub is not None:
                        sub._deliver_frames(event.buf, offsets)
                elif type(event) is MsgRun:
                    run = cast(MsgRun, event)  # (the parser's ServerOp union leaves the run events out)
                    payloads = run.payloads
                    in_msgs += len(payloads)
                    in_bytes += sum(map(len, payloads))
                    sub = subs.get(run.sid)
                    if sub is not None:
                        sub._deliver_msg_run(run.subjects, payloads)
                else:
                    self._control_event(proto, event)
            self.in_msgs += in_msgs
            self.in_bytes += in_bytes
        except Exception as exc:  # never let an exception reach the transport (it would drop the socket)
            logger.exception("error while processing data from the server")
            self._report_error(exc)

    def _control_event(self, proto: WireProtocol, event: object) -> None:
        kind = type(event)
        if kind is Ping:
            self._wbuf += PONG
            self._flush_writes()
        elif kind is Pong:
            # Exactly one entry per PONG: the server answers PINGs in order, and an entry whose
            # flush timed out must still absorb its own PONG (else a later flush returns early).
            self._pings_outstanding = 0
            if self._pongs:
                fut = self._pongs.popleft()
                if fut is not None and not fut.done():
                    fut.set_result(None)
        elif kind is Info:
            self._process_info(event.info, initial=False)  # type: ignore[attr-defined]
        elif kind is Err:
            self._process_err(proto, event.text)  # type: ignore[attr-defined]
        elif kind is ProtocolViolation:
            self._report_error(ProtocolError(f"unparsable data from the server: {event.detail}"))  # type: ignore[attr-defined]
            self._abort(proto)
        elif kind is Ok:
            pass

    def _process_err(self, proto: WireProtocol, text: str) -> None:
        self.errors_received += 1
        exc = error_from_server(text)
        if isinstance(exc, StaleConnectionError):
            self._abort(proto)
            return
        if not server_keeps_connection(text):
            # The server closes the connection after these: close the client rather than reconnect
            # and repeat the offence (nats.go closes on them too).
            self._fatal_error = exc
        self._report_error(exc)

    def _process_info(self, info: dict[str, Any], *, initial: bool) -> None:
        self._server_info = info
        self._max_payload = int(info.get("max_payload") or MAX_PAYLOAD)
        urls = info.get("connect_urls")
        if urls:
            added = self._pool.add_discovered(list(urls), randomize=not self._opts.dont_randomize)
            if added and not initial:
                self._fire(self._opts.discovered_server_cb)

    def _handshake_event(self, proto: WireProtocol, event: object) -> None:
        hs = self._hs
        assert hs is not None
        kind = type(event)
        if kind is Info:
            if not hs.info.done():
                hs.info.set_result(event.info)  # type: ignore[attr-defined]
            else:
                self._process_info(event.info, initial=True)  # type: ignore[attr-defined]
        elif kind is Pong:
            if not hs.pong.done():
                hs.pong.set_result(None)
        elif kind is Ping:
            if proto.transport is not None:
                proto.transport.write(PONG)
        elif kind is Err:
            self.errors_received += 1
            hs.fail(error_from_server(event.text))  # type: ignore[attr-defined]
        elif kind is ProtocolViolation:
            hs.fail(ProtocolError(f"unparsable data from the server: {event.detail}"))  # type: ignore[attr-defined]
