"""Consumer configuration from the command line: the nats CLI's ``consumer add``/``edit`` flags.

The consumer is durable (named by the argument) unless ``--ephemeral``; pull unless ``--target``
names a push delivery subject. ``--deliver`` takes ``all``, ``last``, ``new``, ``subject`` (last
per subject), a stream sequence or a duration ago / RFC3339 time. Defaults are the nats CLI's
(explicit acks, deliver all, instant replay); server defaults fill the rest.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pyjetstream.cli.errors import UsageError
from pyjetstream.cli.stream_config import load_config, merge_config
from pyjetstream.cli.values import parse_duration, parse_int, parse_metadata, parse_size, parse_start

if TYPE_CHECKING:
    from pyjetstream.api import ConsumerConfig

__all__ = ["add_consumer_arguments", "consumer_config_from_args"]

_BOOL = argparse.BooleanOptionalAction


def add_consumer_arguments(p: argparse.ArgumentParser, *, edit: bool) -> None:
    g = p.add_argument_group("consumer configuration")
    g.add_argument(
        "--filter", action="append", metavar="SUBJECT", help="only deliver these subjects (repeatable)"
    )
    g.add_argument("--description", help="a description of the consumer")
    g.add_argument(
        "--ack",
        choices=["none", "all", "explicit", "flow_control"],
        help="acknowledgement policy (default explicit; flow_control: push, 2.14+)",
    )
    g.add_argument("--wait", metavar="DUR", help="how long to wait for an ack before redelivering (ack wait)")
    g.add_argument("--max-deliver", metavar="N", help="maximum deliveries of a message (-1 unlimited)")
    g.add_argument("--max-pending", metavar="N", help="maximum unacknowledged messages (max ack pending)")
    g.add_argument("--backoff", metavar="DURS", help="redelivery delays, e.g. 1s,5s,30s")
    g.add_argument("--sample", metavar="PERCENT", help="sample this percentage of acks into advisories")
    g.add_argument("--headers-only", action=_BOOL, help="deliver headers and size only, not bodies")
    g.add_argument("--inactive-threshold", metavar="DUR", help="remove the consumer after this long idle")
    g.add_argument("--max-waiting", metavar="N", help="pull: maximum waiting pull requests")
    g.add_argument("--max-pull-batch", metavar="N", help="pull: largest batch a request may ask for")
    g.add_argument("--max-pull-expire", metavar="DUR", help="pull: longest expiry a request may ask for")
    g.add_argument("--max-pull-bytes", metavar="SIZE", help="pull: largest max_bytes a request may ask for")
    g.add_argument("--rate-limit", metavar="BPS", help="push: delivery rate limit in bits per second")
    g.add_argument("--heartbeat", metavar="DUR", help="push: idle heartbeat interval")
    g.add_argument("--flow-control", action=_BOOL, help="push: enable flow control")
    g.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="metadata (repeatable, 2.10+)")
    g.add_argument("--pause-until", metavar="TIME", help="pause delivery until this RFC3339 time (2.11+)")
    g.add_argument(
        "--pause", metavar="UNTIL", help="pause for a duration (1h) or until a time (2030-01-02 15:04) (2.11+)"
    )
    g.add_argument(
        "--priority-groups", metavar="GROUPS", help="pull priority groups, comma separated (2.11+)"
    )
    g.add_argument(
        "--priority-policy",
        choices=["none", "overflow", "pinned_client", "prioritized"],
        help="priority policy (2.11+; prioritized 2.12+)",
    )
    g.add_argument("--pinned-groups", metavar="GROUPS", help="a pinned client consumer on these groups (2.11+)")
    g.add_argument("--overflow-groups", metavar="GROUPS", help="an overflow consumer on these groups (2.11+)")
    g.add_argument(
        "--prioritized-groups", metavar="GROUPS", help="a prioritized consumer on these groups (2.12+)"
    )
    g.add_argument("--pinned-ttl", metavar="DUR", help="how long a pinned client stays pinned (2.11+)")
    if not edit:
        g.add_argument(
            "--deliver", metavar="POLICY", help="all, last, new, subject, a sequence, a duration ago"
        )
        g.add_argument("--replay", choices=["instant", "original"], help="replay policy (default instant)")
        g.add_argument("--target", metavar="SUBJECT", help="push: deliver to this subject (default: pull)")
        g.add_argument("--deliver-group", metavar="GROUP", help="push: queue group of the subscribers")
        g.add_argument("--pull", action="store_true", help="a pull consumer (the default)")
        g.add_argument("--ephemeral", action="store_true", help="an ephemeral consumer (no durable name)")
        g.add_argument("--replicas", type=int, help="number of replicas")
        g.add_argument("--memory", action="store_true", help="keep the consumer state in memory")
    p.add_argument("--config", metavar="FILE", help="read the configuration from a JSON file")
    p.add_argument("--output", metavar="FILE", help="write the configuration to FILE instead of applying it")
    if not edit:
        p.add_argument("--defaults", action="store_true", help="accept defaults for everything not given")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


def _int(value: str | None, flag: str) -> int | None:
    return parse_int(value, what=flag)


def _dur(value: str | None, flag: str) -> int | None:
    return None if value is None else parse_duration(value, what=flag)


def _time(value: str | None, flag: str) -> str | None:
    """An RFC3339 time, checked here so a typo is a usage error rather than a server one."""
    if value is None:
        return None
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import parse_time

    try:
        parse_time(value)
    except ValueError:
        raise UsageError(
            f"invalid {flag} {value!r}: use an RFC3339 time such as 2030-01-02T15:04:05Z"
        ) from None
    return value


def _sample(value: str) -> str:
    number = value.strip().rstrip("%")
    if not number.isdigit() or not 0 <= int(number) <= 100:
        raise UsageError(f"invalid --sample {value!r}: use a percentage from 0 to 100")
    return f"{int(number)}%"


def _deliver(value: str) -> dict[str, Any]:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import format_time

    policy, seq, start = parse_start(value, what="--deliver")
    out: dict[str, Any] = {"deliver_policy": policy}
    if seq is not None:
        out["opt_start_seq"] = seq
    if start is not None:
        out["opt_start_time"] = format_time(start)
    return out


def _flag_changes(args: argparse.Namespace) -> dict[str, Any]:
    c: dict[str, Any] = {}
    filters = [s.strip() for f in args.filter or () for s in f.split(",") if s.strip()]
    if len(filters) == 1:
        c["filter_subject"], c["filter_subjects"] = filters[0], []
    elif filters:
        c["filter_subjects"], c["filter_subject"] = filters, ""
    simple = {
        "description": args.description,
        "ack_policy": args.ack,
        "ack_wait": _dur(args.wait, "--wait"),
        "max_deliver": _int(args.max_deliver, "--max-deliver"),
        "max_ack_pending": _int(args.max_pending, "--max-pending"),
        "sample_freq": _sample(args.sample) if args.sample is not None else None,
        "headers_only": args.headers_only,
        "inactive_threshold": _dur(args.inactive_threshold, "--inactive-threshold"),
        "max_waiting": _int(args.max_waiting, "--max-waiting"),
        "max_batch": _int(args.max_pull_batch, "--max-pull-batch"),
        "max_expires": _dur(args.max_pull_expire, "--max-pull-expire"),
        "max_bytes": parse_size(args.max_pull_bytes, what="--max-pull-bytes")
        if args.max_pull_bytes
        else None,
        "rate_limit_bps": _int(args.rate_limit, "--rate-limit"),
        "idle_heartbeat": _dur(args.heartbeat, "--heartbeat"),
        "flow_control": args.flow_control,
        "metadata": parse_metadata(args.metadata) if args.metadata else None,
        "backoff": [parse_duration(d, what="--backoff") for d in args.backoff.split(",")]
        if args.backoff
        else None,
        "pause_until": _time(args.pause_until, "--pause-until") or _pause(args.pause),
        "priority_groups": _groups(args.priority_groups),
        "priority_policy": args.priority_policy,
        "priority_timeout": _dur(args.pinned_ttl, "--pinned-ttl"),
    }
    if hasattr(args, "replay"):
        simple.update(
            replay_policy=args.replay,
            deliver_subject=args.target,
            deliver_group=args.deliver_group,
            num_replicas=args.replicas,
            mem_storage=True if args.memory else None,
        )
        if args.deliver:
            c.update(_deliver(args.deliver))
        if args.pull and args.target:
            raise UsageError("--pull and --target exclude each other")
    c.update({k: v for k, v in simple.items() if v is not None})
    c.update(_priority_shortcuts(args))
    return c


def _groups(value: str | None) -> list[str] | None:
    return [g.strip() for g in value.split(",") if g.strip()] if value else None


def _pause(value: str | None) -> str | None:
    if value is None:
        return None
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import format_time
    from pyjetstream.cli.values import parse_until

    return format_time(int(parse_until(value, what="--pause").timestamp() * 1e9))


def _priority_shortcuts(args: argparse.Namespace) -> dict[str, Any]:
    """The nats CLI's ``--pinned-groups`` / ``--overflow-groups`` / ``--prioritized-groups``: the groups
    and their policy in one flag."""
    chosen = [
        (policy, groups)
        for policy, groups in (
            ("pinned_client", _groups(args.pinned_groups)),
            ("overflow", _groups(args.overflow_groups)),
            ("prioritized", _groups(args.prioritized_groups)),
        )
        if groups
    ]
    if not chosen:
        return {}
    if len(chosen) > 1 or args.priority_groups or args.priority_policy:
        raise UsageError("give one of --pinned-groups, --overflow-groups, --prioritized-groups, --priority-groups")
    policy, groups = chosen[0]
    return {"priority_policy": policy, "priority_groups": groups}


# (field, question, default answer, parser) for what `consumer add` asks at a terminal.
def _questions() -> list[tuple[str, str, str, Any]]:
    return [
        ("deliver_subject", "Delivery target (empty for Pull Consumers)", "", lambda s: s.strip()),
        ("deliver_policy", "Start policy (all, new, last, subject, 1h, msg sequence)", "all", _deliver),
        ("ack_policy", "Acknowledgment policy (explicit, all, none)", "explicit", _ack),
        ("replay_policy", "Replay policy (instant, original)", "instant", _replay),
        ("filter_subject", "Filter Stream by subjects (blank for all)", "", lambda s: s.strip()),
        ("max_deliver", "Maximum Allowed Deliveries", "-1", lambda s: _int(s, "deliveries")),
        ("max_ack_pending", "Maximum Acknowledgments Pending", "0", lambda s: _int(s, "acks pending")),
    ]


def _ack(value: str) -> str:
    value = value.strip().lower()
    if value not in ("explicit", "all", "none"):
        raise UsageError(f"{value!r} is not one of explicit, all, none")
    return value


def _replay(value: str) -> str:
    value = value.strip().lower()
    if value not in ("instant", "original"):
        raise UsageError(f"{value!r} is not one of instant, original")
    return value


def consumer_config_from_args(
    args: argparse.Namespace, name: str, base: ConsumerConfig | None = None, *, ask: bool = False
) -> ConsumerConfig:
    """``base`` (or ``--config``, or the nats CLI defaults) with the flags given applied."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import ConsumerConfig
    from pyjetstream.cli.prompts import ask as prompt

    if args.config:
        base = load_config(args.config, ConsumerConfig)
        ask = False
    elif base is None:
        base = ConsumerConfig(
            ack_policy="explicit",  # type: ignore[arg-type]
            deliver_policy="all",  # type: ignore[arg-type]
            replay_policy="instant",  # type: ignore[arg-type]
            max_deliver=-1,
        )
    changes = _flag_changes(args)
    if name and base.name != name and base.durable_name != name:
        changes["name"] = name
        if not getattr(args, "ephemeral", False):
            changes["durable_name"] = name
    if ask:
        for field, question, default, parse in _questions():
            if field in changes or (field == "filter_subject" and "filter_subjects" in changes):
                continue
            value = parse(prompt(question, flag=f"--{field}", default=default, required=False))
            if isinstance(value, dict):
                changes.update(value)
            elif value not in ("", None):
                changes[field] = value
    return merge_config(ConsumerConfig, base, changes, what="consumer configuration")
