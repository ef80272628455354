"""The state of a client connection that its parts share (`pyjetstream.client.connection.Client` is
made of them: the write path, subscriptions, the read path, connecting), and what they have in common.

Why mixins over one state and not composed objects: the parts are faces of ONE connection, and they
read and write the same few fields on the per-message paths — the write buffer, the transport, the
status, the subscription table (a publish checks the status and appends to the buffer; the read path
answers a PING into the same buffer; connecting swaps the transport under both). Composed objects
would either copy that state between them or add an attribute hop per message; and the public
methods (``publish``, ``subscribe``, ...) are ``Client``'s either way. What owns state of its own is
composed (`SubscriptionTable`, `RequestMux`, `ReconnectPolicy`, `Handshake`, `ServerPool`).

Each part is a mixin over [`ClientCore`][pyjetstream.client.core.ClientCore]: the attributes are set
once in ``Client.__init__`` and read by the part that needs them; a method one part calls in another
is declared here for the type checker only (``TYPE_CHECKING``), so nothing stands between a call and
its implementation at run time.
"""

from __future__ import annotations

import asyncio
import enum
import re
from collections import deque
from typing import TYPE_CHECKING, Any

from pyjetstream.client.errors import BadSubjectError
from pyjetstream.protocol.subjects import is_valid_subject

if TYPE_CHECKING:
    from pyjetstream.client.errors import NatsError
    from pyjetstream.client.handshake import Handshake
    from pyjetstream.client.inbox import NUID
    from pyjetstream.client.options import ClientOptions, ServerPool
    from pyjetstream.client.reconnect import ReconnectPolicy
    from pyjetstream.client.request_mux import RequestMux
    from pyjetstream.client.sub_table import SubscriptionTable
    from pyjetstream.client.transport import WireProtocol
    from pyjetstream.protocol import ClientSideParser
    from pyjetstream.protocol.parser import FrameScan

__all__ = ["WRITE_CHUNK", "ClientCore", "Status", "check_subject"]

# Hand the buffer to the transport right away once a burst reaches this size (else once per loop turn).
WRITE_CHUNK = 64 * 1024
# Subjects already validated; bounded so that unique subjects (inboxes) cannot grow it forever.
SUBJECT_CACHE_MAX = 4096
WHITESPACE = re.compile(r"\s")


class Status(enum.IntEnum):
    DISCONNECTED = 0
    CONNECTING = 1
    CONNECTED = 2
    RECONNECTING = 3
    DRAINING_SUBS = 4
    DRAINING_PUBS = 5
    CLOSED = 6


def check_subject(subject: str, *, wildcards: bool) -> None:
    if not subject or WHITESPACE.search(subject):
        raise BadSubjectError(f"invalid subject {subject!r}")
    if wildcards and not is_valid_subject(subject):
        raise BadSubjectError(f"invalid subject {subject!r}")


class ClientCore:
    """The connection's state (set by ``Client.__init__``)."""

    _opts: ClientOptions
    _pool: ServerPool
    _status: Status
    _loop: asyncio.AbstractEventLoop | None
    _proto: WireProtocol | None
    # The transport user writes go to: set only once the handshake completed (None while reconnecting).
    _transport: asyncio.Transport | None
    _parser: ClientSideParser
    _frame_sids: set[int]  # subscriptions read as raw frames (subscribe_frames)
    _msg_run_sids: set[int]  # subscriptions read in runs (subscribe_runs)
    _frame_scan: FrameScan | None  # their run finder (subscribe_frames' ``scan``)
    _hs: Handshake | None
    _server_info: dict[str, Any]
    _max_payload: int
    _wbuf: bytearray
    _flush_scheduled: bool
    _write_paused: bool
    _writable: asyncio.Future[None] | None
    _pongs: deque[asyncio.Future[None] | None]
    _pings_outstanding: int
    _ping_timer: asyncio.TimerHandle | None
    _subs: SubscriptionTable
    _valid_subjects: dict[str, bytes]
    _nuid: NUID
    _requests: RequestMux
    _reconnect_policy: ReconnectPolicy
    _fatal_error: NatsError | None
    _reconnect_task: asyncio.Task[None] | None
    _closing: asyncio.Future[None] | None
    _tasks: set[asyncio.Future[Any]]
    _last_error: Exception | None
    in_msgs: int
    in_bytes: int
    out_msgs: int
    out_bytes: int
    reconnects: int
    errors_received: int

    if TYPE_CHECKING:  # implemented by Client and its other parts

        @property
        def is_draining(self) -> bool: ...

        async def flush(self, timeout: Any = 10.0) -> None: ...

        async def _close(self, error: Exception | None) -> None: ...

        def _fire(self, cb: Any, *args: Any) -> None: ...

        def _track(self, fut: asyncio.Future[Any]) -> None: ...

        def _report_error(self, exc: Exception) -> None: ...

        def _send_proto(self, data: bytes) -> None: ...

        def _flush_writes(self) -> None: ...

        def _set_writable(self) -> None: ...

        def _abort(self, proto: WireProtocol | None) -> None: ...

        def _process_info(self, info: dict[str, Any], *, initial: bool) -> None: ...

        def _remember_subject(self, subject: str) -> bytes: ...

        async def wait_writable(self) -> None: ...
