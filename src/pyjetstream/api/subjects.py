"""JetStream API subjects: builders for clients, matching for the server, advisories.

Every request goes to ``$JS.API.<…>`` (nats-server jetstream_api.go). A JetStream domain
``D`` moves the whole API to ``$JS.D.API.<…>`` (the server maps it back); clients may also
use a custom prefix (e.g. an import). `JSApi` builds subjects under any of these;
`match_api_subject` turns a ``$JS.API`` subject into an `ApiEndpoint` and its
name tokens, with the same token-count rules as nats-server's subscriptions.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

__all__ = [
    "ADVISORY_PREFIX",
    "API_AUDIT_ADVISORY",
    "JS_ALL_API",
    "JS_API_PREFIX",
    "METRIC_PREFIX",
    "ApiEndpoint",
    "ApiMatch",
    "JSApi",
    "advisory_consumer_created",
    "advisory_consumer_deleted",
    "advisory_consumer_leader_elected",
    "advisory_consumer_pause",
    "advisory_consumer_pinned",
    "advisory_consumer_quorum_lost",
    "advisory_consumer_unpinned",
    "advisory_max_deliveries",
    "advisory_msg_naked",
    "advisory_msg_terminated",
    "advisory_restore_complete",
    "advisory_restore_create",
    "advisory_snapshot_complete",
    "advisory_snapshot_create",
    "advisory_stream_batch_abandoned",
    "advisory_stream_created",
    "advisory_stream_deleted",
    "advisory_stream_leader_elected",
    "advisory_stream_quorum_lost",
    "advisory_stream_updated",
    "advisory_stream_write_error",
    "api_prefix",
    "domain_api_to_local",
    "domain_mappings",
    "flow_control_subject",
    "flow_control_subscription",
    "match_api_subject",
    "metric_consumer_ack",
    "snapshot_ack_subject",
    "snapshot_restore_subject",
]

JS_API_PREFIX = "$JS.API"
JS_ALL_API = "$JS.API.>"
"""What nats-server subscribes to for the whole API."""


def api_prefix(domain: str | None = None, prefix: str | None = None) -> str:
    """The API prefix a client should use: custom ``prefix`` > ``$JS.<domain>.API`` > ``$JS.API``.

    Trailing dots are dropped (nats.go accepts ``"$JS.hub.API."``).
    """
    if prefix:
        return prefix.rstrip(".")
    if domain:
        return f"$JS.{domain}.API"
    return JS_API_PREFIX


def domain_api_to_local(subject: str, domain: str) -> str | None:
    """Map ``$JS.<domain>.API.<rest>`` to ``$JS.API.<rest>`` (what the server does); else ``None``."""
    head = f"$JS.{domain}.API."
    if domain and subject.startswith(head):
        return JS_API_PREFIX + "." + subject[len(head) :]
    return None


#: What nats-server maps under ``$JS.<domain>.API.`` (``generateJSMappingTable``): the JetStream API
#: groups, and the KV and object-store subject spaces (``$JS.<domain>.API.$KV.>`` -> ``$KV.>``).
_DOMAIN_MAPPED = {
    "INFO": "$JS.API.INFO",
    "STREAM.>": "$JS.API.STREAM.>",
    "CONSUMER.>": "$JS.API.CONSUMER.>",
    "DIRECT.>": "$JS.API.DIRECT.>",
    "META.>": "$JS.API.META.>",
    "SERVER.>": "$JS.API.SERVER.>",
    "ACCOUNT.>": "$JS.API.ACCOUNT.>",
    "$KV.>": "$KV.>",
    "$OBJ.>": "$OBJ.>",
}


def domain_mappings(domain: str) -> dict[str, str]:
    """The subject mappings a JetStream account gets when the server has a domain (nats-server
    ``enableAllJetStreamServiceImportsAndMappings``): ``$JS.<domain>.API.<group>`` to the local one."""
    return {f"$JS.{domain}.API.{suffix}": dest for suffix, dest in _DOMAIN_MAPPED.items()}


class JSApi(msgspec.Struct, frozen=True):
    """Subject builder for one API prefix (default ``$JS.API``)."""

    prefix: str = JS_API_PREFIX

    @classmethod
    def for_domain(cls, domain: str | None = None, prefix: str | None = None) -> JSApi:
        return cls(api_prefix(domain, prefix))

    def _s(self, rest: str) -> str:
        return f"{self.prefix}.{rest}"

    # account
    def info(self) -> str:
        return self._s("INFO")

    # streams
    def stream_create(self, stream: str) -> str:
        return self._s(f"STREAM.CREATE.{stream}")

    def stream_update(self, stream: str) -> str:
        return self._s(f"STREAM.UPDATE.{stream}")

    def stream_names(self) -> str:
        return self._s("STREAM.NAMES")

    def stream_list(self) -> str:
        return self._s("STREAM.LIST")

    def stream_info(self, stream: str) -> str:
        return self._s(f"STREAM.INFO.{stream}")

    def stream_delete(self, stream: str) -> str:
        return self._s(f"STREAM.DELETE.{stream}")

    def stream_purge(self, stream: str) -> str:
        return self._s(f"STREAM.PURGE.{stream}")

    def stream_snapshot(self, stream: str) -> str:
        return self._s(f"STREAM.SNAPSHOT.{stream}")

    def stream_restore(self, stream: str) -> str:
        return self._s(f"STREAM.RESTORE.{stream}")

    def stream_msg_get(self, stream: str) -> str:
        return self._s(f"STREAM.MSG.GET.{stream}")

    def stream_msg_delete(self, stream: str) -> str:
        return self._s(f"STREAM.MSG.DELETE.{stream}")

    def stream_remove_peer(self, stream: str) -> str:
        return self._s(f"STREAM.PEER.REMOVE.{stream}")

    def stream_leader_stepdown(self, stream: str) -> str:
        return self._s(f"STREAM.LEADER.STEPDOWN.{stream}")

    def stream_peer_evacuate(self, stream: str) -> str:
        """⟨2.15+⟩ move the stream's replicas off a peer."""
        return self._s(f"STREAM.PEER.EVACUATE.{stream}")

    def stream_cancel_move(self, stream: str) -> str:
        """⟨2.15+⟩ cancel a stream's move or reconfiguration."""
        return self._s(f"STREAM.CANCEL_MOVE.{stream}")

    def direct_get(self, stream: str) -> str:
        """DIRECT.GET with a JSON body (``seq`` / ``last_by_subj`` / ``next_by_subj``)."""
        return self._s(f"DIRECT.GET.{stream}")

    def direct_get_last(self, stream: str, subject: str) -> str:
        """DIRECT.GET of the last message on ``subject``; send an **empty** body."""
        return self._s(f"DIRECT.GET.{stream}.{subject}")

    # consumers
    def consumer_create(
        self, stream: str, consumer: str | None = None, filter_subject: str | None = None
    ) -> str:
        """``CONSUMER.CREATE.<S>`` (legacy ephemeral), ``.<S>.<C>`` or ``.<S>.<C>.<filter>``.

        nats.go uses the filter form only for a single filter that is not empty or ``>``.
        """
        if not consumer:
            return self._s(f"CONSUMER.CREATE.{stream}")
        if filter_subject and filter_subject != ">":
            return self._s(f"CONSUMER.CREATE.{stream}.{consumer}.{filter_subject}")
        return self._s(f"CONSUMER.CREATE.{stream}.{consumer}")

    def consumer_durable_create(self, stream: str, consumer: str) -> str:
        """Legacy ``CONSUMER.DURABLE.CREATE.<S>.<C>`` (pre-2.9 clients)."""
        return self._s(f"CONSUMER.DURABLE.CREATE.{stream}.{consumer}")

    def consumer_names(self, stream: str) -> str:
        return self._s(f"CONSUMER.NAMES.{stream}")

    def consumer_list(self, stream: str) -> str:
        return self._s(f"CONSUMER.LIST.{stream}")

    def consumer_info(self, stream: str, consumer: str) -> str:
        return self._s(f"CONSUMER.INFO.{stream}.{consumer}")

    def consumer_delete(self, stream: str, consumer: str) -> str:
        return self._s(f"CONSUMER.DELETE.{stream}.{consumer}")

    def consumer_msg_next(self, stream: str, consumer: str) -> str:
        return self._s(f"CONSUMER.MSG.NEXT.{stream}.{consumer}")

    def consumer_leader_stepdown(self, stream: str, consumer: str) -> str:
        return self._s(f"CONSUMER.LEADER.STEPDOWN.{stream}.{consumer}")

    def consumer_pause(self, stream: str, consumer: str) -> str:
        """⟨2.11+⟩"""
        return self._s(f"CONSUMER.PAUSE.{stream}.{consumer}")

    def consumer_unpin(self, stream: str, consumer: str) -> str:
        """⟨2.11+⟩"""
        return self._s(f"CONSUMER.UNPIN.{stream}.{consumer}")

    def consumer_reset(self, stream: str, consumer: str) -> str:
        """⟨2.14+⟩"""
        return self._s(f"CONSUMER.RESET.{stream}.{consumer}")

    # templates (deprecated)
    def template_create(self, template: str) -> str:
        return self._s(f"STREAM.TEMPLATE.CREATE.{template}")

    def template_names(self) -> str:
        return self._s("STREAM.TEMPLATE.NAMES")

    def template_info(self, template: str) -> str:
        return self._s(f"STREAM.TEMPLATE.INFO.{template}")

    def template_delete(self, template: str) -> str:
        return self._s(f"STREAM.TEMPLATE.DELETE.{template}")

    # system account
    def meta_leader_stepdown(self) -> str:
        return self._s("META.LEADER.STEPDOWN")

    def server_remove(self) -> str:
        return self._s("SERVER.REMOVE")

    def account_purge(self, account: str) -> str:
        return self._s(f"ACCOUNT.PURGE.{account}")

    def account_stream_move(self, account: str, stream: str) -> str:
        return self._s(f"ACCOUNT.STREAM.MOVE.{account}.{stream}")

    def account_stream_cancel_move(self, account: str, stream: str) -> str:
        return self._s(f"ACCOUNT.STREAM.CANCEL_MOVE.{account}.{stream}")


# --- server side: which endpoint does a subject address? ---------------------------------


class ApiEndpoint(StrEnum):
    """API endpoints, named by their subject after ``$JS.API.``."""

    INFO = "INFO"
    STREAM_CREATE = "STREAM.CREATE"
    STREAM_UPDATE = "STREAM.UPDATE"
    STREAM_NAMES = "STREAM.NAMES"
    STREAM_LIST = "STREAM.LIST"
    STREAM_INFO = "STREAM.INFO"
    STREAM_DELETE = "STREAM.DELETE"
    STREAM_PURGE = "STREAM.PURGE"
    STREAM_SNAPSHOT = "STREAM.SNAPSHOT"
    STREAM_RESTORE = "STREAM.RESTORE"
    STREAM_MSG_GET = "STREAM.MSG.GET"
    STREAM_MSG_DELETE = "STREAM.MSG.DELETE"
    STREAM_PEER_REMOVE = "STREAM.PEER.REMOVE"
    STREAM_LEADER_STEPDOWN = "STREAM.LEADER.STEPDOWN"
    STREAM_PEER_EVACUATE = "STREAM.PEER.EVACUATE"  # ⟨2.15+⟩
    STREAM_CANCEL_MOVE = "STREAM.CANCEL_MOVE"  # ⟨2.15+⟩
    DIRECT_GET = "DIRECT.GET"
    DIRECT_GET_LAST = "DIRECT.GET.LAST"  # DIRECT.GET.<S>.<subject…>
    CONSUMER_CREATE = "CONSUMER.CREATE"  # <S> (legacy ephemeral) or <S>.<C>[.<filter…>]
    CONSUMER_DURABLE_CREATE = "CONSUMER.DURABLE.CREATE"
    CONSUMER_NAMES = "CONSUMER.NAMES"
    CONSUMER_LIST = "CONSUMER.LIST"
    CONSUMER_INFO = "CONSUMER.INFO"
    CONSUMER_DELETE = "CONSUMER.DELETE"
    CONSUMER_MSG_NEXT = "CONSUMER.MSG.NEXT"
    CONSUMER_LEADER_STEPDOWN = "CONSUMER.LEADER.STEPDOWN"
    CONSUMER_PAUSE = "CONSUMER.PAUSE"  # ⟨2.11+⟩
    CONSUMER_UNPIN = "CONSUMER.UNPIN"  # ⟨2.11+⟩
    CONSUMER_RESET = "CONSUMER.RESET"  # ⟨2.14+⟩
    TEMPLATE_CREATE = "STREAM.TEMPLATE.CREATE"
    TEMPLATE_NAMES = "STREAM.TEMPLATE.NAMES"
    TEMPLATE_INFO = "STREAM.TEMPLATE.INFO"
    TEMPLATE_DELETE = "STREAM.TEMPLATE.DELETE"
    META_LEADER_STEPDOWN = "META.LEADER.STEPDOWN"
    SERVER_REMOVE = "SERVER.REMOVE"
    ACCOUNT_PURGE = "ACCOUNT.PURGE"
    ACCOUNT_STREAM_MOVE = "ACCOUNT.STREAM.MOVE"
    ACCOUNT_STREAM_CANCEL_MOVE = "ACCOUNT.STREAM.CANCEL_MOVE"


class ApiMatch(msgspec.Struct, frozen=True):
    """A matched API subject: the endpoint and the names it carries.

    A frozen struct, not a frozen dataclass: every API request (a direct get among them) makes
    one, and a frozen dataclass sets each field through ``object.__setattr__`` (1.8 against
    0.12 µs of CPU a match in process, at load 15).

    ``stream`` is also the template (TEMPLATE.*) or account (ACCOUNT.*) name. ``filter_subject``
    is the tail of ``CONSUMER.CREATE.<S>.<C>.<filter…>``; ``subject`` the tail of
    ``DIRECT.GET.<S>.<subject…>``. ``legacy`` marks the 5-token ``CONSUMER.CREATE.<S>``.
    """

    endpoint: ApiEndpoint
    stream: str = ""
    consumer: str = ""
    filter_subject: str = ""
    subject: str = ""
    legacy: bool = False


# (literal tokens after "$JS.API", endpoint, number of name tokens); a trailing "+" in the
# count means "at least one more token" (nats-server's ".>" subscriptions).
_EXACT: dict[tuple[str, ...], tuple[ApiEndpoint, int]] = {
    ("INFO",): (ApiEndpoint.INFO, 0),
    ("STREAM", "CREATE"): (ApiEndpoint.STREAM_CREATE, 1),
    ("STREAM", "UPDATE"): (ApiEndpoint.STREAM_UPDATE, 1),
    ("STREAM", "NAMES"): (ApiEndpoint.STREAM_NAMES, 0),
    ("STREAM", "LIST"): (ApiEndpoint.STREAM_LIST, 0),
    ("STREAM", "INFO"): (ApiEndpoint.STREAM_INFO, 1),
    ("STREAM", "DELETE"): (ApiEndpoint.STREAM_DELETE, 1),
    ("STREAM", "PURGE"): (ApiEndpoint.STREAM_PURGE, 1),
    ("STREAM", "SNAPSHOT"): (ApiEndpoint.STREAM_SNAPSHOT, 1),
    ("STREAM", "RESTORE"): (ApiEndpoint.STREAM_RESTORE, 1),
    ("STREAM", "MSG", "GET"): (ApiEndpoint.STREAM_MSG_GET, 1),
    ("STREAM", "MSG", "DELETE"): (ApiEndpoint.STREAM_MSG_DELETE, 1),
    ("STREAM", "PEER", "REMOVE"): (ApiEndpoint.STREAM_PEER_REMOVE, 1),
    ("STREAM", "LEADER", "STEPDOWN"): (ApiEndpoint.STREAM_LEADER_STEPDOWN, 1),
    ("STREAM", "PEER", "EVACUATE"): (ApiEndpoint.STREAM_PEER_EVACUATE, 1),
    ("STREAM", "CANCEL_MOVE"): (ApiEndpoint.STREAM_CANCEL_MOVE, 1),
    ("STREAM", "TEMPLATE", "CREATE"): (ApiEndpoint.TEMPLATE_CREATE, 1),
    ("STREAM", "TEMPLATE", "NAMES"): (ApiEndpoint.TEMPLATE_NAMES, 0),
    ("STREAM", "TEMPLATE", "INFO"): (ApiEndpoint.TEMPLATE_INFO, 1),
    ("STREAM", "TEMPLATE", "DELETE"): (ApiEndpoint.TEMPLATE_DELETE, 1),
    ("CONSUMER", "DURABLE", "CREATE"): (ApiEndpoint.CONSUMER_DURABLE_CREATE, 2),
    ("CONSUMER", "NAMES"): (ApiEndpoint.CONSUMER_NAMES, 1),
    ("CONSUMER", "LIST"): (ApiEndpoint.CONSUMER_LIST, 1),
    ("CONSUMER", "INFO"): (ApiEndpoint.CONSUMER_INFO, 2),
    ("CONSUMER", "DELETE"): (ApiEndpoint.CONSUMER_DELETE, 2),
    ("CONSUMER", "MSG", "NEXT"): (ApiEndpoint.CONSUMER_MSG_NEXT, 2),
    ("CONSUMER", "LEADER", "STEPDOWN"): (ApiEndpoint.CONSUMER_LEADER_STEPDOWN, 2),
    ("CONSUMER", "PAUSE"): (ApiEndpoint.CONSUMER_PAUSE, 2),
    ("CONSUMER", "UNPIN"): (ApiEndpoint.CONSUMER_UNPIN, 2),
    ("CONSUMER", "RESET"): (ApiEndpoint.CONSUMER_RESET, 2),
    ("META", "LEADER", "STEPDOWN"): (ApiEndpoint.META_LEADER_STEPDOWN, 0),
    ("SERVER", "REMOVE"): (ApiEndpoint.SERVER_REMOVE, 0),
    ("ACCOUNT", "PURGE"): (ApiEndpoint.ACCOUNT_PURGE, 1),
    ("ACCOUNT", "STREAM", "MOVE"): (ApiEndpoint.ACCOUNT_STREAM_MOVE, 2),
    ("ACCOUNT", "STREAM", "CANCEL_MOVE"): (ApiEndpoint.ACCOUNT_STREAM_CANCEL_MOVE, 2),
}


def api_handler_subjects(skip: frozenset[ApiEndpoint] = frozenset()) -> list[tuple[ApiEndpoint, str]]:
    """The subscription subject of each API endpoint nats-server's handlers listen on
    (``$JS.API.STREAM.INFO.*`` …; ``CONSUMER.CREATE.>`` for both create forms), minus ``skip``."""
    out = [
        (endpoint, ".".join((JS_API_PREFIX, *tokens, *("*" * names))))
        for tokens, (endpoint, names) in _EXACT.items()
        if endpoint not in skip
    ]
    if ApiEndpoint.CONSUMER_CREATE not in skip:
        out.append((ApiEndpoint.CONSUMER_CREATE, f"{JS_API_PREFIX}.CONSUMER.CREATE.>"))
    return out


def match_api_subject(subject: str, prefix: str = JS_API_PREFIX) -> ApiMatch | None:
    """Classify an API request subject; ``None`` if no nats-server API subscription matches.

    Token counts follow nats-server: e.g. ``STREAM.INFO.*`` needs exactly one name token,
    ``CONSUMER.DURABLE.CREATE.*.*`` exactly two, ``CONSUMER.CREATE.*.>`` one or more after
    the stream. Empty tokens (``a..b``) never match.
    """
    if not subject.startswith(prefix + "."):
        return None
    tokens = subject[len(prefix) + 1 :].split(".")
    if any(not t for t in tokens):
        return None
    # Longest literal head first (3, 2, 1 tokens).
    for n in (3, 2, 1):
        entry = _EXACT.get(tuple(tokens[:n]))
        if entry is None:
            continue
        endpoint, names = entry
        rest = tokens[n:]
        if len(rest) != names:
            break  # literal head matched but arity is wrong: nothing else can match it
        return ApiMatch(
            endpoint,
            stream=rest[0] if names >= 1 else "",
            consumer=rest[1] if names >= 2 else "",
        )
    head = tokens[:2]
    if head == ["CONSUMER", "CREATE"] and len(tokens) >= 3:
        if len(tokens) == 3:
            return ApiMatch(ApiEndpoint.CONSUMER_CREATE, stream=tokens[2], legacy=True)
        return ApiMatch(
            ApiEndpoint.CONSUMER_CREATE,
            stream=tokens[2],
            consumer=tokens[3],
            filter_subject=".".join(tokens[4:]),
        )
    if head == ["DIRECT", "GET"] and len(tokens) >= 3:
        if len(tokens) == 3:
            return ApiMatch(ApiEndpoint.DIRECT_GET, stream=tokens[2])
        return ApiMatch(ApiEndpoint.DIRECT_GET_LAST, stream=tokens[2], subject=".".join(tokens[3:]))
    return None


# --- advisories and metrics ----------------------------------------------------------------

ADVISORY_PREFIX = "$JS.EVENT.ADVISORY"
METRIC_PREFIX = "$JS.EVENT.METRIC"
API_AUDIT_ADVISORY = "$JS.EVENT.ADVISORY.API"
SERVER_OUT_OF_STORAGE_ADVISORY = "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE"
SERVER_REMOVED_ADVISORY = "$JS.EVENT.ADVISORY.SERVER.REMOVED"


def advisory_stream_created(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.CREATED.{stream}"


def advisory_stream_batch_abandoned(stream: str) -> str:
    """⟨2.12+⟩ an atomic batch publish was abandoned."""
    return f"{ADVISORY_PREFIX}.STREAM.BATCH_ABANDONED.{stream}"


def advisory_stream_write_error(stream: str) -> str:
    """pyjetstream only (nats-server 2.14+ freezes the stream and logs, with no advisory): the
    stream's store hit an I/O error and takes no more writes until the server restarts."""
    return f"{ADVISORY_PREFIX}.STREAM.WRITE_ERROR.{stream}"


def advisory_stream_deleted(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.DELETED.{stream}"


def advisory_stream_updated(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.UPDATED.{stream}"


def advisory_snapshot_create(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.SNAPSHOT_CREATE.{stream}"


def advisory_snapshot_complete(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.SNAPSHOT_COMPLETE.{stream}"


def advisory_restore_create(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.RESTORE_CREATE.{stream}"


def advisory_restore_complete(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.RESTORE_COMPLETE.{stream}"


def advisory_stream_leader_elected(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.LEADER_ELECTED.{stream}"


def advisory_stream_quorum_lost(stream: str) -> str:
    return f"{ADVISORY_PREFIX}.STREAM.QUORUM_LOST.{stream}"


def advisory_consumer_created(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.CREATED.{stream}.{consumer}"


def advisory_consumer_deleted(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.DELETED.{stream}.{consumer}"


def advisory_consumer_pause(stream: str, consumer: str) -> str:
    """⟨2.11+⟩ a consumer was paused or resumed."""
    return f"{ADVISORY_PREFIX}.CONSUMER.PAUSE.{stream}.{consumer}"


def advisory_consumer_pinned(stream: str, consumer: str) -> str:
    """⟨2.11+⟩ a priority group pinned a client."""
    return f"{ADVISORY_PREFIX}.CONSUMER.PINNED.{stream}.{consumer}"


def advisory_consumer_unpinned(stream: str, consumer: str) -> str:
    """⟨2.11+⟩ a priority group lost its pinned client (``admin`` or ``timeout``)."""
    return f"{ADVISORY_PREFIX}.CONSUMER.UNPINNED.{stream}.{consumer}"


def advisory_max_deliveries(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.MAX_DELIVERIES.{stream}.{consumer}"


def advisory_msg_naked(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.MSG_NAKED.{stream}.{consumer}"


def advisory_msg_terminated(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.MSG_TERMINATED.{stream}.{consumer}"


def advisory_consumer_leader_elected(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.LEADER_ELECTED.{stream}.{consumer}"


def advisory_consumer_quorum_lost(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.QUORUM_LOST.{stream}.{consumer}"


def metric_consumer_ack(stream: str, consumer: str) -> str:
    return f"{METRIC_PREFIX}.CONSUMER.ACK.{stream}.{consumer}"


# --- flow control and snapshots -------------------------------------------------------------

FLOW_CONTROL_PREFIX = "$JS.FC."


def flow_control_subject(stream: str, consumer: str, token: str) -> str:
    """Reply subject of a ``100 FlowControl Request``: ``$JS.FC.<S>.<C>.<token>``."""
    return f"$JS.FC.{stream}.{consumer}.{token}"


def flow_control_subscription(stream: str, consumer: str) -> str:
    """What the server listens on for flow-control responses."""
    return f"$JS.FC.{stream}.{consumer}.*"


def snapshot_ack_subject(stream: str, token: str, size: int | None = None, index: int | None = None) -> str:
    """Snapshot chunk reply ``$JS.SNAPSHOT.ACK.<S>.<token>[.<len>.<idx>]``."""
    base = f"$JS.SNAPSHOT.ACK.{stream}.{token}"
    return base if size is None or index is None else f"{base}.{size}.{index}"


def snapshot_restore_subject(stream: str, token: str) -> str:
    """Where restore chunks are sent: ``$JS.SNAPSHOT.RESTORE.<S>.<token>``."""
    return f"$JS.SNAPSHOT.RESTORE.{stream}.{token}"
