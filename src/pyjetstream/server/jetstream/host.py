"""What the JetStream engine needs of the server it runs in: small protocols, so that the engine
never names the server's own modules (``server.py``, ``client.py``, ``accounts.py``), not even for
its type annotations — the server and the engine are two layers, not one import circle.

The engine of an account is handed the account (`Host`: ``accounts.Account``): the server's
internal API scoped to that account, so that its subscriptions, publishes, deliveries and interest
checks never leave it. A consumer's delivery pass frames onto the one client connection a delivery
reaches (`Connection`: ``client.ClientConnection``), through its subscription (`Receiver`:
``subscription.Subscription``). Each protocol names only what the engine uses; the server's classes
satisfy them structurally (mypy checks it where the server hands them over).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Trace(Protocol):
    """A traced message's trace (``msgtrace.MsgTrace``): the ``js`` event a stream fills in."""

    @property
    def only(self) -> bool: ...

    def jetstream(self, stream: str) -> None: ...

    def jetstream_error(self, error: str) -> None: ...

    def jetstream_stored(self, subject: str, no_interest: bool) -> None: ...


class Connection(Protocol):
    """A client connection as the engine sees it (``client.ClientConnection``): the publisher of a
    message it takes, the receiver of a delivery."""

    headers: bool
    closed: bool
    no_responders: bool  # the client asked for no-responders statuses

    def deliver(
        self,
        sub: Any,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        producer: Any,
        shown: str | None = None,
    ) -> bool: ...


class Sink(Protocol):
    """A client connection's output (``sink.FrameSink``), which a consumer's delivery pass frames
    onto: its output parts, and how it accounts for what was appended there."""

    out: list[bytes]
    headers: bool
    closed: bool

    def deliver(
        self,
        sub: Any,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        producer: Any,
        shown: str | None = None,
    ) -> bool: ...

    def takes_frames(self, sub: Any) -> bool: ...

    def room(self) -> int: ...

    def count(self, sub: Any, msgs: int, data: int, size: int) -> None: ...


class Receiver(Protocol):
    """A client subscription a delivery reaches (``subscription.Subscription``), or an internal one
    that ``takes_deliveries`` (its ``client`` None: ``callback`` takes each)."""

    subject: str
    queue: str
    sid_b: bytes
    closed: bool
    delivered: int
    callback: Any
    takes_runs: Any

    @property
    def client(self) -> Connection | None: ...

    @property
    def sink(self) -> Sink | None: ...


class InternalSubscription(Protocol):
    """An internal subscription of the engine (``server.InternalSub``)."""

    subject: str
    closed: bool
    takes_deliveries: bool

    def unsubscribe(self) -> None: ...


class Matcher(Protocol):
    """An account's subject space (``sublist.Sublist``): who a subject reaches."""

    def match(self, subject: str) -> tuple[Sequence[Any], Sequence[Sequence[Any]]]: ...


class ServerSide(Protocol):
    """The server itself, as the engine sees it through an account: its name, its accounts
    (the server-wide JetStream limits all accounts share) and its no-responders answer."""

    server_name: str
    accounts: dict[str, Any]

    def no_responders(self, client: Any, reply: str, subject: str) -> None: ...


class Host(Protocol):
    """The account an engine runs in (``accounts.Account``): the event loop, logging and options
    of the server, and its internal API scoped to the account."""

    name: str

    @property
    def server(self) -> ServerSide: ...

    @property
    def sublist(self) -> Matcher: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def logger(self) -> logging.Logger: ...

    @property
    def options(self) -> Any: ...

    @property
    def server_id(self) -> str: ...

    def subscribe_internal(
        self,
        subject: str,
        callback: Callable[..., None],
        queue: str = "",
        traced: Callable[..., None] | None = None,
        run: Callable[..., None] | None = None,
        *,
        takes_deliveries: bool = False,
        takes_runs: Callable[..., None] | None = None,
    ) -> InternalSubscription: ...

    def publish_internal(
        self,
        subject: str,
        payload: bytes,
        reply: str = "",
        hdr: bytes | None = None,
        show_subject: str | None = None,
    ) -> bool: ...

    def publish_replies(self, replies: list[tuple[str, bytes]]) -> None: ...

    def publish_run(self, subjects: list[str], hdrs: list[bytes | None], payloads: list[bytes]) -> None: ...

    def after_read(self, callback: Callable[[], None]) -> None: ...

    def current_read(self) -> int: ...

    def lone_receiver(self, subject: str) -> Receiver | None: ...

    def client_receivers(self, subject: str) -> tuple[Receiver, ...]: ...

    def count_matches(self, n: int) -> None: ...

    def has_interest(self, subject: str, clients_only: bool = False) -> bool: ...

    def interest_count(self, subject: str, clients_only: bool = False) -> int: ...

    def deliver_interest(self, subject: str, queue: str = "") -> bool: ...

    def reply_interest(self, reply: str) -> bool: ...

    def on_interest_change(self, callback: Callable[[Any, bool], None]) -> Callable[[], None]: ...
