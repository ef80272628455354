"""The ``jetstream`` data source's options, parsed once into a frozen, picklable value.

Spark hands a data source a case-insensitive ``str -> str`` mapping; everything here is
parsed from it on the driver so that a bad option fails the query at planning time with a
clear message, and executors receive ready values (the object is pickled into every task).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyjetstream.api.timefmt import NS_PER_S, parse_time

__all__ = [
    "DECODE_MODES",
    "DEFAULT_SERVERS",
    "PUBLISH_MODES",
    "ConnectOptions",
    "JetStreamOptions",
    "OptionError",
    "parse_options",
    "parse_time_option",
]

DEFAULT_SERVERS = "nats://127.0.0.1:4222"
DECODE_MODES = ("binary", "utf8", "json")
# How a write task publishes (``publishMode``): ``async`` pipelined publishes with a bounded window of
# unacked messages (the default), ``sync`` one publish at a time, ``fast`` one fast-ingest batch per
# task (nats-server 2.14+, stream ``allow_batched``), ``atomic`` atomic batches of ``atomicBatchSize``
# rows, each stored all or nothing (2.12+, stream ``allow_atomic``).
PUBLISH_MODES = ("async", "sync", "fast", "atomic")

# A partition below this many sequences costs more in task start-up than it saves.
DEFAULT_MIN_PARTITION_SIZE = 10_000
# Rows per Arrow batch handed to Spark, and the most messages one pull request asks for.
DEFAULT_BATCH_SIZE = 4096
# Publishes in flight per write task before waiting for acks (the "bounded window").
DEFAULT_PUBLISH_WINDOW = 1024
DEFAULT_PUBLISH_RETRIES = 5
# Rows per atomic batch: nats-server's default limit per batch (``max_batch_size``), which is also the
# most the client's atomic batch publisher takes.
MAX_ATOMIC_BATCH_SIZE = 1000
# Fast ingest: the most messages between two flow acks the task asks for (nats-server caps it at 500).
DEFAULT_FAST_FLOW = 500


class OptionError(ValueError):
    """A ``jetstream`` option is missing or invalid."""


@dataclass(frozen=True, slots=True)
class ConnectOptions:
    """How an executor (or the driver) connects: servers, credentials and TLS."""

    servers: tuple[str, ...] = (DEFAULT_SERVERS,)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None  # path of a .creds file (user JWT + nkey seed)
    nkey_seed: str | None = None  # path of a seed file, or the seed itself
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_hostname: str | None = None
    tls_insecure: bool = False
    connect_timeout: float = 5.0
    request_timeout: float = 5.0
    name: str = "pyjetstream-spark"

    @property
    def wants_tls(self) -> bool:
        return bool(self.tls_ca_file or self.tls_cert_file or self.tls_insecure)


@dataclass(frozen=True, slots=True)
class JetStreamOptions:
    """Every option of the source and the sink (only the relevant ones are used by each)."""

    connect: ConnectOptions = field(default_factory=ConnectOptions)
    stream: str | None = None
    subjects: tuple[str, ...] = ()  # read: filter subjects
    start_sequence: int | None = None
    start_time_ns: int | None = None
    end_sequence: int | None = None
    end_time_ns: int | None = None
    partitions: int | None = None  # None: derived from the range size
    min_partition_size: int = DEFAULT_MIN_PARTITION_SIZE
    batch_size: int = DEFAULT_BATCH_SIZE
    decode: str = "binary"
    data_schema: str | None = None  # DDL of the JSON payload (decode=json)
    max_messages_per_trigger: int | None = None
    pushdown: bool = True  # apply Spark's pushed filters to the read
    # Batch reads by batched direct get where server and stream allow it; off by default: a consumer's
    # deliveries cost nats-server 2.15.1 ~4x less CPU per row than direct-get replies (bench/README.md).
    direct_get: bool = False
    # Streaming: the driver reads each micro-batch (Spark's simple stream reader, no Python task per
    # micro-batch: the low-latency plan; driver_stream_reader.py).
    driver_reads: bool = False
    # write
    subject: str | None = None  # default subject when the DataFrame has no subject column
    bucket: str | None = None  # write into a KV bucket: subject column = key, data = value
    publish_mode: str = "async"
    publish_window: int = DEFAULT_PUBLISH_WINDOW
    atomic_batch_size: int = MAX_ATOMIC_BATCH_SIZE
    fast_flow: int = DEFAULT_FAST_FLOW
    publish_retries: int = DEFAULT_PUBLISH_RETRIES
    ack_timeout: float = 5.0
    write_id: str | None = None  # stable scope of derived Nats-Msg-Ids for a batch write
    derive_msg_id: bool = True  # give rows without msg_id a deterministic Nats-Msg-Id

    @property
    def filter_subjects(self) -> tuple[str, ...]:
        """Read filter: ``subjects``, or a lone ``subject`` given by habit."""
        if self.subjects:
            return self.subjects
        return (self.subject,) if self.subject else ()


def parse_time_option(name: str, text: str) -> int:
    """A time option as Unix ns: RFC3339 (``2024-05-01T12:00:00Z``), any ISO 8601 form
    (naive means UTC) or a number of seconds since the epoch."""
    text = text.strip()
    try:
        return parse_time(text)
    except ValueError:
        pass
    try:
        return int(float(text) * NS_PER_S)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise OptionError(
            f"option {name}={text!r} is not a time (use RFC3339, e.g. 2024-05-01T12:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return datetime_to_ns(moment)


def datetime_to_ns(moment: datetime) -> int:
    """Exact (integer) Unix nanoseconds of an aware or naive-UTC datetime."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * NS_PER_S + delta.microseconds * 1_000


def _get(options: Mapping[str, str], *names: str) -> str | None:
    lowered = {k.lower(): v for k, v in options.items()}
    for name in names:
        value = lowered.get(name.lower())
        if value is not None and str(value).strip() != "":
            return str(value)
    return None


def _int_or(options: Mapping[str, str], name: str, default: int) -> int:
    """A non-negative integer option, ``default`` when it is not given."""
    value = _int(options, name, minimum=0)
    return default if value is None else value


def _int(options: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    text = _get(options, name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option {name}={text!r} is not an integer") from None
    if value < minimum:
        raise OptionError(f"option {name}={value} must be at least {minimum}")
    return value


def _float(options: Mapping[str, str], name: str, default: float) -> float:
    text = _get(options, name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise OptionError(f"option {name}={text!r} is not a number") from None
    if value <= 0:
        raise OptionError(f"option {name}={value} must be positive")
    return value


def _bool(options: Mapping[str, str], name: str) -> bool:
    text = _get(options, name)
    if text is None:
        return False
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}={text!r} is not a boolean")


def _split(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_connect_options(options: Mapping[str, str]) -> ConnectOptions:
    servers = _split(_get(options, "servers", "url")) or (DEFAULT_SERVERS,)
    return ConnectOptions(
        servers=servers,
        user=_get(options, "user"),
        password=_get(options, "password"),
        token=_get(options, "token"),
        creds=_get(options, "creds", "credentials"),
        nkey_seed=_get(options, "nkeySeed", "nkey"),
        tls_ca_file=_get(options, "tlsCaFile", "tls.ca"),
        tls_cert_file=_get(options, "tlsCertFile", "tls.cert"),
        tls_key_file=_get(options, "tlsKeyFile", "tls.key"),
        tls_hostname=_get(options, "tlsHostname"),
        tls_insecure=_bool(options, "tlsInsecure"),
        connect_timeout=_float(options, "connectTimeout", 5.0),
        request_timeout=_float(options, "requestTimeout", 5.0),
        name=_get(options, "connectionName") or "pyjetstream-spark",
    )


def parse_options(options: Mapping[str, str]) -> JetStreamOptions:
    """Parse and validate Spark's option map (keys are case-insensitive)."""
    decode = (_get(options, "decode") or "binary").lower().replace("-", "")
    if decode == "string":
        decode = "utf8"
    if decode not in DECODE_MODES:
        raise OptionError(f"option decode={decode!r} must be one of {', '.join(DECODE_MODES)}")
    data_schema = _get(options, "dataSchema", "jsonSchema")
    if decode == "json" and data_schema is None:
        raise OptionError("option decode=json needs dataSchema (a DDL string, e.g. 'id long, name string')")
    publish_mode = (_get(options, "publishMode") or "async").lower()
    if publish_mode not in PUBLISH_MODES:
        raise OptionError(f"option publishMode={publish_mode!r} must be one of {', '.join(PUBLISH_MODES)}")
    atomic_batch_size = _int(options, "atomicBatchSize", minimum=1) or MAX_ATOMIC_BATCH_SIZE
    if atomic_batch_size > MAX_ATOMIC_BATCH_SIZE:
        raise OptionError(
            f"option atomicBatchSize={atomic_batch_size} must be at most {MAX_ATOMIC_BATCH_SIZE}"
        )
    fast_flow = _int(options, "fastFlow", minimum=1) or DEFAULT_FAST_FLOW
    if fast_flow > 65535:
        raise OptionError(f"option fastFlow={fast_flow} must be at most 65535")
    start_time = _get(options, "startTime")
    end_time = _get(options, "endTime")
    parsed = JetStreamOptions(
        connect=parse_connect_options(options),
        stream=_get(options, "stream"),
        subjects=_split(_get(options, "subjects", "subject.filter", "filter")),
        start_sequence=_int(options, "startSequence", minimum=1),
        start_time_ns=parse_time_option("startTime", start_time) if start_time else None,
        end_sequence=_int(options, "endSequence", minimum=0),
        end_time_ns=parse_time_option("endTime", end_time) if end_time else None,
        partitions=_int(options, "partitions", minimum=1),
        min_partition_size=_int(options, "minPartitionSize", minimum=1) or DEFAULT_MIN_PARTITION_SIZE,
        batch_size=_int(options, "batchSize", minimum=1) or DEFAULT_BATCH_SIZE,
        decode=decode,
        data_schema=data_schema,
        max_messages_per_trigger=_int(options, "maxMessagesPerTrigger", minimum=1),
        pushdown=_get(options, "pushdown") is None or _bool(options, "pushdown"),
        direct_get=_get(options, "directGet") is not None and _bool(options, "directGet"),
        driver_reads=_bool(options, "driverReads"),
        subject=_get(options, "subject"),
        bucket=_get(options, "bucket", "kv"),
        publish_mode=publish_mode,
        publish_window=_int(options, "publishWindow", minimum=1) or DEFAULT_PUBLISH_WINDOW,
        atomic_batch_size=atomic_batch_size,
        fast_flow=fast_flow,
        publish_retries=_int_or(options, "publishRetries", DEFAULT_PUBLISH_RETRIES),
        ack_timeout=_float(options, "ackTimeout", 5.0),
        write_id=_get(options, "writeId", "msgIdPrefix"),
        derive_msg_id=_get(options, "deriveMsgId") is None or _bool(options, "deriveMsgId"),
    )
    if parsed.start_sequence is not None and parsed.start_time_ns is not None:
        raise OptionError("options startSequence and startTime are exclusive: give one")
    if parsed.end_sequence is not None and parsed.end_time_ns is not None:
        raise OptionError("options endSequence and endTime are exclusive: give one")
    return parsed
