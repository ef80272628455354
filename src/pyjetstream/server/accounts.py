"""Accounts: isolated subject spaces, each with its own JetStream (nats-server ``accounts.go``).

Every connection is bound to one `Account` when it authenticates (the global account ``$G``
when the user names none); its subscriptions live in that account's sublist and its publishes are
routed there only, so two accounts never see each other's messages unless one exports a subject
and the other imports it (`pyjetstream.server.imports`).

An account also offers the server's internal API (``subscribe_internal``, ``publish_internal``,
``has_interest``, ``interest_count``, ``on_interest_change``) scoped to itself: the JetStream
engine of an account talks to its account exactly as it would to the server, and its API
subscriptions, deliveries and interest checks stay inside the account. The store directory of an
account's streams is ``<store_dir>/jetstream/<account>/streams/`` (nats-server's layout).

JetStream per account follows nats-server's ``configAllJetStreamAccounts``: with no accounts
configured, the global account has JetStream (with the server-wide limits); otherwise only the
accounts with a ``jetstream`` block (``enabled`` or limits) have it, and every other account —
the global one and the system account included — answers ``$JS.API`` requests with 10039
"JetStream not enabled for account".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyjetstream.api.constants import ACK_PREFIX
from pyjetstream.api.subjects import domain_mappings
from pyjetstream.protocol.headers import may_be_traced
from pyjetstream.protocol.subjects import FWC, PWC, is_subset
from pyjetstream.server.jetstream.api_disabled import DisabledApi
from pyjetstream.server.jetstream.engine import JetStreamEngine
from pyjetstream.server.mappings import MappingError, Mappings, cluster_name
from pyjetstream.server.options import Account as AccountConfig
from pyjetstream.server.options import AccountJetStreamLimits, MapDest
from pyjetstream.server.options import Mappings as MappingsConfig
from pyjetstream.server.sublist import Sublist
from pyjetstream.server.subscription import Subscription

if TYPE_CHECKING:
    from pyjetstream.server.msgtrace import TracedCallback
    from pyjetstream.server.server import InternalCallback, InternalSub, RunCallback, Server

__all__ = ["GLOBAL_ACCOUNT", "SYSTEM_ACCOUNT", "Account"]

GLOBAL_ACCOUNT = "$G"
SYSTEM_ACCOUNT = "$SYS"
#: The subjects unique per message that the sublist matches by prefix (``Sublist.index_prefix``):
#: a request's reply to a requester's ``_INBOX.<id>.*`` (nats.go, nats.py, our client), a JetStream
#: ack to a consumer's ``$JS.ACK.<stream>.<consumer>.>``, a response to a request through a service
#: import to its exporter's ``_R_.<tag>.>`` (``imports.ServiceExport``: one fresh reply a request, each
#: a cache miss that evicted what the cache held).
PREFIX_INDEXES = (("_INBOX.", 1, PWC), (ACK_PREFIX, 2, FWC), ("_R_.", 1, FWC))


class Account:
    """One account at run time: its sublist, its connections, JetStream, imports and exports."""

    def __init__(self, server: Server, name: str, config: AccountConfig | None = None) -> None:
        self.server = server
        self.name = name
        self.config = config
        self.sublist = Sublist()
        for head, key_tokens, wildcard in PREFIX_INDEXES:
            self.sublist.index_prefix(head, key_tokens, wildcard)
        #: The account's JetStream engine, or None (JetStream not enabled for this account).
        self.jetstream: Any = None
        #: JetStream limits when the account may use JetStream (nats-server's ``jsLimits``).
        self.js_limits: AccountJetStreamLimits | None = None
        #: What its connections that are gone received and were sent (``/accstatz``, nats-server's
        #: account stats): in_msgs, in_bytes, out_msgs, out_bytes.
        self.closed_totals = [0, 0, 0, 0]
        #: Its connected clients (nats-server ``Account.clients``), kept by `Server.join_account`.
        self.clients: set[Any] = set()
        self.slow_consumers = 0
        self.updated_ns = time.time_ns()
        self.is_system = False
        #: Exports and imports (``pyjetstream.server.imports``), wired by the server at start.
        self.exports: list[Any] = []
        self.imports: list[Any] = []
        #: What the imports keep of it as an importer, by class (``imports._PerImporter``: its
        #: stream imports' shadows, its requesters' replies awaiting responses).
        self.import_state: dict[type, Any] = {}
        #: Its service exports' response routing (``imports.ServiceExport``), when it has any.
        self.responses: Any = None
        #: ``msg_trace { dest, sampling }``: where a sampled ``traceparent`` is traced to.
        self.trace_dest = config.msg_trace_dest if config is not None else ""
        self.trace_sampling = config.msg_trace_sampling if config is not None else 0
        self._interest_callbacks: list[Callable[[Subscription, bool], None]] = []
        self._disabled_api: Any = None
        #: Subject mappings applied to its clients' publishes; ``mapped`` (nats-server
        #: ``hasMappings``) is the one test a publish pays when there are none.
        self.mappings = Mappings(cluster_name(server.options))
        self.mapped = False
        # The configured mappings, and those the server adds (a JetStream domain's; a default
        # domain's, which replace configured ones of the same source).
        self._configured: MappingsConfig = {}
        self._implicit: MappingsConfig = {}
        self._default_domain = self._default_domain_mappings(server, name, config)
        if (config is not None and config.mappings) or self._default_domain:
            self.set_mappings(config.mappings if config is not None else {})

    def __repr__(self) -> str:
        return f"<Account {self.name}>"

    # ---------------------------------------------------------------- what the engine reads

    @property
    def loop(self) -> Any:
        return self.server.loop

    @property
    def logger(self) -> Any:
        return self.server.logger

    @property
    def options(self) -> Any:
        return self.server.options

    @property
    def server_id(self) -> str:
        return self.server.server_id

    @property
    def limits(self) -> Any:
        """Connection limits of the config (``limits {}``), if any."""
        return self.config.limits if self.config is not None else None

    def connection_gone(self, conn: Any) -> None:
        """Keep what a closed connection of this account counted (nats-server's account stats outlive it)."""
        totals = self.closed_totals
        totals[0] += conn.in_msgs
        totals[1] += conn.in_bytes
        totals[2] += conn.out_msgs
        totals[3] += conn.out_bytes

    @staticmethod
    def _default_domain_mappings(server: Any, name: str, config: AccountConfig | None) -> MappingsConfig:
        """``default_js_domain``: an account without JetStream of its own sends its API requests
        to that domain — the JetStream domain's mappings the other way round, ``$JS.API.STREAM.>``
        to ``$JS.<domain>.API.STREAM.>``, ``$KV.>`` to ``$JS.<domain>.API.$KV.>`` (nats-server
        ``registerAccountNoLock``: ``acc.AddMapping(dest, src)`` over ``generateJSMappingTable``;
        an account with JetStream is skipped with a warning)."""
        domain = server.options.default_js_domain.get(name, "")
        if not domain:
            return {}
        if config is not None and config.jetstream:
            server.logger.warning(f'Skipping Default Domain "{domain}", set for JetStream enabled account "{name}"')
            return {}
        return {dest: [MapDest(subject=src)] for src, dest in domain_mappings(domain).items()}

    def set_mappings(self, config: MappingsConfig) -> None:
        """This account's mappings from now on (configuration, reload, account JWT). One that
        is not valid is left out, as nats-server's JWT update leaves it (the configuration's are
        checked as it is loaded). The server's own (a JetStream domain's) follow, unless one of
        these has their source (nats-server adds them after, skipping such a source)."""
        self._configured = config
        mappings = Mappings(cluster_name(self.server.options))
        implicit = {src: dests for src, dests in self._implicit.items() if src not in config}
        for src, dests in {**config, **implicit, **self._default_domain}.items():
            try:
                mappings.add(src, dests)
            except MappingError as exc:
                self.server.logger.warning("Account %s: mapping of %r left out: %s", self.name, src, exc)
        self.mappings = mappings
        self.mapped = bool(mappings)

    def map_subject(self, subject: str) -> str:
        """The subject a client's publish to ``subject`` goes to (nats-server
        ``selectMappedSubject``); the caller tests `mapped` first."""
        mapped = self.mappings.select(subject)
        return subject if mapped is None else mapped

    def map_subjects(self, subjects: list[str], hdrs: list[bytes | None]) -> list[str]:
        """`map_subject` of each subject of a run (the caller tests `mapped` first). A message that
        may be traced keeps its subject: the router hands it to the client's trace path, which
        maps it and records the ``sm`` event. The rest of a run that is not routed keeps its own
        subjects, to be mapped when it is."""
        select = self.mappings.select
        traced_too = bool(self.trace_dest)
        out = []
        for subject, hdr in zip(subjects, hdrs, strict=True):
            if hdr is None or not may_be_traced(hdr, traced_too):
                mapped = select(subject)
                if mapped is not None:
                    subject = mapped
            out.append(subject)
        return out

    # ------------------------------------------------------------------ subscriptions

    def add_subscription(self, sub: Subscription) -> None:
        """Index a subscription (raises SublistError for an invalid subject)."""
        self.sublist.insert(sub)
        self.server.subscriptions += 1
        if self._interest_callbacks:
            self._notify_interest(sub, True)

    def remove_subscription(self, sub: Subscription) -> None:
        sub.closed = True
        if self.sublist.remove(sub):
            self.server.subscriptions -= 1
            if self._interest_callbacks:
                self._notify_interest(sub, False)

    def _notify_interest(self, sub: Subscription, added: bool) -> None:
        for callback in list(self._interest_callbacks):
            try:
                callback(sub, added)
            except Exception:
                self.server.logger.exception("interest-change callback failed")

    def deliver_interest(self, subject: str, queue: str = "") -> bool:
        """A subscription on exactly ``subject`` (in ``queue``, if one), an importing account's
        through a stream import included: what binds a push consumer (nats-server registers the
        deliver subject's interest notification in the account's sublist, shadow subscriptions
        included: they are in our sublist under our subject, `subscription.Shadow`)."""
        psubs, qsubs = self.sublist.match(subject)
        if not queue:
            return any(s.subject == subject for s in psubs)
        return any(s.subject == subject and s.queue == queue for members in qsubs for s in members)

    def reply_interest(self, reply: str) -> bool:
        """Whether anyone listens on a pull request's ``reply``: a service import's ``_R_`` reply is
        tracked down to the requester's own reply in its account, so a request whose requester went
        away is dropped (nats-server ``trackDownAccountAndInterest``)."""
        account: Account = self
        while reply.startswith("_R_.") and account.responses is not None:
            target = account.responses.pending.get(reply)
            if target is None:  # a response import that went (its requester left) has none
                return not reply.startswith(account.responses.prefix)
            account, reply = target.importer, target.reply
        psubs, qsubs = account.sublist.match(reply)
        return bool(psubs or qsubs)

    def on_interest_change(self, callback: Callable[[Subscription, bool], None]) -> Callable[[], None]:
        self._interest_callbacks.append(callback)

        def remove() -> None:
            if callback in self._interest_callbacks:
                self._interest_callbacks.remove(callback)

        return remove

    # -------------------------------------------------------------- internal API, scoped

    def subscribe_internal(
        self,
        subject: str,
        callback: InternalCallback,
        queue: str = "",
        traced: TracedCallback | None = None,
        run: RunCallback | None = None,
        no_shadows: bool = False,
        takes_deliveries: bool = False,
        takes_runs: Any = None,
    ) -> InternalSub:
        return self.server.subscribe_internal(
            subject,
            callback,
            queue,
            account=self,
            traced=traced,
            run=run,
            no_shadows=no_shadows,
            takes_deliveries=takes_deliveries,
            takes_runs=takes_runs,
        )

    def publish_replies(self, replies: list[tuple[str, bytes]]) -> None:
        self.server.publish_replies(replies, self)

    def publish_run(self, subjects: list[str], hdrs: list[bytes | None], payloads: list[bytes]) -> None:
        self.server.publish_run(subjects, hdrs, payloads, self)

    def after_read(self, callback: Callable[[], None]) -> None:
        self.server.after_read(callback)

    def current_read(self) -> int:
        return self.server.current_read()

    def publish_internal(
        self,
        subject: str,
        payload: bytes,
        reply: str = "",
        hdr: bytes | None = None,
        show_subject: str | None = None,
    ) -> bool:
        return self.server.route(subject, reply, hdr, payload, None, show_subject, self)

    def lone_receiver(self, subject: str) -> Subscription | None:
        return self.server.lone_receiver(subject, self)

    def client_receivers(self, subject: str) -> tuple[Subscription, ...]:
        return self.server.client_receivers(subject, self)

    def count_matches(self, n: int) -> None:
        self.sublist.matches += n

    def has_interest(self, subject: str, clients_only: bool = False) -> bool:
        psubs, qsubs = self.sublist.match(subject)
        if not clients_only:
            return bool(psubs or qsubs)
        return any(s.client is not None for s in psubs) or any(
            s.client is not None for group in qsubs for s in group
        )

    def interest_count(self, subject: str, clients_only: bool = False) -> int:
        psubs, qsubs = self.sublist.match(subject)
        subs = [*psubs, *(s for group in qsubs for s in group)]
        if clients_only:
            return sum(1 for s in subs if s.client is not None)
        return len(subs)

    # ------------------------------------------------------------------------ JetStream

    @property
    def jetstream_enabled(self) -> bool:
        return self.jetstream is not None

    async def enable_jetstream(self, limits: AccountJetStreamLimits) -> None:
        """Start this account's engine (store under ``<store_dir>/jetstream/<name>``)."""

        self.js_limits = limits
        engine = JetStreamEngine(self)
        await engine.start()
        self.jetstream = engine
        self.server.js.add(engine)
        domain = getattr(engine, "domain", "")  # (an engine stand-in may have none)
        if domain:  # nats-server enableAllJetStreamServiceImportsAndMappings
            self._add_domain_mappings(domain)

    def _add_domain_mappings(self, domain: str) -> None:
        self._implicit = {src: [MapDest(subject=dest)] for src, dest in domain_mappings(domain).items()}
        self.set_mappings(self._configured)

    def answer_jetstream_disabled(self) -> None:
        """Answer ``$JS.API`` requests with 10039, as nats-server does for such accounts. Such an
        account gets the JetStream domain's mappings too, unless one of its service imports
        takes ``$JS.API.INFO`` (nats-server ``configJetStream`` ->
        ``enableJetStreamInfoServiceImportOnly``, ``serviceImportShadowed``)."""

        self._disabled_api = DisabledApi(self)
        self._disabled_api.subscribe()
        domain = self.options.jetstream_domain if self.options.jetstream else ""
        if domain and not self.is_system and not self._imports_the_api():
            self._add_domain_mappings(domain)

    def _imports_the_api(self) -> bool:
        imports = self.config.imports if self.config is not None else []
        local = [imp.to or imp.subject for imp in imports if imp.kind == "service"]
        return any(is_subset("$JS.API.INFO", subject) for subject in local)

    def stop_disabled_api(self) -> None:
        if self._disabled_api is not None:
            self._disabled_api.shutdown()
            self._disabled_api = None

    async def stop_jetstream(self) -> None:
        if self.jetstream is not None:
            try:
                await self.jetstream.stop()
            except Exception:
                self.server.logger.exception("JetStream stop of account %s failed", self.name)
