"""Stream configuration from the command line: the nats CLI's ``stream add``/``edit`` flags.

Every ``StreamConfig`` field has a flag (``--subjects``, ``--max-age 1d``, ``--retention work``,
``--allow-rollup`` / ``--no-allow-rollup`` …); ``--config FILE`` reads a wire-JSON config
(what ``stream info --json`` prints under ``config``, or ``--output`` writes) that flags then
override. ``stream add`` starts from the nats CLI's defaults (unlimited limits, file storage,
direct get allowed) and, at a terminal without ``--defaults``, asks for what was not given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyjetstream.cli.errors import UsageError
from pyjetstream.cli.values import parse_duration, parse_int, parse_metadata, parse_size

if TYPE_CHECKING:
    from pyjetstream.api import StreamConfig

__all__ = [
    "add_stream_arguments",
    "check_json",
    "config_changes",
    "load_config",
    "merge_config",
    "stream_config_from_args",
]

_RETENTION = {"limits": "limits", "interest": "interest", "workq": "workqueue", "work": "workqueue"}
_RETENTION["workqueue"] = "workqueue"
_BOOL = argparse.BooleanOptionalAction


def _persist_mode(value: str | None) -> str | None:
    """``default`` is the wire's absent field (nats-server's omit-empty), ``async`` is sent as is."""
    return None if value in (None, "default") else value


def add_stream_arguments(p: argparse.ArgumentParser, *, edit: bool) -> None:
    g = p.add_argument_group("stream configuration")
    g.add_argument(
        "--subjects", action="append", metavar="SUBJECTS", help="subjects to store (comma separated)"
    )
    g.add_argument("--description", help="a description of the stream")
    g.add_argument("--storage", choices=["file", "memory"], help="storage backend (default file)")
    g.add_argument("--compression", choices=["none", "s2"], help="on-disk compression (2.10+)")
    g.add_argument("--replicas", type=int, help="number of replicas (default 1)")
    g.add_argument("--retention", choices=sorted(_RETENTION), help="retention policy (default limits)")
    g.add_argument("--discard", choices=["old", "new"], help="discard policy when full (default old)")
    g.add_argument("--discard-per-subject", action=_BOOL, help="discard new per subject (with --discard new)")
    g.add_argument("--max-msgs", metavar="N", help="maximum messages (-1 unlimited)")
    g.add_argument("--max-msgs-per-subject", metavar="N", help="maximum messages per subject (-1 unlimited)")
    g.add_argument("--max-bytes", metavar="SIZE", help="maximum bytes, e.g. 1GB (-1 unlimited)")
    g.add_argument("--max-age", metavar="DUR", help="maximum message age, e.g. 1d (0 unlimited)")
    g.add_argument("--max-msg-size", metavar="SIZE", help="maximum message size (-1 unlimited)")
    g.add_argument("--max-consumers", metavar="N", help="maximum consumers (-1 unlimited)")
    g.add_argument("--dupe-window", metavar="DUR", help="duplicate detection window (default 2m)")
    g.add_argument("--allow-rollup", action=_BOOL, help="allow Nats-Rollup headers to purge")
    g.add_argument("--deny-delete", action=_BOOL, help="deny deleting messages")
    g.add_argument("--deny-purge", action=_BOOL, help="deny purging the stream")
    g.add_argument("--allow-direct", action=_BOOL, help="allow direct get (default on)")
    g.add_argument("--allow-mirror-direct", action=_BOOL, help="let a mirror answer direct gets")
    g.add_argument("--ack", action=_BOOL, help="acknowledge publishes (default on)")
    g.add_argument("--allow-msg-ttl", action=_BOOL, help="allow per-message TTLs (2.11+)")
    g.add_argument(
        "--subject-delete-marker-ttl",
        "--subject-del-markers-ttl",
        dest="subject_delete_marker_ttl",
        metavar="DUR",
        help="keep delete markers this long (2.11+)",
    )
    g.add_argument("--allow-counter", action=_BOOL, help="a distributed counter stream (2.12+)")
    g.add_argument("--allow-batch", action=_BOOL, help="allow atomic batch publishing (2.12+)")
    g.add_argument("--allow-fast", action=_BOOL, help="allow fast batch publishing (2.14+)")
    g.add_argument("--allow-schedules", action=_BOOL, help="allow message schedules (2.12+)")
    if not edit:
        g.add_argument("--persist-mode", choices=["default", "async"], help="persistence mode (2.12+)")
    g.add_argument("--republish-source", metavar="SUBJECT", help="republish messages matching this subject")
    g.add_argument("--republish-destination", metavar="SUBJECT", help="republish to this subject")
    g.add_argument("--republish-headers", action=_BOOL, help="republish headers only")
    g.add_argument("--transform-source", metavar="SUBJECT", help="subject transform source (2.10+)")
    g.add_argument("--transform-destination", metavar="SUBJECT", help="subject transform destination (2.10+)")
    g.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="metadata (repeatable, 2.10+)")
    g.add_argument("--tag", action="append", help="placement tag (repeatable)")
    g.add_argument("--cluster", help="placement cluster")
    g.add_argument("--limit-consumer-inactive", metavar="DUR", help="default consumer inactive threshold")
    g.add_argument("--limit-consumer-max-pending", metavar="N", help="default consumer max ack pending")
    g.add_argument("--source", action="append", metavar="STREAM", help="source messages from a stream")
    if edit:
        g.add_argument("--seal", action="store_true", help="seal the stream: no more changes, ever")
    else:
        g.add_argument("--mirror", metavar="STREAM", help="mirror another stream")
        g.add_argument(
            "--first-sequence", type=int, metavar="SEQ", help="first sequence of the stream (2.10+)"
        )
    p.add_argument("--config", metavar="FILE", help="read the configuration from a JSON file")
    p.add_argument("--output", metavar="FILE", help="write the configuration to FILE instead of applying it")
    if not edit:
        p.add_argument("--defaults", action="store_true", help="accept defaults for everything not given")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


def load_config(path: str, kind: type[Any]) -> Any:
    """A wire-JSON config from ``path`` (a bare config, or an info object with a ``config`` key).

    Checked as nats-server decodes a create request (``unmarshalRequest``, strict): a key the
    configuration does not have is refused in its words (``invalid JSON: json: unknown field
    "subjectz"``), not dropped, and a number must fit its field (a 64-bit integer)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"cannot read --config {path}: {(exc.strerror or str(exc)).lower()}") from None
    except ValueError as exc:
        raise UsageError(f"--config {path} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    if not isinstance(data, dict):
        raise UsageError(f"--config {path} must hold a JSON object")
    data.pop("pedantic", None)  # a create request's flag (StreamConfigRequest), not configuration
    problem = check_json(kind, data)
    if problem:
        raise UsageError(f"--config {path}: {problem}")
    return merge_config(kind, data, {}, what=f"--config {path}")


_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (0, (1 << 64) - 1)
# The configuration fields that are uint64 in nats-server (the rest of the integers are int64).
_UNSIGNED = frozenset({"first_seq", "opt_start_seq", "rate_limit_bps"})


def check_json(kind: Any, data: Any) -> str:
    """What nats-server's strict decoder would refuse in ``data`` for the model ``kind``, or "".

    Depth first in document order, as Go's decoder meets keys: the first unknown field
    (``invalid JSON: json: unknown field "x"``), or the first integer too large for its field."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    import msgspec.inspect as mi

    return _check(mi.type_info(kind) if isinstance(kind, type) else kind, data, "")


def _check(info: Any, value: Any, path: str) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    import msgspec.inspect as mi

    if isinstance(info, mi.UnionType):
        inner = [t for t in info.types if isinstance(t, mi.StructType | mi.ListType | mi.DictType | mi.IntType)]
        return _check(inner[0], value, path) if len(inner) == 1 else ""
    problem = ""
    if isinstance(info, mi.StructType) and isinstance(value, dict):
        fields = {f.encode_name: f.type for f in info.fields}
        for key, item in value.items():
            if key not in fields:  # Go keeps its first error: an earlier one wins
                return problem or f'invalid JSON: json: unknown field "{key}"'
            problem = problem or _check(fields[key], item, f"{path}.{key}" if path else key)
    elif isinstance(info, mi.ListType) and isinstance(value, list):
        problem = next((p for p in (_check(info.item_type, v, path) for v in value) if p), "")
    elif isinstance(info, mi.DictType) and isinstance(value, dict):
        problem = next((p for p in (_check(info.value_type, v, path) for v in value.values()) if p), "")
    elif isinstance(info, mi.IntType) and isinstance(value, int) and not isinstance(value, bool):
        low, high = _UINT64 if path.rsplit(".", 1)[-1] in _UNSIGNED else _INT64
        if not low <= value <= high:
            kind = "an unsigned" if low == 0 else "a"
            problem = f"{path}: {value} does not fit {kind} 64-bit integer ({low} to {high})"
    return problem


def merge_config(kind: type[Any], base: Any, changes: dict[str, Any], *, what: str) -> Any:
    """``base`` (a model or its wire JSON) with ``changes`` applied, decoded and type-checked as ``kind``."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import decode
    from pyjetstream.cli.output import to_jsonable

    merged = dict(to_jsonable(base))
    merged.update(to_jsonable(changes))
    problem = check_json(kind, merged)  # a flag's value the server would refuse (out of range)
    if problem:
        raise UsageError(f"invalid {what}: {problem}")
    try:
        return decode(json.dumps(merged).encode(), kind)
    except Exception as exc:
        raise UsageError(f"invalid {what}: {_decode_problem(str(exc))}") from None


_TYPE_WORDS = {"int": "a whole number", "str": "a string", "float": "a number", "bool": "true or false",
               "array": "a list", "object": "an object", "null": "null"}  # fmt: skip


def _decode_problem(text: str) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$.max_bytes``` as ``max_bytes: expected a whole
    number, got a string`` (the field first, no Python type names)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    import re

    m = re.match(r"(.*?)(?: - at `\$\.?(.*)`)?$", text)
    message, path = (m.group(1), m.group(2)) if m else (text, None)
    expected = re.match(r"Expected `([\w |]+)`, got `(\w+)`", message)
    if expected:
        wanted = " or ".join(_TYPE_WORDS.get(t.strip(), t.strip()) for t in expected.group(1).split("|"))
        message = f"expected {wanted}, got {_TYPE_WORDS.get(expected.group(2), expected.group(2))}"
    elif message.startswith("Invalid enum value"):
        message = message.replace("Invalid enum value", "not a valid value:")
    return f"{path}: {message}" if path else message


def _int(value: str | None, flag: str) -> int | None:
    return parse_int(value, what=flag)


def _subjects(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [s.strip() for v in values for s in v.split(",") if s.strip()]


def _flag_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The StreamConfig fields set by flags, as wire values."""
    c: dict[str, Any] = {}
    simple = {
        "description": args.description,
        "storage": args.storage,
        "compression": args.compression,
        "num_replicas": args.replicas,
        "retention": _RETENTION[args.retention] if args.retention else None,
        "discard": args.discard,
        "discard_new_per_subject": args.discard_per_subject,
        "max_msgs": _int(args.max_msgs, "--max-msgs"),
        "max_msgs_per_subject": _int(args.max_msgs_per_subject, "--max-msgs-per-subject"),
        "max_consumers": _int(args.max_consumers, "--max-consumers"),
        "allow_rollup_hdrs": args.allow_rollup,
        "deny_delete": args.deny_delete,
        "deny_purge": args.deny_purge,
        "allow_direct": args.allow_direct,
        "mirror_direct": args.allow_mirror_direct,
        "no_ack": None if args.ack is None else not args.ack,
        "allow_msg_ttl": args.allow_msg_ttl,
        "allow_msg_counter": args.allow_counter,
        "allow_atomic": args.allow_batch,
        "allow_batched": args.allow_fast,
        "allow_msg_schedules": args.allow_schedules,
        "persist_mode": _persist_mode(getattr(args, "persist_mode", None)),
        "first_seq": getattr(args, "first_sequence", None),
        "sealed": True if getattr(args, "seal", False) else None,
        "subjects": _subjects(args.subjects),
    }
    c.update({k: v for k, v in simple.items() if v is not None})
    if args.max_bytes is not None:
        c["max_bytes"] = parse_size(args.max_bytes, what="--max-bytes")
    if args.max_msg_size is not None:
        c["max_msg_size"] = parse_size(args.max_msg_size, what="--max-msg-size")
    if args.max_age is not None:
        c["max_age"] = parse_duration(args.max_age, what="--max-age", unlimited_ok=True)
    if args.subject_delete_marker_ttl is not None:
        c["subject_delete_marker_ttl"] = parse_duration(
            args.subject_delete_marker_ttl, what="--subject-delete-marker-ttl"
        )
    if args.dupe_window is not None:
        c["duplicate_window"] = parse_duration(args.dupe_window, what="--dupe-window")
    if args.metadata:
        c["metadata"] = parse_metadata(args.metadata)
    c.update(_linked_changes(args))
    return c


def _linked_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The StreamConfig fields of structured flags: placement, republish, transform, consumer
    limits, sources and mirror."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import (
        Placement,
        RePublish,
        StreamConsumerLimits,
        StreamSource,
        SubjectTransformConfig,
    )

    c: dict[str, Any] = {}
    if args.tag or args.cluster:
        c["placement"] = Placement(cluster=args.cluster or "", tags=args.tag or None)
    if args.republish_source or args.republish_destination:
        if not args.republish_destination:
            raise UsageError("--republish-source needs --republish-destination")
        c["republish"] = RePublish(
            src=args.republish_source or ">",
            dest=args.republish_destination,
            headers_only=bool(args.republish_headers),
        )
    if args.transform_source or args.transform_destination:
        if not args.transform_destination:
            raise UsageError("--transform-source needs --transform-destination")
        c["subject_transform"] = SubjectTransformConfig(
            src=args.transform_source or ">", dest=args.transform_destination
        )
    if args.limit_consumer_inactive or args.limit_consumer_max_pending:
        c["consumer_limits"] = StreamConsumerLimits(
            inactive_threshold=parse_duration(
                args.limit_consumer_inactive or "0", what="--limit-consumer-inactive"
            ),
            max_ack_pending=_int(args.limit_consumer_max_pending, "--limit-consumer-max-pending") or 0,
        )
    if args.source:
        c["sources"] = [StreamSource(name=s) for s in args.source]
    if getattr(args, "mirror", None):
        c["mirror"] = StreamSource(name=args.mirror)
    return c


def _nats_cli_defaults(name: str) -> StreamConfig:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import StreamConfig

    return StreamConfig(
        name=name,
        max_msgs=-1,
        max_msgs_per_subject=-1,
        max_bytes=-1,
        max_msg_size=-1,
        max_consumers=-1,
        num_replicas=1,
        allow_direct=True,
    )


# (field, question, default answer, parser) for what `stream add` asks at a terminal.
_QUESTIONS: list[tuple[str, str, str, Any]] = [
    ("subjects", "Subjects", "", lambda s: _subjects([s]) or []),
    ("storage", "Storage (file, memory)", "file", lambda s: _choice(s, ("file", "memory"))),
    ("num_replicas", "Replicas", "1", lambda s: _int(s, "replicas")),
    (
        "retention",
        "Retention Policy (limits, interest, work)",
        "limits",
        lambda s: _RETENTION[_choice(s, _RETENTION)],
    ),
    ("discard", "Discard Policy (old, new)", "old", lambda s: _choice(s, ("old", "new"))),
    ("max_msgs", "Stream Messages Limit", "-1", lambda s: _int(s, "messages limit")),
    ("max_msgs_per_subject", "Per Subject Messages Limit", "-1", lambda s: _int(s, "per subject limit")),
    ("max_bytes", "Total Stream Size", "-1", lambda s: parse_size(s, what="stream size")),
    ("max_age", "Message TTL", "-1", lambda s: parse_duration(s, what="message TTL", unlimited_ok=True)),
    ("max_msg_size", "Max Message Size", "-1", lambda s: parse_size(s, what="message size")),
    ("duplicate_window", "Duplicate tracking time window", "2m", lambda s: parse_duration(s, what="window")),
    ("allow_rollup_hdrs", "Allow message Roll-ups", "n", lambda s: _yes(s)),
    ("deny_delete", "Allow message deletion", "y", lambda s: not _yes(s)),
    ("deny_purge", "Allow purging subjects or the entire stream", "y", lambda s: not _yes(s)),
]


def _choice(value: str, allowed: Any) -> str:
    value = value.strip().lower()
    if value not in allowed:
        raise UsageError(f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _yes(value: str) -> bool:
    return value.strip().lower() in ("y", "yes", "true", "1")


def stream_config_from_args(
    args: argparse.Namespace, name: str, base: StreamConfig | None = None, *, ask: bool = False
) -> StreamConfig:
    """``base`` (or ``--config``, or the nats CLI defaults) with every flag given applied.

    ``ask``: prompt for the fields no flag or file set (a terminal ``stream add``).
    """
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask as prompt

    if args.config:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.api import StreamConfig

        base = load_config(args.config, StreamConfig)
        ask = False
    elif base is None:
        base = _nats_cli_defaults(name)
    changes = _flag_changes(args)
    if name:
        changes["name"] = name
    if ask:
        for field, question, default, parse in _QUESTIONS:
            if field in changes or (field == "subjects" and getattr(args, "mirror", None)):
                continue
            answer = prompt(
                question, flag=f"--{field}", default=default or name if field == "subjects" else default
            )
            changes[field] = parse(answer)
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import StreamConfig

    return merge_config(StreamConfig, base, changes, what="stream configuration")


def config_changes(old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """``(field, old, new)`` for every field that differs (wire JSON values)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import to_jsonable

    before, after = to_jsonable(old), to_jsonable(new)
    keys = list(dict.fromkeys([*before, *after]))
    return [(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]
