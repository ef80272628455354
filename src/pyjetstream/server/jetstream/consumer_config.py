"""Consumer configuration: defaults, validation and update rules (nats-server ``consumer.go``).

``apply_defaults`` is ``setConsumerConfigDefaults`` (stream ``consumer_limits`` as defaults,
``pedantic`` refusals), ``check_config`` is ``checkConsumerCfg`` and ``check_update`` is
``checkNewConsumerConfig``; the order of the checks, the error codes and the texts are
nats-server 2.15.1's (priority groups, ADR-60 flow-control acks and consumer limits included).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import TYPE_CHECKING

import msgspec

from pyjetstream._hashes import sha256
from pyjetstream.api import errors as E
from pyjetstream.api.constants import (
    DEFAULT_ACK_WAIT_NS,
    DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD_NS,
    DEFAULT_MAX_ACK_PENDING,
    DEFAULT_MAX_WAITING,
    EPHEMERAL_NAME_LEN,
    JS_MAX_DESCRIPTION_LEN,
    JS_MAX_METADATA_LEN,
    JS_MAX_NAME_LEN,
    MIN_IDLE_HEARTBEAT_NS,
    MIN_MAX_REQUEST_EXPIRES_NS,
)
from pyjetstream.api.enums import AckPolicy, DeliverPolicy, PriorityPolicy, RetentionPolicy
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.api.names import has_invalid_name_chars, has_path_separators
from pyjetstream.api.timefmt import format_go_duration
from pyjetstream.protocol.subjects import has_wildcard, is_subset, is_valid_subject

if TYPE_CHECKING:
    from collections.abc import Callable

# ``sourceHealthHB``: the heartbeat an ``ack_policy: flow_control`` consumer must use.
FLOW_CONTROL_ACK_HEARTBEAT_NS = 1_000_000_000
# ``JsDefaultPinnedTTL``: how long a pinned client may go without a pull request (2 minutes).
DEFAULT_PINNED_TTL_NS = 120 * 1_000_000_000
# A priority group name (``validGroupName``).
GROUP_NAME = re.compile(r"[a-zA-Z0-9/_=-]{1,16}")



class ConsumerCaps(msgspec.Struct, frozen=True):
    """The limits a consumer's config meets besides its stream's: the server's ``jetstream {
    limits { max_ack_pending, max_request_batch } }`` (nats-server ``JSLimitOpts``) and the
    account's ``max_ack_pending`` (``JetStreamAccountLimits``); only a limit > 0 limits."""

    max_ack_pending: int = 0
    max_request_batch: int = 0
    account_max_ack_pending: int = 0


NO_CAPS = ConsumerCaps()

__all__ = [
    "GROUP_NAME",
    "NO_CAPS",
    "ConsumerCaps",
    "apply_defaults",
    "check_config",
    "check_update",
    "filters_of",
    "new_ephemeral_name",
    "sample_frequency",
    "stamp_inactive_threshold",
    "store_ack_policy",
]

# nats-server getHash: sha256 of a nuid mapped onto these 62 digits, 8 characters.
_WILD_CHARS = frozenset("*>")  # a filter holding neither is a plain subject (see _check_filters)
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_ephemeral_name() -> str:
    """A server-generated consumer name (``createConsumerName``: 8 base-62 characters)."""
    digest = sha256(os.urandom(16)).digest()
    return "".join(_DIGITS[b % 62] for b in digest[:EPHEMERAL_NAME_LEN])


def store_ack_policy(cfg: ConsumerConfig) -> str:
    """The ack policy the consumer store follows (flow-control acks are cumulative: "all")."""
    return "all" if cfg.ack_policy == AckPolicy.FLOW_CONTROL else str(cfg.ack_policy)


def filters_of(cfg: ConsumerConfig) -> list[str]:
    """The consumer's subject filters (``gatherSubjectFilters``); empty means every subject."""
    if cfg.filter_subjects:
        return list(cfg.filter_subjects)
    if cfg.filter_subject:
        return [cfg.filter_subject]
    return []


def sample_frequency(cfg: ConsumerConfig) -> int:
    """``sample_freq`` ("N" or "N%") as a percentage; the config was validated already."""
    if not cfg.sample_freq:
        return 0
    return int(cfg.sample_freq.removesuffix("%"))


def apply_defaults(
    cfg: ConsumerConfig, stream: StreamConfig | None = None, pedantic: bool = False, caps: ConsumerCaps = NO_CAPS
) -> ConsumerConfig:
    """``setConsumerConfigDefaults``.

    ``stream`` brings its ``consumer_limits`` (``max_ack_pending``, ``inactive_threshold``) as
    defaults; the server's and the account's ``max_ack_pending`` (``caps``) lower the default of
    1000, the server's ``max_request_batch`` is a pull consumer's default. With ``pedantic``
    (⟨2.11+⟩) every change nats-server would make to the config is refused instead, with error
    10157: raises `JetStreamApiError`.
    """
    changes: dict[str, object] = {}

    def fix(field: str, value: object, message: str, refuse: bool = True) -> None:
        if pedantic and refuse:
            raise JetStreamApiError(E.JSPedanticErrF(err=message))
        changes[field] = value

    if cfg.max_deliver == 0 or cfg.max_deliver < -1:
        fix("max_deliver", -1, "max_deliver must be set to -1", cfg.max_deliver < -1)
    for field, floor, text in _NON_NEGATIVE:
        if getattr(cfg, field) < floor:
            fix(field, floor if floor < 0 else 0, text)
    max_waiting = changes.get("max_waiting", cfg.max_waiting)
    if not cfg.deliver_subject and max_waiting == 0:
        changes["max_waiting"] = DEFAULT_MAX_WAITING
    ack_wait = cfg.ack_wait
    if ack_wait == 0 and cfg.ack_policy in (AckPolicy.EXPLICIT, AckPolicy.ALL):
        ack_wait = DEFAULT_ACK_WAIT_NS
    if cfg.backoff:
        if pedantic and ack_wait != cfg.backoff[0]:
            raise JetStreamApiError(E.JSPedanticErrF(err="first backoff value has to equal batch AckWait"))
        ack_wait = cfg.backoff[0]
    if ack_wait != cfg.ack_wait:
        changes["ack_wait"] = ack_wait
    limits = stream.consumer_limits if stream is not None else None
    max_ack_pending = int(changes.get("max_ack_pending", cfg.max_ack_pending))  # type: ignore[call-overload]
    if max_ack_pending == 0 and limits is not None:
        if pedantic and limits.max_ack_pending > 0:
            raise JetStreamApiError(
                E.JSPedanticErrF(err="max_ack_pending must be set if it's configured in stream limits")
            )
        max_ack_pending = limits.max_ack_pending
    inactive = int(changes.get("inactive_threshold", cfg.inactive_threshold))  # type: ignore[call-overload]
    if inactive == 0 and limits is not None:
        if pedantic and limits.inactive_threshold > 0:
            raise JetStreamApiError(
                E.JSPedanticErrF(err="inactive_threshold must be set if it's configured in stream limits")
            )
        if limits.inactive_threshold:
            changes["inactive_threshold"] = limits.inactive_threshold
    if max_ack_pending == 0 and cfg.ack_policy != AckPolicy.NONE:
        max_ack_pending = DEFAULT_MAX_ACK_PENDING
        for cap in (caps.max_ack_pending, caps.account_max_ack_pending):
            if 0 < cap < max_ack_pending:
                max_ack_pending = cap
    if max_ack_pending != cfg.max_ack_pending:
        changes["max_ack_pending"] = max_ack_pending
    max_batch = int(changes.get("max_batch", cfg.max_batch))  # type: ignore[call-overload]
    if not cfg.deliver_subject and max_batch == 0 and caps.max_request_batch > 0:
        if pedantic:
            raise JetStreamApiError(E.JSPedanticErrF(err="max_request_batch must be set if it's JetStream limits are set"))
        changes["max_batch"] = caps.max_request_batch
    priority_timeout = int(changes.get("priority_timeout", cfg.priority_timeout))  # type: ignore[call-overload]
    if cfg.priority_policy == PriorityPolicy.PINNED_CLIENT and priority_timeout == 0:
        changes["priority_timeout"] = DEFAULT_PINNED_TTL_NS
    if cfg.ack_policy == AckPolicy.FLOW_CONTROL and not pedantic:
        # ⟨2.14+⟩ ADR-60: acks ride on flow control, which needs heartbeats of 1 s
        changes["flow_control"] = True
        changes["idle_heartbeat"] = FLOW_CONTROL_ACK_HEARTBEAT_NS
    return msgspec.structs.replace(cfg, **changes) if changes else cfg


# (field, smallest allowed value, pedantic text) in setConsumerConfigDefaults' order; a smaller
# value becomes 0 (-1 for max_ack_pending).
_NON_NEGATIVE: tuple[tuple[str, int, str], ...] = (
    ("max_waiting", 0, "max_waiting must not be negative"),
    ("max_ack_pending", -1, "max_ack_pending must be set to -1"),
    ("max_batch", 0, "max_batch must not be negative"),
    ("max_expires", 0, "max_expires must not be negative"),
    ("max_bytes", 0, "max_bytes must not be negative"),
    ("idle_heartbeat", 0, "idle_heartbeat must not be negative"),
    ("inactive_threshold", 0, "inactive_threshold must not be negative"),
    ("priority_timeout", 0, "priority_timeout must not be negative"),
)


def stamp_inactive_threshold(cfg: ConsumerConfig) -> ConsumerConfig:
    """Ephemerals always get an inactivity threshold (5 s unless set), as nats-server stamps it."""
    if not cfg.durable_name and cfg.inactive_threshold <= 0:
        return msgspec.structs.replace(cfg, inactive_threshold=DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD_NS)
    return cfg


def _invalid_policy(text: str) -> ApiError:
    return E.JSConsumerInvalidPolicyErrF(err=text)


def _bad_start(policy: str, start: str) -> ApiError:
    return _invalid_policy(
        f"consumer delivery policy is deliver {policy}, but optional start {start} is also set"
    )


def _not_set(policy: str, what: str) -> ApiError:
    return _invalid_policy(f"consumer delivery policy is deliver {policy}, but optional {what} is not set")


def _check_deliver_policy(cfg: ConsumerConfig) -> ApiError | None:
    policy = cfg.deliver_policy
    has_seq = cfg.opt_start_seq > 0
    has_time = cfg.opt_start_time is not None
    if policy in (DeliverPolicy.ALL, DeliverPolicy.LAST, DeliverPolicy.NEW, DeliverPolicy.LAST_PER_SUBJECT):
        name = {
            DeliverPolicy.ALL: "all",
            DeliverPolicy.LAST: "last",
            DeliverPolicy.NEW: "new",
            DeliverPolicy.LAST_PER_SUBJECT: "last per subject",
        }[policy]
        if has_seq:
            return _bad_start(name, "sequence")
        if has_time:
            return _bad_start(name, "time")
        if policy == DeliverPolicy.LAST_PER_SUBJECT and not filters_of(cfg):
            return _not_set(name, "filter subject")
    elif policy == DeliverPolicy.BY_START_SEQUENCE:
        if not has_seq:
            return _not_set("by start sequence", "start sequence")
        if has_time:
            return _bad_start("by start sequence", "time")
    elif policy == DeliverPolicy.BY_START_TIME:
        if not has_time:
            return _not_set("by start time", "start time")
        if cfg.opt_start_seq != 0:
            return _bad_start("by start time", "start sequence")
    return None


def _go_atoi_error(text: str) -> str:
    return f'strconv.Atoi: parsing "{text}": invalid syntax'


def _check_sample_freq(freq: str) -> ApiError | None:
    if not freq:
        return None
    text = freq.removesuffix("%")
    stripped = text[1:] if text[:1] in ("+", "-") else text
    if not stripped.isdigit() or not stripped.isascii():
        return E.JSConsumerInvalidSamplingErrF(err=_go_atoi_error(text))
    if int(text) < 0:
        # Go reports a nil error for a negative number, printed as "<nil>".
        return E.JSConsumerInvalidSamplingErrF(err="<nil>")
    return None


def _check_filters(cfg: ConsumerConfig) -> ApiError | None:
    """The filters: one form only, no empty or invalid ones, none a subset of another (nats-server's
    ``checkConsumerCfg`` uses ``subjectIsSubsetMatch``: ``a.*`` and ``*.c`` collide on ``a.c`` yet are
    allowed). ⟨2.10+⟩ A filter need not be a subset of the stream's subjects any more (10093 is gone:
    transforms make it wrong).

    nats-server compares every pair (O(n²): 27 ms for 1,000 filters). A filter without ``*`` or ``>``
    is a subset of another such one only when they are equal, and one with them is never a subset of
    one without, so only the pairs with a wildcard filter on the right are compared and the plain
    duplicates counted: the same answers, in the same order, with 1,000 plain filters in O(n)."""
    if cfg.filter_subject and cfg.filter_subjects:
        return E.JSConsumerDuplicateFilterSubjects()
    if cfg.filter_subject and not is_valid_subject(cfg.filter_subject):
        return E.JSStreamInvalidConfigF(err="invalid subject")
    if any(not f for f in cfg.filter_subjects):
        return E.JSConsumerEmptyFilter()
    filters = filters_of(cfg)
    plain = Counter(f for f in filters if not _WILD_CHARS.intersection(f))
    wild = [(i, f) for i, f in enumerate(filters) if f not in plain]
    for i, outer in enumerate(filters):
        if not is_valid_subject(outer):
            return E.JSStreamInvalidConfigF(err="invalid subject")
        if outer in plain and plain[outer] > 1:
            return E.JSConsumerOverlappingSubjectFilters()
        if any(j != i and is_subset(outer, inner) for j, inner in wild):
            return E.JSConsumerOverlappingSubjectFilters()
    return None


def _delivery_forms_cycle(stream: StreamConfig, deliver_subject: str) -> bool:
    return any(is_subset(deliver_subject, subject) for subject in stream.subjects)


def _check_push(cfg: ConsumerConfig, stream: StreamConfig) -> ApiError | None:
    if has_wildcard(cfg.deliver_subject):
        return E.JSConsumerDeliverToWildcardsErr()
    if not is_valid_subject(cfg.deliver_subject):
        return E.JSConsumerInvalidDeliverSubject()
    if _delivery_forms_cycle(stream, cfg.deliver_subject):
        return E.JSConsumerDeliverCycleErr()
    if cfg.max_waiting != 0:
        return E.JSConsumerPushMaxWaitingErr()
    if cfg.max_ack_pending > 0 and cfg.ack_policy == AckPolicy.NONE:
        return E.JSConsumerMaxPendingAckPolicyRequiredErr()
    if 0 < cfg.idle_heartbeat < MIN_IDLE_HEARTBEAT_NS:
        return E.JSConsumerSmallHeartbeatErr()
    return None


def _check_pull(cfg: ConsumerConfig, stream: StreamConfig, caps: ConsumerCaps) -> ApiError | None:
    if cfg.ack_policy == AckPolicy.NONE and stream.retention == RetentionPolicy.WORKQUEUE:
        return E.JSConsumerPullRequiresAckErr()
    if cfg.rate_limit_bps > 0:
        return E.JSConsumerPullWithRateLimitErr()
    if cfg.max_waiting < 0:
        return E.JSConsumerMaxWaitingNegativeErr()
    if cfg.idle_heartbeat > 0:
        return E.JSConsumerHBRequiresPushErr()
    if cfg.flow_control:
        return E.JSConsumerFCRequiresPushErr()
    if cfg.max_batch < 0:
        return E.JSConsumerMaxRequestBatchNegativeErr()
    if cfg.max_expires != 0 and cfg.max_expires < MIN_MAX_REQUEST_EXPIRES_NS:
        return E.JSConsumerMaxRequestExpiresTooSmall()
    if 0 < caps.max_request_batch < cfg.max_batch:
        return E.JSConsumerMaxRequestBatchExceededF(limit=caps.max_request_batch)
    return None


def check_config(
    cfg: ConsumerConfig, stream: StreamConfig, recovering: bool = False, caps: ConsumerCaps = NO_CAPS
) -> ApiError | None:
    """``checkConsumerCfg`` on a defaulted config, in nats-server 2.15's order; ``None`` when
    it is acceptable."""
    if cfg.name and not _valid_asset_name(cfg.name):
        return E.JSStreamInvalidConfigF(err="consumer name can not contain '.', '*', '>', '\\', '/'")
    if cfg.durable_name and not _valid_asset_name(cfg.durable_name):
        return E.JSStreamInvalidConfigF(err="consumer durable name can not contain '.', '*', '>', '\\', '/'")
    if cfg.num_replicas > 0 and cfg.num_replicas > stream.num_replicas:
        return E.JSConsumerReplicasExceedsStream()
    if cfg.num_replicas < 0:
        return E.JSReplicasCountCannotBeNegative()
    if (
        stream.retention != RetentionPolicy.LIMITS
        and not recovering
        and cfg.num_replicas != 0
        and cfg.num_replicas != stream.num_replicas
    ):
        return E.JSConsumerReplicasShouldMatchStream()
    if any(b < 0 for b in cfg.backoff):
        return E.JSConsumerBackOffNegativeErr()
    if cfg.ack_wait < 0:
        return E.JSConsumerAckWaitNegativeErr()
    if cfg.ack_policy == AckPolicy.FLOW_CONTROL:
        if not cfg.deliver_subject:
            return E.JSConsumerAckFCRequiresPushErr()
        if not cfg.flow_control:
            return E.JSConsumerAckFCRequiresFCErr()
        if cfg.idle_heartbeat != FLOW_CONTROL_ACK_HEARTBEAT_NS:
            return E.JSStreamInvalidConfigF(err="flow control ack policy heartbeat needs to be 1s")
        if cfg.max_ack_pending <= 0:
            return E.JSConsumerAckFCRequiresMaxAckPendingErr()
        if cfg.ack_wait != 0 or cfg.backoff:
            return E.JSConsumerAckFCRequiresNoAckWaitErr()
        if cfg.max_deliver > 0:
            return E.JSConsumerAckFCRequiresNoMaxDeliverErr()
    if cfg.backoff and cfg.max_deliver != -1 and len(cfg.backoff) > cfg.max_deliver:
        return E.JSConsumerMaxDeliverBackoffErr()
    if len(cfg.description) > JS_MAX_DESCRIPTION_LEN:
        return E.JSConsumerDescriptionTooLongErrF(max=JS_MAX_DESCRIPTION_LEN)
    error = _check_push(cfg, stream) if cfg.deliver_subject else _check_pull(cfg, stream, caps)
    if error is not None:
        return error
    for cap in (caps.max_ack_pending, caps.account_max_ack_pending):  # the server's, then the account's
        if 0 < cap < cfg.max_ack_pending:
            return E.JSConsumerMaxPendingAckExcessErrF(limit=cap)
    limits = stream.consumer_limits
    if limits is not None:
        if limits.max_ack_pending > 0 and cfg.max_ack_pending > limits.max_ack_pending:
            return E.JSConsumerMaxPendingAckExcessErrF(limit=limits.max_ack_pending)
        if limits.inactive_threshold > 0 and cfg.inactive_threshold > limits.inactive_threshold:
            return E.JSConsumerInactiveThresholdExcess(limit=format_go_duration(limits.inactive_threshold))
    if cfg.direct:
        if not cfg.deliver_subject:
            return E.JSConsumerDirectRequiresPushErr()
        if cfg.durable_name:
            return E.JSConsumerDirectRequiresEphemeralErr()
    error = _check_filters(cfg)
    if error is not None:
        return error
    error = _check_deliver_policy(cfg)
    if error is not None:
        return error
    error = _check_sample_freq(cfg.sample_freq)
    if error is not None:
        return error
    if cfg.flow_control and cfg.idle_heartbeat == 0:
        return E.JSConsumerWithFlowControlNeedsHeartbeats()
    if cfg.durable_name and cfg.name and cfg.name != cfg.durable_name:
        return E.JSConsumerCreateDurableAndNameMismatch()
    if cfg.metadata and sum(len(k.encode()) + len(v.encode()) for k, v in cfg.metadata.items()) > JS_MAX_METADATA_LEN:
        return E.JSConsumerMetadataLengthErrF(limit=f"{JS_MAX_METADATA_LEN // 1024}KB")  # Go: "%dKB"
    return _check_priority(cfg)


def _valid_asset_name(name: str) -> bool:
    """``isValidAssetName``: no whitespace, ``.``, ``*``, ``>`` or path separators."""
    return not has_invalid_name_chars(name) and not has_path_separators(name)


def _check_priority(cfg: ConsumerConfig) -> ApiError | None:
    """⟨2.11+⟩ priority groups (ADR-42) need a policy, a pull consumer and valid group names."""
    if cfg.priority_policy != PriorityPolicy.NONE:
        if cfg.deliver_subject:
            return E.JSConsumerPushWithPriorityGroupErr()
        if not cfg.priority_groups:
            return E.JSConsumerPriorityPolicyWithoutGroup()
        for group in cfg.priority_groups:
            if not group:
                return E.JSConsumerEmptyGroupName()
            if not GROUP_NAME.fullmatch(group):
                return E.JSConsumerInvalidGroupNameErr()
        return None
    if cfg.priority_groups:
        return E.JSConsumerPriorityGroupWithPolicyNone()
    if cfg.priority_timeout > 0:
        return E.JSConsumerPinnedTTLWithoutPriorityPolicyNone()
    return None


def check_name(name: str) -> ApiError | None:
    """The name checks ``addConsumer`` makes once the name is known."""
    if len(name) > JS_MAX_NAME_LEN:
        return E.JSConsumerNameTooLongErrF(max=JS_MAX_NAME_LEN)
    if not name or has_invalid_name_chars(name):
        return E.JSConsumerBadDurableNameErr()
    if "/" in name or "\\" in name:
        return E.JSConsumerNameContainsPathSeparatorsErr()
    return None


def _update_error(text: str) -> ApiError:
    return E.JSConsumerCreateErrF(err=text)


# (field, message) pairs that may not change on update, in nats-server's order of checks.
_FIXED_FIELDS: tuple[tuple[str, str], ...] = (
    ("deliver_policy", "deliver policy can not be updated"),
    ("mem_storage", "storage type can not be updated"),
    ("direct", "direct can not be updated"),
    ("sourcing", "sourcing can not be updated"),
    ("opt_start_seq", "start sequence can not be updated"),
    ("opt_start_time", "start time can not be updated"),
    ("ack_policy", "ack policy can not be updated"),
    ("replay_policy", "replay policy can not be updated"),
    ("idle_heartbeat", "heart beats can not be updated"),
    ("flow_control", "flow control can not be updated"),
)


def check_update(
    old: ConsumerConfig, new: ConsumerConfig, deliver_has_interest: Callable[[str], bool]
) -> ApiError | None:
    """``checkNewConsumerConfig``: what an update (a create of an existing consumer) may change."""
    if old == new:
        return None
    for field, message in _FIXED_FIELDS:
        if getattr(old, field) != getattr(new, field):
            return _update_error(message)
    if old.deliver_subject != new.deliver_subject:
        if not old.deliver_subject:
            return _update_error("can not update pull consumer to push based")
        if not new.deliver_subject:
            return _update_error("can not update push consumer to pull based")
        if deliver_has_interest(old.deliver_subject):
            return E.JSConsumerNameExistErr()
    if old.max_waiting != new.max_waiting:
        return _update_error("max waiting can not be updated")
    if new.backoff and new.max_deliver != -1 and len(new.backoff) > new.max_deliver:
        return E.JSConsumerMaxDeliverBackoffErr()
    return None
