"""Stream and service imports between accounts (nats-server ``accounts.go``: ``AddStreamImport``,
``AddServiceImport``, response service imports).

- A **stream import** brings what the exporting account publishes on ``subject`` into the importing
  account, under the same subject, ``to`` (wildcards mapped in order) or ``prefix.subject``. Each
  subscription of the importer inside it has a *shadow* in the exporter's sublist (nats-server's
  shadow subscriptions, `_ImportInterest`): a publish there reaches it in the one match that
  finds the exporter's own receivers — not on through another stream import of what the
  importer re-exports (no shadow is made of a shadow).
- A **service import** lets clients of the importer send requests to the exporter: an internal
  subscription in the importer on the local subject (``to``, else the exported subject) routes the
  request in the exporter under the exported subject. A reply subject is replaced by a fresh
  ``_R_.<account tag>.<id>`` of the exporter; the exporter's single ``_R_.<tag>.>`` subscription
  routes responses back to the requester's reply in the importer — one response for
  ``singleton`` services, any number for ``stream``/``chunked`` ones until the response
  threshold passes. A request nobody in the exporter listens to gets no-responders, as from a
  local subject. A client's request carries a ``Nats-Request-Info`` header naming its account.

JetStream across accounts rides on both (nats.js's ``jetstreamExportServerConf``: ``$JS.API.>``
imported under a prefix, the deliveries back through a stream import of the inbox prefix): a
consumer's delivery is routed on its deliver (or pull reply) subject and shown under the stream's
subject, so a service import's forwarder and a mapped shadow take both (``Subscription.reroute``)
and route on by the first; a pull request's ``_R_`` reply stays mapped while a streamed export's
responses keep coming; a push consumer in the exporter is bound by an importer's subscription on
exactly its deliver subject (its shadow there).
"""

from __future__ import annotations

import json
import os
import random
import string
from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import Struct, field

from pyjetstream.api.constants import ACK_PREFIX
from pyjetstream.api.timefmt import format_time
from pyjetstream.protocol.gsl import GenericSublist, InvalidSubject
from pyjetstream.protocol.headers import set_header
from pyjetstream.protocol.subjects import has_wildcard, is_subset
from pyjetstream.server import msgtrace
from pyjetstream.server.msgtrace import DEST_HDR_B
from pyjetstream.server.options import AccountExport, AccountImport
from pyjetstream.server.sublist import SublistError
from pyjetstream.server.subscription import Shadow

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.msgtrace import MsgTrace
    from pyjetstream.server.server import Server

_Made = TypeVar("_Made", bound="_PerImporter")

__all__ = ["CLIENT_INFO_HDR", "ServiceExport", "client_info", "link_imports", "map_subject"]

_ALPHABET = string.ascii_letters + string.digits
REPLY_PREFIX = "_R_"
CLIENT_INFO_HDR = b"Nats-Request-Info"
#: How nats-server's ``/accountz`` names response types (Go ``ServiceRespType.String()``).
_RESPONSE_TYPE_NAMES = {"singleton": "Singleton", "stream": "Streamed", "chunked": "Chunked"}


#: The reply tokens' randomness: nats-server draws them from ``fastrand`` (``newServiceReply``), not
#: from the system's cryptographic source, whose six calls a request were a tenth of its CPU here.
_RANDOM = random.Random(int.from_bytes(os.urandom(8), "big"))


def _token(n: int) -> str:
    return "".join(_RANDOM.choices(_ALPHABET, k=n))


def map_subject(subject: str, src: str, dest: str) -> str:
    """Map ``subject`` (matching ``src``) onto ``dest``: the tokens ``src``'s wildcards matched
    fill ``dest``'s wildcards in order (``>`` takes the rest)."""
    if src == dest or not dest:
        return subject
    stoks, tokens = src.split("."), subject.split(".")
    captured: list[str] = []
    for i, tok in enumerate(stoks):
        if tok == "*":
            captured.append(tokens[i])
        elif tok == ">":
            captured.append(".".join(tokens[i:]))
            break
    out, k = [], 0
    for tok in dest.split("."):
        if tok in ("*", ">") and k < len(captured):
            out.append(captured[k])
            k += 1
        else:
            out.append(tok)
    return ".".join(out)


def client_info(server: Server, conn: Any, detailed: bool, server_info: bool = True) -> dict[str, Any]:
    """nats-server ``getClientInfo`` (+ ``addServerAndClusterInfo``): the ``Nats-Request-Info`` of a
    request through a service import — the account and RTT always, the rest when ``detailed``
    (a shared import), the server's name for the system imports (``server_info``)."""
    info: dict[str, Any] = {}
    if detailed:
        info.update(start=format_time(conn.start_wall_ns), host=conn.ip, id=conn.cid)
    info["acc"] = conn.account.name
    if detailed:
        info.update({k: v for k, v in (("user", conn.user), ("name", conn.name), ("lang", conn.lang),
                                        ("ver", conn.version)) if v})  # fmt: skip
    rtt = int(conn.rtt * 1e9)
    if rtt:
        info["rtt"] = rtt
    if server_info or detailed:
        info["server"] = server.server_name
    if detailed:
        info.update(kind="Client", client_type="websocket" if conn.websocket else "nats")
    return info


def _with_request_info(server: Server, hdr: bytes | None, client: Any, share: bool) -> bytes | None:
    """A client's request through a service import names its requester to the exporter
    (nats-server ``processServiceImport``: ``Nats-Request-Info``; not shared: account and RTT;
    shared (``si.share``): ``getClientInfo(true)``, the client's whole description)."""
    if client is None:
        return hdr
    if INFO_KEPT:
        kept = client.request_infos
        if kept is None:
            kept = client.request_infos = {}
        known = kept.get(share)
        rtt = client.rtt
        if known is not None and known[0] == rtt:
            info = known[1]
        else:
            info = _request_info(server, client, share)
            kept[share] = (rtt, info)
    else:
        info = _request_info(server, client, share)
    if hdr is None and INFO_KEPT:
        return _info_block(info)
    return set_header(hdr or b"", CLIENT_INFO_HDR, info)


def _request_info(server: Server, client: Any, share: bool) -> bytes:
    return json.dumps(client_info(server, client, share, server_info=False), separators=(",", ":")).encode()


#: A connection's ``Nats-Request-Info`` values (``ClientConnection.request_infos``, by ``share``), each
#: with the RTT it names: all it says is fixed at CONNECT but the RTT, so it is made again only when
#: that changed (nats-server marshals it at every request; ~2.5 µs a request here). Off: made at every
#: request (the differential test).
INFO_KEPT = True
#: The header block of a request without headers, by its info value (bounded: values are few — one or
#: two a connection —, and a new RTT makes a new one).
_blocks: dict[bytes, bytes] = {}


def _info_block(info: bytes) -> bytes:
    block = _blocks.get(info)
    if block is None:
        if len(_blocks) >= 4096:
            _blocks.clear()
        block = _blocks[info] = set_header(b"", CLIENT_INFO_HDR, info)
    return block


class _Pending(Struct):
    """A requester's reply waiting for the exporter's response(s) (nats-server's response
    service import): ``ts`` when it was made or last delivered a streamed response."""

    importer: Account
    reply: str
    singleton: bool
    threshold: float
    ts: float
    timer: Any = None


class ServiceExport(Struct):
    """An exporter's response routing: the ``_R_.<tag>.>`` subscription and pending replies."""

    account: Account
    tag: str = field(default_factory=lambda: _token(6))
    pending: dict[str, _Pending] = field(default_factory=dict)
    sub: Any = None

    @property
    def prefix(self) -> str:
        """The start of its ``_R_`` replies."""
        return f"{REPLY_PREFIX}.{self.tag}."

    def start(self) -> None:
        self.sub = self.account.subscribe_internal(f"{REPLY_PREFIX}.{self.tag}.>", self.on_response, no_shadows=True)
        self.sub.reroute = self.on_shown_response

    def new_reply(self, importer: Account, reply: str, export: AccountExport) -> str:
        mapped = f"{REPLY_PREFIX}.{self.tag}.{_token(6)}"
        loop = self.account.loop
        threshold = export.response_threshold
        entry = _Pending(importer, reply, export.response_type == "singleton", threshold, loop.time())
        self.pending[mapped] = entry
        entry.timer = loop.call_later(threshold, self._expire, mapped)
        _Reverse.of(importer).add(reply, self, mapped)
        return mapped

    def _expire(self, mapped: str) -> None:
        """nats-server ``checkExpiredResponses``: a response import older than the threshold goes;
        a streamed one's age counts from its last response (a pull request's deliveries go on as
        long as they come)."""
        entry = self.pending.get(mapped)
        if entry is None:
            return
        loop = self.account.loop
        left = entry.ts + entry.threshold - loop.time()
        if left > 0:
            entry.timer = loop.call_later(left, self._expire, mapped)
        else:
            entry.timer = None
            self.forget(mapped)

    def monitor_info(self) -> dict[str, Any]:
        """nats-server's ``/accountz`` ``responses``: each live response import (``newExtImport``).
        Its ``type`` is 2, not "service": Go's JSON does not call ``ExportType``'s pointer-receiver
        ``MarshalJSON`` on a map's values."""
        out: dict[str, Any] = {}
        for mapped, e in self.pending.items():
            out[mapped] = {"subject": e.reply, "account": e.importer.name, "to": mapped, "local_subject": mapped,
                           "type": 2, "invalid": False, "share": False, "tracking": False}  # fmt: skip
        return out

    def forget(self, mapped: str) -> None:
        entry = self.pending.pop(mapped, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        _Reverse.of(entry.importer).discard(entry.reply, mapped)

    def on_response(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        self.on_shown_response(subject, None, reply, hdr, payload, client)

    def on_shown_response(
        self, subject: str, show: str | None, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """A response on ``_R_.<tag>.<id>`` to the requester's reply in the importer, shown as
        ``show`` when it has its own subject (a consumer's delivery to a pull request's reply).
        nats-server ``processServiceImport`` for a response: the mapping goes after a singleton's
        response, an empty message (a streamed response's end) or one nobody received; a
        streamed one's age restarts with each response delivered."""
        entry = self.pending.get(subject)
        if entry is None:
            return
        server = self.account.server
        delivered = server.route(entry.reply, reply, hdr, payload, None, show, entry.importer)
        if entry.singleton or not delivered or (not payload and not hdr):
            self.forget(subject)
        else:
            entry.ts = self.account.loop.time()


class _PerImporter:
    """What an importing account has one of, made at its first use (`of`): kept by the account
    (``Account.import_state``, by class), the one rule of `_Reverse` and `_ImportInterest`."""

    def __init__(self, importer: Account) -> None:
        self.importer = importer

    @classmethod
    def of(cls: type[_Made], importer: Account) -> _Made:
        state = importer.import_state
        found = state.get(cls)
        if found is None:
            found = state[cls] = cls(importer)
        return found


class _Reverse(_PerImporter):
    """An importing account's replies waiting for responses (nats-server's reverse response map,
    ``addReverseRespMapEntry``): when its last subscription that could take a reply goes, the
    response imports for that reply go too (``checkForReverseEntry``) — a pull request whose
    requester left stops being a response import in the exporter at once, not at the threshold."""

    def __init__(self, importer: Account) -> None:
        self.importer = importer
        self.entries: dict[str, list[tuple[ServiceExport, str]]] = {}
        importer.on_interest_change(self.changed)

    def add(self, reply: str, service: ServiceExport, mapped: str) -> None:
        self.entries.setdefault(reply, []).append((service, mapped))

    def discard(self, reply: str, mapped: str) -> None:
        waiting = self.entries.get(reply)
        if waiting is None:
            return
        self.entries[reply] = rest = [w for w in waiting if w[1] != mapped]
        if not rest:
            del self.entries[reply]

    def changed(self, sub: Any, added: bool) -> None:
        """A subscription went: the replies it could take that nobody else takes lose their
        response imports (``checkForReverseEntries`` for a wildcard one)."""
        entries = self.entries
        if added or not entries:
            return
        subject = sub.subject
        if sub.literal:
            replies = [subject] if subject in entries else []
        else:
            replies = [r for r in entries if is_subset(r, subject)]
        sublist = self.importer.sublist
        for reply in replies:
            psubs, qsubs = sublist.match(reply)
            if not psubs and not qsubs:
                for service, mapped in list(entries.get(reply, ())):
                    service.forget(mapped)


def _find_export(exporter: Account, imp: AccountImport) -> AccountExport | None:
    for export in exporter.config.exports if exporter.config is not None else []:
        if export.kind == imp.kind and is_subset(imp.subject, export.subject):
            return export
    return None


def link_imports(accounts: dict[str, Account]) -> None:
    """Wire every configured import (the config has checked that each one is authorized)."""
    services: dict[str, ServiceExport] = {}
    interests: list[_ImportInterest] = []
    for importer in accounts.values():
        config = importer.config
        if config is None:
            continue
        for imp in config.imports:
            exporter = accounts.get(imp.account)
            if exporter is None:
                continue
            export = _find_export(exporter, imp)
            if export is None:
                continue
            importer.imports.append(_ImportInfo(imp, exporter.name))
            if imp.kind == "stream":
                interests.append(_link_stream(importer, exporter, imp))
            else:
                service = services.get(exporter.name)
                if service is None:
                    service = services[exporter.name] = exporter.responses = ServiceExport(exporter)
                    service.start()
                _link_service(importer, exporter, imp, export, service)
    for interest in interests:
        interest.arm()
    for account in accounts.values():
        if account.config is not None:
            account.exports = [_ExportInfo(e) for e in account.config.exports]


def _link_stream(importer: Account, exporter: Account, imp: AccountImport) -> _ImportInterest:
    """A stream import: the importer's subscriptions inside it get shadows in the exporter
    (`_ImportInterest`, armed by `link_imports` once every import is there)."""
    interest = _ImportInterest.of(importer)
    interest.add(_StreamLink(importer, exporter, imp))
    return interest


#: An importer's subscription changes reach only the stream imports whose subjects it falls in
#: (`_ImportInterest`); off: every stream import of the importer looks at each change.
INDEXED = True
#: A shadow of an import that keeps the subject is its subscription's copy, delivered to by the
#: router as that subscription (in runs); off: every shadow delivers through `_StreamLink.deliver`,
#: a message at a time, as a mapped one does (the general path; the differential test compares).
COPIES = True


class _ImportInterest(_PerImporter):
    """An importing account's subscriptions, shadowed in the exporters of the stream imports they
    fall in (nats-server ``addShadowSubscriptions`` / ``addShadowSub``; the shadows go with the
    subscription, ``unsubscribe``'s ``sub.shadow``).

    A publish in an exporter then finds the importers' receivers in its one match (`Shadow`), where
    an import used to be an internal subscription in the exporter routing each message again in
    the importer: a second match, and a callback per message outside the router's runs. Shadows
    are made of the importer's own subscriptions (a client's or internal), never of a shadow nor
    of a service import's subscription: a chain ``A -> M -> B`` brings B nothing A publishes
    (checked on 2.15.1), what M publishes — and what a consumer of M's delivers — reaches B.

    nats-server walks all of the account's stream imports for each new subscription; here a
    literal subscription's imports are found by one match of its subject in a `GenericSublist` of the
    imports' subjects, a wildcard one's among the imports whose first token its first token
    matches (nats-server's walk when it is itself a wildcard). ``told`` counts the imports looked
    at, ``made`` the shadows made (step counts for the tests)."""

    def __init__(self, importer: Account) -> None:
        self.importer = importer
        self.entries: list[_StreamLink] = []
        self.sublist: GenericSublist[_StreamLink] = GenericSublist()
        self.unindexed: list[_StreamLink] = []  # (subjects the sublist refuses: told of every change)
        self.by_first: dict[str, list[_StreamLink]] = {}  # imports by their subject's first token
        self.wild_first: list[_StreamLink] = []  # imports whose subject starts with a wildcard
        self.shadows: dict[Any, list[Shadow]] = {}  # an importer's subscription -> its shadows
        self.armed = False
        self.told = 0
        self.made = 0

    def add(self, link: _StreamLink) -> None:
        self.entries.append(link)
        try:
            self.sublist.insert(link.subject, link)
        except InvalidSubject:
            self.unindexed.append(link)
        first = link.subject.split(".", 1)[0]
        if first in ("*", ">"):
            self.wild_first.append(link)
        else:
            self.by_first.setdefault(first, []).append(link)

    def arm(self) -> None:
        """Shadow the subscriptions the importer has already (its JetStream's, made before the
        imports are linked), then each one as it comes."""
        if self.armed:
            return
        self.armed = True
        for sub in self.importer.sublist.all_subscriptions():
            self.changed(sub, True)
        self.importer.on_interest_change(self.changed)

    def candidates(self, subject: str, literal: bool) -> list[_StreamLink]:
        """The imports a subscription to ``subject`` may fall in (see the class docstring)."""
        if not INDEXED:
            return self.entries
        if literal:
            return [*self.sublist.match(subject), *self.unindexed]
        first = subject.split(".", 1)[0]
        if first in ("*", ">"):
            return self.entries
        return [*self.by_first.get(first, ()), *self.wild_first]

    def changed(self, sub: Any, added: bool) -> None:
        if not added:
            shadows = self.shadows.pop(sub, None)
            if shadows:
                for shadow in shadows:
                    shadow.link.exporter.remove_subscription(shadow)
            return
        if sub.origin is not None or sub.no_shadows or sub in self.shadows:
            return
        links = self.candidates(sub.subject, sub.literal)
        self.told += len(links)
        made: list[Shadow] = []
        for link in links:
            subject = link.shadow_subject(sub.subject)
            if subject is None:
                continue
            shadow = link.shadow(sub, subject)
            try:
                link.exporter.add_subscription(shadow)
            except SublistError:
                continue
            made.append(shadow)
        if made:
            self.made += len(made)
            self.shadows[sub] = made


def _intersection(a: str, b: str) -> str | None:
    """The subject both wildcard subjects ``a`` and ``b`` match (token by token: a literal over a
    wildcard, ``*`` over ``>``), None when they share none (nats-server ``addShadowSubscriptions``'
    overlap subject)."""
    at, bt = a.split("."), b.split(".")
    out: list[str] = []
    for i, tok in enumerate(at):
        if i >= len(bt):
            return None
        other = bt[i]
        if tok == ">":
            return ".".join(out + bt[i:])
        if other == ">":
            return ".".join(out + at[i:])
        if tok == "*":
            out.append(other)
        elif other == "*" or other == tok:
            out.append(tok)
        else:
            return None
    return ".".join(out) if len(at) == len(bt) else None


class _StreamLink:
    """A stream import: its subject in the importer (``subject``: ``prefix.subject``, ``to``, or
    the exported subject; indexed by `_ImportInterest`) and the mapping both ways."""

    __slots__ = ("exporter", "imp", "importer", "mapped", "subject")

    def __init__(self, importer: Account, exporter: Account, imp: AccountImport) -> None:
        self.importer, self.exporter, self.imp = importer, exporter, imp
        self.subject = f"{imp.prefix}.{imp.subject}" if imp.prefix else imp.to or imp.subject
        #: Whether a message is delivered in the importer under another subject than published.
        self.mapped = self.subject != imp.subject

    def local(self, subject: str) -> str:
        """The exporter's ``subject`` as the importer sees it (``prefix``, ``to``)."""
        imp = self.imp
        if imp.prefix:
            return f"{imp.prefix}.{subject}"
        return map_subject(subject, imp.subject, imp.to) if imp.to else subject

    def remote(self, local: str) -> str:
        """The exporter's subject of ``local``, a subject (or wildcard) inside the import's."""
        imp = self.imp
        if imp.prefix:
            return local[len(imp.prefix) + 1 :]
        return map_subject(local, imp.to, imp.subject) if imp.to else local

    def shadow_subject(self, subject: str) -> str | None:
        """The subject of the shadow of an importer's subscription to ``subject``, None when the
        import brings it nothing (nats-server ``addShadowSubscriptions``' four cases: the import's
        subject, a subscription inside it — mapped back —, one holding it — the exported subject —,
        one overlapping it — their overlap mapped back)."""
        own = self.subject
        if subject == own:
            return self.imp.subject
        if is_subset(subject, own):
            return self.remote(subject)
        if not has_wildcard(subject):
            return None
        if is_subset(own, subject):
            return self.imp.subject
        overlap = _intersection(subject, own)
        return None if overlap is None else self.remote(overlap)

    def shadow(self, origin: Any, subject: str) -> Shadow:
        """``origin``'s shadow on the exporter's ``subject``; a mapped one delivers through
        `deliver` (see `Shadow`)."""
        mapped = self.mapped or not COPIES
        shadow = Shadow(origin, subject, self, mapped)
        if mapped:

            def callback(subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
                self.deliver(shadow, subject, None, reply, hdr, payload, client)

            def reroute(subject: str, show: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
                # a consumer's delivery: routed by its deliver subject, shown under the stream's
                self.deliver(shadow, subject, show, reply, hdr, payload, client)

            shadow.callback = callback
            shadow.reroute = reroute
        return shadow

    def deliver(
        self, shadow: Shadow, subject: str, show: str | None, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """A message to a mapped shadow: to its subscription under the importer's subject
        (nats-server ``processMsgResults``: ``sub.im.tr.TransformSubject``)."""
        origin = shadow.origin
        if origin.closed:
            return
        local = self.local(subject)
        sink = origin.sink
        if sink is not None:
            sink.deliver(origin, local, reply, hdr, payload, client, show)
            return
        router = self.importer.server.router
        if show is None:
            router._callback(origin, local, reply, hdr, payload, client)
        else:
            router._shown(origin, local, show, reply, hdr, payload, client)


def _link_service(
    importer: Account, exporter: Account, imp: AccountImport, export: AccountExport, service: ServiceExport
) -> None:
    local_subject = imp.to or imp.subject
    server = importer.server

    def remote_of(subject: str) -> str:
        """The exporter's subject: the import's, then the exporter's own mapping of it (nats-server
        ``processServiceImport``: ``siAcc.selectMappedSubject(to)``)."""
        remote = map_subject(subject, local_subject, imp.subject) if has_wildcard(local_subject) else imp.subject
        return exporter.map_subject(remote) if exporter.mapped else remote

    def forward(subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        remote = remote_of(subject)
        hdr = _with_request_info(server, hdr, client, imp.share)
        # nats-server keeps a ``$JS.ACK`` reply as it is (a pull consumer's trampoline across accounts)
        mapped_reply = service.new_reply(importer, reply, export) if reply and not reply.startswith(ACK_PREFIX) else reply
        delivered = server.route(remote, mapped_reply, hdr, payload, None, None, exporter)
        if not delivered and reply and client is not None and client.no_responders:
            service.forget(mapped_reply)
            server.no_responders(client, reply, subject)

    def forward_traced(
        trace: MsgTrace, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """nats-server ``processServiceImport`` with a trace: an ``si`` event; the exporter's
        deliveries are traced only when the export has ``allow_trace`` (the message then names an
        ``_R_`` reply of the exporter as its trace destination), else it goes on untraced
        (``Nats-Trace-Dest: trace disabled``) — or, trace-only, stops here."""
        remote = remote_of(subject)
        trace.service_import(exporter.name, subject, remote)
        if not export.allow_trace and trace.only:
            delivered = False
        else:
            hdr = _with_request_info(server, hdr, client, imp.share)
            mapped_reply = service.new_reply(importer, reply, export) if reply else ""
            if export.allow_trace:
                dest = service.new_reply(importer, trace.dest, export)
                hdr = set_header(hdr or b"", DEST_HDR_B, dest.encode())
                delivered = msgtrace.route(trace, remote, mapped_reply, hdr, payload, None, exporter)
                service.forget(dest)  # a single server: no other server sends its event back
            else:
                hdr = msgtrace.disable(hdr or b"")
                delivered = server.route(remote, mapped_reply, hdr, payload, None, None, exporter)
            if trace.only or (not delivered and mapped_reply):
                service.forget(mapped_reply)
        if not delivered and reply and client is not None and client.no_responders:
            server.no_responders(client, reply, subject)

    importer.subscribe_internal(local_subject, forward, traced=forward_traced, no_shadows=True)


class _ImportInfo(Struct):
    """An account's import, kept for the monitoring endpoints (``/accountz``)."""

    config: AccountImport
    account: str

    def monitor_info(self) -> dict[str, Any]:
        """As in nats-server's ``/accountz`` ``ExtImport``."""
        imp = self.config
        local = imp.to or (f"{imp.prefix}.{imp.subject}" if imp.prefix else imp.subject)
        info: dict[str, Any] = {"subject": imp.subject, "account": self.account}
        if imp.kind == "service":  # nats-server lists "to" for service imports only
            info["to"] = local
        info.update(local_subject=local, type=imp.kind, invalid=False, share=imp.share, tracking=False)
        return info


class _ExportInfo(Struct):
    """An account's export, kept for the monitoring endpoints (``/accountz``)."""

    config: AccountExport

    def monitor_info(self) -> dict[str, Any]:
        export = self.config
        info: dict[str, Any] = {"subject": export.subject, "type": export.kind}
        if export.accounts:
            info["approved_accounts"] = list(export.accounts)
        if export.kind == "service":
            info["response_type"] = _RESPONSE_TYPE_NAMES[export.response_type]
        return info
