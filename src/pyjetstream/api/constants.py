"""Defaults and limits nats-server applies (values as in 2.9.10/2.10; durations in ns).

The models carry Go zero values; the server engine applies these when it defaults a
config (``checkStreamCfg`` / ``setConsumerConfigDefaults``).
"""

from __future__ import annotations

from .timefmt import NS_PER_MS, NS_PER_S

# --- stream defaults --------------------------------------------------------------------------
DEFAULT_DUPLICATE_WINDOW_NS = 120 * NS_PER_S  # capped to max_age when max_age < 2 min
UNLIMITED = -1  # max_msgs / max_bytes / max_msg_size / max_consumers / max_msgs_per_subject 0 → -1
MIN_MAX_AGE_NS = 100 * NS_PER_MS  # "max age needs to be >= 100ms"
MIN_DUPLICATE_WINDOW_NS = 100 * NS_PER_MS  # "duplicates window needs to be >= 100ms"
MAX_STREAM_REPLICAS = 5
DEFAULT_STREAM_REPLICAS = 1

# --- consumer defaults ------------------------------------------------------------------------
DEFAULT_ACK_WAIT_NS = 30 * NS_PER_S  # explicit/all ack policies
DEFAULT_MAX_ACK_PENDING = 1000  # JsDefaultMaxAckPending
DEFAULT_MAX_WAITING = 512  # JSWaitQueueDefaultMax, pull consumers
DEFAULT_MAX_DELIVER = -1  # 0 → unlimited
DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD_NS = 5 * NS_PER_S
MIN_IDLE_HEARTBEAT_NS = 100 * NS_PER_MS  # "consumer idle heartbeat needs to be >= 100ms"
MIN_MAX_REQUEST_EXPIRES_NS = 1 * NS_PER_MS  # "consumer max request expires needs to be >= 1ms"
EPHEMERAL_NAME_LEN = 8  # server-generated ephemeral consumer names

# --- subjects ---------------------------------------------------------------------------------
# The ack reply subjects' prefix (`pyjetstream.api.ack` re-exports it): here, so that a server's start
# finds it without loading the ack models (the subscription index and imports only test the prefix).
ACK_PREFIX = "$JS.ACK."

# --- API limits -------------------------------------------------------------------------------
JS_API_NAMES_LIMIT = 1024  # STREAM.NAMES / CONSUMER.NAMES page size
JS_API_LIST_LIMIT = 256  # STREAM.LIST / CONSUMER.LIST page size
JS_MAX_SUBJECT_DETAILS = 100_000  # STREAM.INFO subjects_filter page size
JS_MAX_NAME_LEN = 255  # stream / consumer names
JS_MAX_DESCRIPTION_LEN = 4 * 1024
JS_MAX_METADATA_LEN = 128 * 1024  # ⟨2.10+⟩ total metadata size

# --- messages ---------------------------------------------------------------------------------
MAX_HEADER_SIZE = 65535  # header block larger ⇒ 10097 "header size exceeds maximum allowed of 64k"

# --- push flow control and snapshots ----------------------------------------------------------
FLOW_CONTROL_INITIAL_WINDOW = 2 * 1024 * 1024  # 32 MiB / 16, doubles per response
FLOW_CONTROL_MAX_WINDOW = 32 * 1024 * 1024
DEFAULT_SNAPSHOT_CHUNK_SIZE = 128 * 1024
SNAPSHOT_WINDOW = 8 * 1024 * 1024
