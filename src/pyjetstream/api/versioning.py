"""What the embedded server advertises, and the asset versioning of ADR-44 (nats-server
jetstream_versioning.go).

One constant each for the version and the JetStream API level the embedded server reports, in
INFO (``version``, ``api_lvl``), ``/varz``, ``$JS.API.INFO`` (``api.level``) and the dynamic
``_nats.*`` metadata. They name what the server *fully* implements: bump them together when the
features of the next level land (README "Compatibility").

Every stream and consumer config carries ``_nats.req.level`` in its metadata: the API level its
features need (computed, never taken from the request). Responses that show a config add the
server's own ``_nats.ver`` and ``_nats.level``; those are never stored, and are stripped from a
request before the config is compared or saved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .enums import PriorityPolicy
from .timefmt import ZERO_TIME

if TYPE_CHECKING:
    from .models_consumer import ConsumerConfig
    from .models_stream import StreamConfig

__all__ = [
    "JS_API_LEVEL",
    "REQUIRED_LEVEL_KEY",
    "SERVER_LEVEL_KEY",
    "SERVER_VERSION",
    "SERVER_VERSION_KEY",
    "consumer_required_level",
    "copy_required_level",
    "stream_required_level",
    "strip_dynamic",
    "with_dynamic",
    "with_required_level",
]

#: The nats-server version the embedded server reports: the release whose JetStream features it
#: fully implements on a single node (clients gate features on it): 2.11's per-message TTL, delete
#: markers, pause, priority groups and batch direct get; 2.12's atomic batches, counters, schedules;
#: 2.14's fast batches and consumer reset; 2.15's stream identity and v2 snapshots.
SERVER_VERSION = "2.15.1"
#: The JetStream API level it reports (nats-server ``JSApiLevel``; 2.15 is level 5).
JS_API_LEVEL = 5

REQUIRED_LEVEL_KEY = "_nats.req.level"
SERVER_VERSION_KEY = "_nats.ver"
SERVER_LEVEL_KEY = "_nats.level"


def stream_required_level(cfg: StreamConfig) -> int:
    """The API level a stream config's features need (``setStaticStreamMetadata``)."""
    level = 0
    if cfg.allow_msg_ttl or cfg.subject_delete_marker_ttl > 0:
        level = 1
    if cfg.allow_msg_counter or cfg.allow_atomic or cfg.allow_msg_schedules or cfg.persist_mode == "async":
        level = 2
    if cfg.allow_batched:
        level = 4
    return level


def consumer_required_level(cfg: ConsumerConfig) -> int:
    """The API level a consumer config's features need (``setStaticConsumerMetadata``)."""
    level = 0
    if cfg.pause_until is not None and cfg.pause_until != ZERO_TIME:
        level = 1
    if cfg.priority_policy != PriorityPolicy.NONE or cfg.priority_timeout or cfg.priority_groups:
        level = 1
    if cfg.ack_policy == "flow_control":
        level = 4
    return level


def strip_dynamic(metadata: dict[str, str]) -> dict[str, str]:
    """Metadata without the server's ``_nats.ver`` / ``_nats.level`` (``deleteDynamicMetadata``)."""
    return {k: v for k, v in metadata.items() if k not in (SERVER_VERSION_KEY, SERVER_LEVEL_KEY)}


def with_required_level(metadata: dict[str, str], level: int) -> dict[str, str]:
    """Stored metadata: the request's own keys (dynamic ones stripped) and ``_nats.req.level``."""
    out = strip_dynamic(metadata)
    out[REQUIRED_LEVEL_KEY] = str(level)
    return out


def copy_required_level(metadata: dict[str, str], previous: dict[str, str]) -> dict[str, str]:
    """A request's metadata made comparable with a stored config's (``copyStreamMetadata``):
    dynamic keys stripped, ``_nats.req.level`` taken from the stored one (or dropped)."""
    out = strip_dynamic(metadata)
    if REQUIRED_LEVEL_KEY in previous:
        out[REQUIRED_LEVEL_KEY] = previous[REQUIRED_LEVEL_KEY]
    else:
        out.pop(REQUIRED_LEVEL_KEY, None)
    return out


def with_dynamic(metadata: dict[str, str]) -> dict[str, str]:
    """Metadata as a response shows it: the stored keys plus the server's version and level
    (``setDynamicStreamMetadata``); Go's map encoding sorts the keys."""
    out = dict(metadata)
    out[SERVER_VERSION_KEY] = SERVER_VERSION
    out[SERVER_LEVEL_KEY] = str(JS_API_LEVEL)
    return dict(sorted(out.items()))

