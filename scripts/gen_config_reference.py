"""Writes docs/reference/configs.md (every configuration's fields with their type, default, unit and meaning)
and docs/reference/errors.md (every error class with its codes).

    .venv/bin/python scripts/gen_config_reference.py          # rewrite the page
    .venv/bin/python scripts/gen_config_reference.py --check  # exit 1 if the page is out of date

Field names, types and defaults come from the classes themselves; the unit of a duration is found by
asking the constructor (what does ``ack_wait=2`` put on the wire?), so the page cannot drift from the code
(tests/docs/test_reference.py runs ``--check``). The meanings are written here, one per field: a field
added to a class without one fails the generator.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import sys
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec

import pyjetstream as pjs
from pyjetstream.api import codec, enums, models_common, models_stream

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "configs.md"
ERRORS_PAGE = PAGE.with_name("errors.md")

NS = "ns"
SIZE = "bytes"

# name -> meaning, per class (the order of the page is the classes' field order).
STREAM = {
    "name": "The stream's name (required; no spaces, `.`, `*`, `>`).",
    "description": "Free text.",
    "subjects": "Subjects (wildcards allowed) whose messages the stream stores. Empty: the stream's name, unless it is a mirror or has sources.",
    "retention": "What removes messages besides the limits: `limits` (only the limits), `interest` (once every consumer has acknowledged), `workqueue` (once one has).",
    "max_consumers": "The most consumers; 0 or -1: no limit of the stream's own (nats-server 2.15 then caps at the account's `default_max_consumers`, 1000).",
    "max_msgs": "The most messages kept; 0 or -1: unlimited.",
    "max_bytes": "The most bytes kept; 0 or -1: unlimited.",
    "max_age": "The oldest a message may get before it is removed; 0: for ever. At least 100 ms.",
    "max_msgs_per_subject": "The most messages kept per subject (a KV bucket's history); 0 or -1: unlimited.",
    "max_msg_size": "The largest message accepted; 0 or -1: the server's `max_payload`.",
    "discard": "At a limit: `old` removes the oldest messages, `new` refuses the publish.",
    "storage": "`file` or `memory`.",
    "num_replicas": "Copies in a cluster; 0: 1. The embedded server is one node and refuses more than 1 (10074).",
    "no_ack": "Publishes get no acknowledgement.",
    "duplicate_window": "How long a `Nats-Msg-Id` is remembered to drop duplicates; 0: 2 minutes (or `max_age` if shorter).",
    "placement": "Where in a cluster the stream goes ([Placement](#placement)).",
    "mirror": "Copy another stream, keeping its sequences ([StreamSource](#streamsource)); a mirror takes no publishes of its own.",
    "sources": "Streams whose messages are copied into this one ([StreamSource](#streamsource)).",
    "compression": "On-disk compression of the file store: `none` or `s2`.",
    "first_seq": "The sequence of the first message of a new stream.",
    "subject_transform": "Rewrite subjects as messages are stored ([SubjectTransformConfig](#subjecttransformconfig)).",
    "republish": "Publish each stored message again on another subject ([RePublish](#republish)).",
    "allow_direct": "Allow direct gets (`$JS.API.DIRECT.GET`): reads answered without the API; KV buckets use them.",
    "mirror_direct": "A mirror answers direct gets for its origin's subjects.",
    "discard_new_per_subject": "With `discard: new` and `max_msgs_per_subject`: refuse a publish to a subject that is full.",
    "sealed": "No more writes, deletes or purges (set by an update; cannot be undone).",
    "deny_delete": "Messages cannot be deleted through the API.",
    "deny_purge": "The stream cannot be purged through the API.",
    "allow_rollup_hdrs": "Allow `Nats-Rollup` publishes, which replace a subject's (or the stream's) content.",
    "consumer_limits": "Defaults and caps for the stream's consumers ([StreamConsumerLimits](#streamconsumerlimits)).",
    "allow_msg_ttl": "Allow a per-message TTL (the `ttl=` of `publish`, header `Nats-TTL`); nats-server 2.11+, cannot be turned off.",
    "subject_delete_marker_ttl": "When the limits remove a subject's last message, leave a delete marker living this long; 0: none (2.11+).",
    "allow_msg_counter": "A counter stream: `Nats-Incr` publishes add to the subject's value (`js.counter`; 2.12+).",
    "allow_atomic": "Allow atomic batch publishes (`js.batch_publisher()`; 2.12+).",
    "allow_msg_schedules": "Allow message schedules (`schedule=` of `publish`; 2.12+).",
    "persist_mode": "`default`, or `async`: the acknowledgement may come before the write is flushed (R1 file streams; 2.12+).",
    "allow_batched": "Allow fast-ingest batch publishes (`js.fast_publisher()`; 2.14+).",
    "metadata": "Free key/value pairs; keys starting `_nats.` are the server's (its API level).",
}
CONSUMER = {
    "durable_name": "A durable consumer's name (also `durable=`, nats.go's field name); it lives until deleted.",
    "name": "The consumer's name (2.9+); with neither name, the server names an ephemeral consumer.",
    "description": "Free text.",
    "deliver_policy": "Where it starts: `all`, `last`, `new`, `by_start_sequence`, `by_start_time`, `last_per_subject`.",
    "opt_start_seq": "The first sequence, with `by_start_sequence`.",
    "opt_start_time": "The first time, with `by_start_time`.",
    "ack_policy": "`explicit` (each message acknowledged; what most consumers want), `all` (an ack covers the earlier ones), `none`, `flow_control` (sourcing, 2.14+). Not given: `explicit`, as in nats.go's `jetstream` package and nats-py (the server's own default, for a request without the field, is `none`; ordered consumers use `none`).",
    "ack_wait": "How long a delivered message may stay unacknowledged before it is delivered again; 0: 30 s.",
    "max_deliver": "The most times a message is delivered; 0 or -1: unlimited.",
    "backoff": "The waits between redeliveries, instead of `ack_wait` (`max_deliver` must exceed its length).",
    "filter_subject": "Only messages on this subject (wildcards allowed).",
    "filter_subjects": "Only messages on these subjects (2.10+; not with `filter_subject`).",
    "replay_policy": "`instant`, or `original`: at the pace they were stored.",
    "rate_limit_bps": "Push consumers: the most bits per second delivered; 0: unlimited.",
    "sample_freq": 'The share of acknowledgements reported as advisories, e.g. `"10%"`.',
    "max_waiting": "Pull consumers: the most pull requests waiting; 0: 512.",
    "max_ack_pending": "The most messages delivered and not yet acknowledged; 0: 1000 (or the stream's `consumer_limits`), -1: unlimited.",
    "flow_control": "Push consumers: the server asks the client to confirm it keeps up.",
    "headers_only": "Deliver headers only (the payload's size in `Nats-Msg-Size`).",
    "max_batch": "Pull consumers: the largest batch a request may ask for; 0: unlimited.",
    "max_expires": "Pull consumers: the longest a request may wait; 0: unlimited.",
    "max_bytes": "Pull consumers: the largest `max_bytes` a request may ask for; 0: unlimited.",
    "deliver_subject": "Makes it a push consumer: messages are sent to this subject.",
    "deliver_group": "Push consumers: a queue group sharing the deliveries.",
    "idle_heartbeat": "Push consumers: a heartbeat after this long without messages.",
    "inactive_threshold": "Remove the consumer after this long without activity (ephemerals: 0 means 5 s).",
    "num_replicas": "Copies in a cluster; 0: the stream's.",
    "mem_storage": "Keep the consumer's state in memory even on a file stream.",
    "direct": "Set by the server for the consumers of mirrors and sources.",
    "sourcing": "A consumer a sourcing stream reads through (2.14+): exempt from the work-queue rules and `max_consumers`.",
    "metadata": "Free key/value pairs; keys starting `_nats.` are the server's.",
    "pause_until": "Paused until this time (2.11+; `js.pause_consumer` / `resume_consumer`).",
    "priority_groups": "The priority groups pull requests name (2.11+).",
    "priority_policy": "`overflow`, `pinned_client` (2.11+) or `prioritized` (2.12+) among the groups' pulls.",
    "priority_timeout": "`pinned_client`: how long a pinned client may stay silent before another is pinned (2.11+).",
}
ORDERED = {
    "filter_subjects": "Only messages on these subjects.",
    "deliver_policy": "Where it starts (as a consumer's).",
    "opt_start_seq": "The first sequence, with `by_start_sequence`.",
    "opt_start_time": "The first time, with `by_start_time`.",
    "replay_policy": "`instant`, or `original`: at the pace they were stored.",
    "inactive_threshold": "Remove the underlying consumer after this long without activity.",
    "headers_only": "Deliver headers only.",
    "max_reset_attempts": "How often the client recreates the consumer after a gap or a failure; 0: without limit.",
    "metadata": "Free key/value pairs.",
}
KV = {
    "bucket": "The bucket's name (its stream is `KV_<bucket>`).",
    "description": "Free text.",
    "max_value_size": "The largest value; 0: unlimited.",
    "history": "Values kept per key (1 to 64).",
    "ttl": "How long a value lives; 0: for ever.",
    "max_bytes": "The most bytes the bucket holds; 0: unlimited.",
    "storage": "`file` or `memory`.",
    "replicas": "Copies in a cluster (1 on the embedded server).",
    "placement": "Where in a cluster the bucket goes ([Placement](#placement)).",
    "republish": "Publish each change again on another subject ([RePublish](#republish)).",
    "mirror": "Mirror another bucket ([StreamSource](#streamsource)).",
    "sources": "Buckets whose keys are copied into this one ([StreamSource](#streamsource)).",
    "compression": "Compress the bucket's stream (`s2`).",
    "metadata": "Free key/value pairs.",
    "limit_marker_ttl": "When `ttl` removes a key, leave a marker living this long, so watchers see the key go; 0: none (2.11+).",
}
OBJ = {
    "bucket": "The bucket's name (its stream is `OBJ_<bucket>`).",
    "description": "Free text.",
    "ttl": "How long an object lives; 0: for ever.",
    "max_bytes": "The most bytes the bucket holds; 0: unlimited.",
    "storage": "`file` or `memory`.",
    "replicas": "Copies in a cluster (1 on the embedded server).",
    "placement": "Where in a cluster the bucket goes ([Placement](#placement)).",
    "compression": "Compress the bucket's stream (`s2`).",
    "metadata": "Free key/value pairs.",
}
OBJECT_META = {
    "name": "The object's name in the bucket.",
    "description": "Free text.",
    "headers": "Headers stored with the object's description.",
    "metadata": "Free key/value pairs.",
    "max_chunk_size": "The size of the chunks the object is cut into; 0: 128 KiB.",
}
SCHEDULE = {
    "target": "The subject the server publishes to (required).",
    "at": "Once, at this time (2.12+).",
    "every": "Repeatedly, at this interval, at least 1 s (2.14+).",
    "cron": "On a 6-field cron expression (seconds first) or `@hourly`, `@daily` ... (2.14+).",
    "time_zone": "The cron expression's time zone (`Europe/Paris`); UTC otherwise.",
    "source": "Publish the last message of this subject instead of the schedule's body.",
    "ttl": 'The produced messages\' TTL, or `"never"`.',
}
PUBACK = {
    "stream": "The stream that stored the message.",
    "seq": "Its sequence in that stream.",
    "domain": "The JetStream domain, if any.",
    "duplicate": "True when the stream already had this `Nats-Msg-Id`: nothing new was stored.",
    "val": "A counter stream's value after this publish (2.12+).",
    "batch": "An atomic or fast batch's id, on the acknowledgement of its commit.",
    "count": "The number of messages the committed batch stored.",
}
SOURCE = {
    "name": "The stream copied from.",
    "opt_start_seq": "Start copying at this sequence.",
    "opt_start_time": "Start copying at this time.",
    "filter_subject": "Copy only messages on this subject.",
    "subject_transforms": "Rewrite the copied messages' subjects ([SubjectTransformConfig](#subjecttransformconfig)).",
    "external": "The stream is in another domain or account ([ExternalStream](#externalstream)).",
    "consumer": 'Read through a consumer the user made ("durable sourcing", 2.14+; [StreamConsumerSource](#streamconsumersource)).',
}
REPUBLISH = {
    "src": "Republish messages stored on these subjects; empty: all (`>`).",
    "dest": "The subject to republish to (tokens of `src` can be mapped, as in subject transforms).",
    "headers_only": "Republish the headers only (the size in `Nats-Msg-Size`).",
}
PLACEMENT = {
    "cluster": "The cluster's name.",
    "tags": "Server tags the stream's servers must have.",
    "preferred": "The server preferred as the stream's leader (2.11+).",
}
TRANSFORM = {
    "src": "The subjects to rewrite (wildcards allowed).",
    "dest": "What they become (`{{wildcard(1)}}`, `{{partition(3,1)}}` ... as in nats-server).",
}
CONSUMER_LIMITS = {
    "inactive_threshold": "The default and the most for the consumers' `inactive_threshold`; 0: none.",
    "max_ack_pending": "The default and the most for the consumers' `max_ack_pending`; 0: none.",
}
EXTERNAL = {
    "api": "The API prefix of the other domain or account (`$JS.hub.API`).",
    "deliver": "The subject prefix the copied messages are delivered under.",
}
CONSUMER_SOURCE = {
    "name": "The consumer on the origin stream (it must use `ack_policy: flow_control`).",
    "deliver_subject": "Where that push consumer delivers.",
}

ENUMS: dict[type[enum.Enum], dict[str, str]] = {
    enums.AckPolicy: {
        "NONE": "Nothing to acknowledge: a message counts as done once sent.",
        "ALL": "An acknowledgement covers every earlier message too.",
        "EXPLICIT": "Each message is acknowledged on its own.",
        "FLOW_CONTROL": "Acknowledged by the flow-control replies of a sourcing stream (2.14+, ADR-60).",
    },
    enums.DeliverPolicy: {
        "ALL": "From the first message.",
        "LAST": "From the last message.",
        "NEW": "Only messages stored after the consumer was made.",
        "BY_START_SEQUENCE": "From `opt_start_seq`.",
        "BY_START_TIME": "From `opt_start_time`.",
        "LAST_PER_SUBJECT": "The last message of each subject, then new ones.",
    },
    enums.ReplayPolicy: {
        "INSTANT": "As fast as the consumer takes them.",
        "ORIGINAL": "At the pace they were stored.",
    },
    enums.RetentionPolicy: {
        "LIMITS": "Messages stay until a limit removes them.",
        "INTEREST": "Also removed once every consumer has acknowledged them.",
        "WORKQUEUE": "Also removed once one consumer has acknowledged them (one consumer per subject).",
    },
    enums.DiscardPolicy: {
        "OLD": "At a limit, the oldest messages go.",
        "NEW": "At a limit, the new message is refused.",
    },
    enums.StorageType: {
        "FILE": "On disk: survives a restart (and `kill -9`, for what was acknowledged).",
        "MEMORY": "In memory: lost at a restart.",
    },
    enums.StoreCompression: {"NONE": "Records as they are.", "S2": "Records compressed with S2 (Snappy)."},
    enums.PersistMode: {
        "DEFAULT": "Acknowledged once written.",
        "ASYNC": "The acknowledgement may come before the write is flushed (2.12+).",
    },
    enums.PriorityPolicy: {
        "NONE": "No priority groups.",
        "OVERFLOW": "Pulls with `min_pending` / `min_ack_pending` get messages only past those thresholds.",
        "PINNED_CLIENT": "One client (`Nats-Pin-Id`) gets the messages until it goes silent for `priority_timeout`.",
        "PRIORITIZED": "Pulls with a lower `priority` are served first (2.12+).",
    },
}

DURATIONS = {
    "ack_wait",
    "backoff",
    "max_expires",
    "idle_heartbeat",
    "inactive_threshold",
    "priority_timeout",
    "max_age",
    "duplicate_window",
    "subject_delete_marker_ttl",
    "ttl",
    "limit_marker_ttl",
    "every",
}
TIMES = {"opt_start_time", "pause_until", "at"}
SIZES = {"max_bytes", "max_msg_size", "max_value_size", "max_chunk_size"}


def _wire_value(factory: Any, field: str, value: Any) -> Any:
    """What ``factory(field=value)`` puts on the wire for ``field``."""
    args: dict[str, Any] = {field: value}
    if factory is pjs.StreamConfig:
        args.setdefault("name", "X")
    built = factory(**args)
    return json.loads(codec.encode(built))[field]  # what the client sends: the codec's JSON


def _duration_unit(factory: Any, field: str, annotation: str) -> str:
    """The unit the Python API takes for a duration, asked of the constructor where it builds a wire model."""
    if factory is not None:
        value = [2] if field == "backoff" else 2
        wire = _wire_value(factory, field, value)
        wire = wire[0] if isinstance(wire, list) else wire
        sample = [timedelta(seconds=2)] if field == "backoff" else timedelta(seconds=2)
        takes_timedelta = True
        try:
            _wire_value(factory, field, sample)
        except (TypeError, msgspec.ValidationError):
            takes_timedelta = False
        unit = {2: "nanoseconds", 2_000_000_000: "seconds"}.get(wire) if type(wire) is int else None
        if unit is None:
            raise SystemExit(f"{factory.__name__}.{field}=2 is {wire} on the wire: which unit is that?")
        return f"{unit} (or `timedelta`)" if takes_timedelta else unit
    if "timedelta" in annotation or "Duration" in annotation:
        return "seconds (or `timedelta`)"
    if "float" in annotation or "int" in annotation:
        return "seconds"
    raise SystemExit(f"no unit known for duration {field}: {annotation}")


def _unit(factory: Any, field: str, annotation: str) -> str:
    if field in DURATIONS:
        return _duration_unit(factory, field, annotation)
    if field in TIMES:
        return "time (`datetime`)"
    if field in SIZES:
        return SIZE
    if field == "rate_limit_bps":
        return "bits per second"
    return ""


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, str):
        text = annotation
    elif isinstance(annotation, type):
        text = annotation.__name__
    else:
        text = str(annotation)
    text = re.sub(r"\bpyjetstream(\.\w+)*\.(?=[A-Z])", "", text)  # module paths: the class name is enough
    text = text.replace("NanoTime", "datetime")
    parts = list(dict.fromkeys(part.strip() for part in text.split("|")))  # NanoTime | datetime: once
    return " | ".join(parts)


def _default(value: Any) -> str:
    if value is REQUIRED:
        return "required"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if value is None:
        return "—"
    if isinstance(value, msgspec.Struct):
        return "(defaults)"
    return f"`{value!r}`"


def _rows(
    fields: list[tuple[str, Any, Any]], meanings: dict[str, str], factory: Any, owner: str
) -> list[str]:
    names = [name for name, _, _ in fields]
    missing = [name for name in names if name not in meanings]
    extra = [name for name in meanings if name not in names]
    if missing or extra:
        raise SystemExit(f"{owner}: no meaning written for {missing}; meanings of unknown fields {extra}")
    rows = ["| field | type | default | unit | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, annotation, default in fields:
        type_text = _type_name(annotation).replace("|", "\\|")
        unit = _unit(factory, name, _type_name(annotation))
        rows.append(f"| `{name}` | `{type_text}` | {_default(default)} | {unit} | {meanings[name]} |")
    return rows


REQUIRED = "required"


def _struct_fields(
    model: type[msgspec.Struct], sample: msgspec.Struct, required: tuple[str, ...] = ()
) -> list[tuple[str, Any, Any]]:
    """(name, type, default) of a wire model; ``required``: fields the sample had to be given."""
    hints = typing.get_type_hints(model)
    return [
        (name, hints[name], REQUIRED if name in required else getattr(sample, name))
        for name in model.__struct_fields__
    ]


def _dataclass_fields(model: type) -> list[tuple[str, Any, Any]]:
    out = []
    for f in dataclasses.fields(model):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = REQUIRED
        out.append((f.name, f.type, default))
    return out


def _directive(path: str) -> list[str]:
    return [f"::: {path}", "    options:", "      members: false", "      show_bases: false", ""]


def _section(path: str, rows: list[str], intro: str = "") -> list[str]:
    return [*_directive(path), *([intro, ""] if intro else []), *rows, ""]


def render() -> str:
    stream_sample = pjs.StreamConfig(name="X")
    consumer_sample = pjs.ConsumerConfig()
    out = [
        "# Configurations",
        "",
        "<!-- generated by scripts/gen_config_reference.py from the classes: edit the meanings there -->",
        "",
        "Every field of the configurations the client takes, with its type, its default in Python, its unit",
        "and what it means. A 0 (or an empty value) asks for the server's default, which the meaning gives.",
        "Durations are given in the unit of the *unit* column (a",
        "`datetime.timedelta` is accepted wherever it says so); times are `datetime`s (naive means UTC). The",
        "[concepts](../concepts.md) page explains streams, consumers and acknowledgements; nats-server's",
        "[stream](https://docs.nats.io/nats-concepts/jetstream/streams#configuration) and",
        "[consumer](https://docs.nats.io/nats-concepts/jetstream/consumers#configuration) pages say the same",
        "for the wire.",
        "",
        "## Streams and consumers",
        "",
    ]
    out += _section(
        "pyjetstream.client.jetstream.models.StreamConfig",
        _rows(
            _struct_fields(type(stream_sample), stream_sample, ("name",)),
            STREAM,
            pjs.StreamConfig,
            "StreamConfig",
        ),
        "`pjs.StreamConfig(name=..., subjects=[...], ...)`: the wire model "
        "`pyjetstream.api.models_stream.StreamConfig` with its durations in seconds ([Durations](../durations.md)).",
    )
    out += _section(
        "pyjetstream.client.jetstream.config.ConsumerConfig",
        _rows(
            _struct_fields(type(consumer_sample), consumer_sample),
            CONSUMER,
            pjs.ConsumerConfig,
            "ConsumerConfig",
        ),
        "`pjs.ConsumerConfig(durable=..., ack_wait=30, ...)` builds "
        "`pyjetstream.client.jetstream.models.ConsumerConfig`: the wire model "
        "`pyjetstream.api.models_consumer.ConsumerConfig` with its durations in seconds "
        "([Durations](../durations.md)) and `ack_policy` `explicit` when not given.",
    )
    out += _section(
        "pyjetstream.client.jetstream.ordered.OrderedConsumerConfig",
        _rows(_dataclass_fields(pjs.OrderedConsumerConfig), ORDERED, None, "OrderedConsumerConfig"),
    )
    out += ["## Key-value and object store", ""]
    out += _section(
        "pyjetstream.client.jetstream.kv.KeyValueConfig",
        _rows(_dataclass_fields(pjs.KeyValueConfig), KV, None, "KeyValueConfig"),
    )
    out += _section(
        "pyjetstream.client.jetstream.object_store.ObjectStoreConfig",
        _rows(_dataclass_fields(pjs.ObjectStoreConfig), OBJ, None, "ObjectStoreConfig"),
    )
    out += _section(
        "pyjetstream.client.jetstream.object_store.ObjectMeta",
        _rows(_dataclass_fields(pjs.ObjectMeta), OBJECT_META, None, "ObjectMeta"),
    )
    out += ["## Publishing", ""]
    out += _section(
        "pyjetstream.client.jetstream.publish.MsgSchedule",
        _rows(_dataclass_fields(pjs.MsgSchedule), SCHEDULE, None, "MsgSchedule"),
    )
    out += _section(
        "pyjetstream.api.models_msg.PubAck",
        _rows(
            _struct_fields(pjs.PubAck, pjs.PubAck(stream="S", seq=1), ("stream", "seq")),
            PUBACK,
            None,
            "PubAck",
        ),
        "What `js.publish` returns.",
    )
    out += ["## Parts of a stream's configuration", ""]
    parts: list[tuple[type[msgspec.Struct], dict[str, str], dict[str, Any]]] = [
        (models_stream.StreamSource, SOURCE, {"name": "ORIGIN"}),
        (models_stream.RePublish, REPUBLISH, {"dest": "copy.>"}),
        (models_common.Placement, PLACEMENT, {}),
        (models_common.SubjectTransformConfig, TRANSFORM, {"src": "a.*", "dest": "b.{{wildcard(1)}}"}),
        # the consumer limits the user's StreamConfig takes (durations as that config has them)
        (typing.get_type_hints(type(stream_sample))["consumer_limits"], CONSUMER_LIMITS, {}),
        (models_common.ExternalStream, EXTERNAL, {"api": "$JS.hub.API", "deliver": ""}),
        (models_stream.StreamConsumerSource, CONSUMER_SOURCE, {}),
    ]
    for model, meanings, args in parts:
        factory = model if model.__name__ == "StreamConsumerLimits" else None
        out += _section(
            f"{model.__module__}.{model.__name__}",
            _rows(_struct_fields(model, model(**args), tuple(args)), meanings, factory, model.__name__),
        )
    out += ["## Enumerations", "", "Each member's `value` is what the server reads and writes.", ""]
    for kind, meanings in ENUMS.items():
        names = [m.name for m in kind]
        if sorted(names) != sorted(meanings):
            raise SystemExit(f"{kind.__name__}: members {names}, meanings for {sorted(meanings)}")
        rows = ["| member | value | meaning |", "| --- | --- | --- |"]
        rows += [f"| `{m.name}` | `{m.value}` | {meanings[m.name]} |" for m in kind]
        out += _section(f"{kind.__module__}.{kind.__name__}", rows)
    return "\n".join(out).rstrip() + "\n"


def _first_line(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else ""


def render_errors() -> str:
    """docs/reference/errors.md: the error hierarchy, a table of every JetStream error with its codes."""
    from pyjetstream.client.jetstream import errors as js_errors

    classes = [
        obj
        for name in js_errors.__all__
        if isinstance(obj := getattr(js_errors, name), type) and issubclass(obj, js_errors.JetStreamError)
    ]
    api = [c for c in classes if issubclass(c, js_errors.JetStreamAPIError) and c.default_err_code]
    client = [
        c
        for c in classes
        if c not in api and c not in (js_errors.JetStreamError, js_errors.JetStreamAPIError)
    ]
    out = [
        "# Errors",
        "",
        "<!-- generated by scripts/gen_config_reference.py from pyjetstream.client.jetstream.errors -->",
        "",
        "Every exception the client raises is a `pyjetstream.client.NatsError`. JetStream's are",
        "`JetStreamError`s (`pjs.errors`, which is `pyjetstream.client.jetstream.errors`) and carry `code` (HTTP-like,",
        "or a pull request's status), `err_code` (nats-server's JetStream error code; 0 for errors found by",
        "the client) and `description`. An error the server answers is raised as its most specific class,",
        "matched by `err_code` as nats.go's `errors.Is` matches: catch the class, or compare `err_code`.",
        "",
        "<!-- test: with js -->",
        "```python",
        "try:",
        '    await js.stream("NOPE")',
        "except pjs.errors.StreamNotFound as err:  # also a pjs.errors.JetStreamAPIError",
        "    print(err.code, err.err_code, err.description)  # 404 10059 stream not found",
        "```",
        "",
        "## Errors the server answers",
        "",
        "| class | code | err_code | nats-server's description | is a |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cls in sorted(api, key=lambda c: (c.default_err_code, c.__name__)):
        base = cls.__mro__[1].__name__
        out.append(
            f"| `{cls.__name__}` | {cls.default_code} | {cls.default_err_code} | {cls.default_description} | `{base}` |"
        )
    out += [
        "",
        "## Errors the client finds",
        "",
        "Status answers to pull requests (`code` is the status), misuse of the API, KV and object-store",
        "conditions:",
        "",
        "| class | code | message | is a | when |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cls in client:
        base = cls.__mro__[1].__name__
        code = cls.default_code or ""
        message = "" if cls.default_description == "jetstream error" else cls.default_description
        out.append(f"| `{cls.__name__}` | {code} | {message} | `{base}` | {_first_line(cls)} |")
    out += [
        "",
        "## Core NATS errors",
        "",
        "::: pyjetstream.client.errors",
        "",
        "## JetStream errors",
        "",
        "::: pyjetstream.client.jetstream.errors",
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    pages = {PAGE: render(), ERRORS_PAGE: render_errors()}
    if "--check" in argv:
        stale = [page for page, text in pages.items() if not page.exists() or page.read_text() != text]
        for page in stale:
            print(f"{page} is out of date: run python scripts/gen_config_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for page, text in pages.items():
        page.write_text(text)
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
