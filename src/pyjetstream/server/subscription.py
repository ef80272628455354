"""A subscription as the router sees it: a client's (``client`` and its ``sink`` set) or the server's
own (`InternalSub`: ``callback`` set).

Compiled with the router and the connection's output (``pyjetstream._compiled``): the router reads
these attributes on every message and every delivery, which compiled code does as a field read.
Both classes live here, since interpreted code may not subclass a compiled class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyjetstream.protocol.subjects import has_wildcard
from pyjetstream.protocol.writers import hmsg_prefix, msg_prefix

if TYPE_CHECKING:
    from pyjetstream.server.sink import FrameSink

__all__ = ["InternalSub", "Shadow", "Subscription"]


class Subscription:
    """One subscription: a client's (``client`` and its ``sink`` set) or the server's own.

    ``msg_prefix``/``hmsg_prefix`` hold ``b"MSG <subject> <sid> "``/``b"HMSG …"`` for literal
    subscriptions, whose delivered subject is always their own (b"" until the first delivery that
    needs one: `msg_start` / `hmsg_start`); ``prefixes`` the MSG line starts of a wildcard
    subscription's recent subjects. ``run``, ``traced`` and ``account`` are an
    internal subscription's (`InternalSub`).
    """

    def __init__(
        self,
        subject: str,
        sid: str,
        queue: str = "",
        client: Any = None,
        callback: Any = None,
    ) -> None:
        self.subject = subject
        self.sid = sid
        self.sid_b = sid.encode()
        self.queue = queue
        self.client: Any = client
        #: The client connection's output (`FrameSink`), None for the server's own subscriptions.
        self.sink: FrameSink | None = client.sink if client is not None else None
        self.callback: Any = callback
        self.run: Any = None
        self.traced: Any = None
        #: An import forwarder's callback for a message routed under one subject and shown under
        #: another (a consumer's delivery): it takes both (see ``Router.route``).
        self.reroute: Any = None
        self.account: Any = None
        #: An internal subscription a consumer's delivery pass may hand its deliveries to itself,
        #: a run at a time, instead of routing each (`Router.lone_receiver`): set by a mirror's or
        #: source's feed, whose callback acts on the delivering consumer only by closing this.
        self.takes_deliveries = False
        #: Such a subscription's taker of a pass's run of new messages in one call, with their
        #: numbers (``takes_runs(consumer, msgs, dseq, npc)``: `DeliveryPass.hand_run`), instead of
        #: its callback with an ack reply for each; None: one by one.
        self.takes_runs: Any = None
        #: A shadow's (`Shadow`): the importing account's subscription it delivers to.
        self.origin: Any = None
        #: A service import's own subscription (and a service export's response subscription):
        #: no stream import makes a shadow of it (nats-server's ``sub.si``).
        self.no_shadows = False
        self.max_msgs = 0
        self.delivered = 0
        self.closed = False
        self.literal = not has_wildcard(subject)
        # A literal subscription is only ever delivered its own subject: its MSG / HMSG line starts,
        # encoded at its first delivery of each kind (`FrameSink.frame`). Not here: of 100,000
        # subscriptions most may never receive, and each object made here is one more for every
        # collection of CPython's cyclic collector to visit while the subscription lives.
        self.msg_prefix = b""
        self.hmsg_prefix = b""
        # The whole ``MSG <subject> <sid> <size>\r\n`` line of the last size delivered without a
        # reply (a publisher usually repeats one size).
        self.msg_line = b""
        self.msg_line_size = -1
        # A wildcard subscription's MSG line starts by subject (`FrameSink.frame`), bounded; made
        # at its first delivery.
        self.prefixes: dict[str, bytes] | None = None

    def msg_start(self) -> bytes:
        """``msg_prefix``, encoded at its first use (a literal subscription)."""
        prefix = self.msg_prefix
        if not prefix:
            prefix = self.msg_prefix = msg_prefix(self.subject.encode(), self.sid_b)
        return prefix

    def hmsg_start(self) -> bytes:
        """``hmsg_prefix``, encoded at its first use (a literal subscription)."""
        prefix = self.hmsg_prefix
        if not prefix:
            prefix = self.hmsg_prefix = hmsg_prefix(self.subject.encode(), self.sid_b)
        return prefix

    def __repr__(self) -> str:
        queue = f" queue={self.queue!r}" if self.queue else ""
        return f"<Subscription {self.subject!r} sid={self.sid!r}{queue}>"


class InternalSub(Subscription):
    """A subscription owned by the server itself (see ``Server.subscribe_internal``).

    ``traced`` is the callback a traced message goes to instead (``msgtrace.TracedCallback``: the
    trace first), for the subscriptions whose work shows in a trace event (a stream's ingest, the
    import forwarders); without it a traced message reaches ``callback`` as any other. ``run``
    (``server.RunCallback``) takes, in one call, each stretch of a read's messages that reached it
    alone in a row (``Router.route_msgs``); without it each reaches ``callback``."""

    def __init__(
        self,
        account: Any,
        subject: str,
        sid: str,
        queue: str,
        callback: Any,
        traced: Any = None,
        run: Any = None,
    ) -> None:
        super().__init__(subject, sid, queue, client=None, callback=callback)
        self.account = account
        self.traced = traced
        self.run = run

    def unsubscribe(self) -> None:
        if not self.closed:
            self.closed = True
            self.account.remove_subscription(self)


class Shadow(Subscription):
    """An importing account's subscription as a stream import puts it in the exporter's sublist
    (nats-server ``addShadowSub``: a copy of the subscription under the exporter's subject, its
    ``im`` the import): a publish in the exporter finds the importer's receivers in its one match.

    When the import delivers under the subject published (no ``prefix``, no ``to`` that differs),
    the shadow is the subscription's copy — its connection, sink and sid, or its callbacks — and
    the router delivers to it as to any subscription (in runs too). Else (``mapped``) it looks like
    an internal subscription whose ``callback`` / ``reroute`` (set by ``imports``) deliver to
    ``origin`` under the importer's subject: a message at a time. Its ``max_msgs`` stays 0, as the
    copy's in nats-server (an auto-unsubscribe counts what the subscription's own subject brings)."""

    def __init__(self, origin: Subscription, subject: str, link: Any, mapped: bool) -> None:
        super().__init__(subject, origin.sid, origin.queue, client=None if mapped else origin.client)
        self.origin = origin
        #: The stream import (``imports._StreamLink``): its importer and subject mapping.
        self.link: Any = link
        self.mapped = mapped
        self.account = origin.account
        if not mapped:
            self.callback = origin.callback
            self.run = origin.run
            self.traced = origin.traced
            self.reroute = origin.reroute
            self.takes_deliveries = origin.takes_deliveries
            self.takes_runs = origin.takes_runs

    def __repr__(self) -> str:
        return f"<Shadow {self.subject!r} of {self.origin!r}>"
