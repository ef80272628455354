"""What ``kv`` and ``obj`` share: the bucket flags of ``add`` and reading values to store.

Flags follow ``nats kv add`` / ``nats object add``: ``--description``, ``--ttl``,
``--max-bucket-size``, ``--storage``, ``--replicas``, ``--compress``, ``--metadata``,
``--tag``/``--cluster`` (placement).
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any

from pyjetstream.cli.errors import UsageError
from pyjetstream.cli.values import parse_duration, parse_metadata, parse_size

__all__ = ["add_bucket_arguments", "bucket_settings", "read_value"]


def add_bucket_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    g = p.add_argument_group("bucket configuration")
    g.add_argument("--description", default="", help="a description of the bucket")
    g.add_argument("--ttl", metavar="DUR", help="how long values are kept (default forever)")
    g.add_argument("--max-bucket-size", metavar="SIZE", help="maximum size of the bucket (default unlimited)")
    g.add_argument(
        "--storage", choices=["file", "memory"], default="file", help="storage backend (default file)"
    )
    g.add_argument("--replicas", type=int, default=1, help="number of replicas (default 1)")
    g.add_argument("--compress", action="store_true", help="compress the stored data (2.10+)")
    g.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="metadata (repeatable, 2.10+)")
    g.add_argument("--tag", action="append", help="placement tag (repeatable)")
    g.add_argument("--cluster", help="placement cluster")


def bucket_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments common to ``KeyValueConfig`` and ``ObjectStoreConfig``."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import Placement, StorageType

    if args.replicas < 1:
        raise UsageError("--replicas must be at least 1")
    max_bytes = parse_size(args.max_bucket_size, what="--max-bucket-size") if args.max_bucket_size else 0
    return {
        "bucket": args.bucket,
        "description": args.description,
        "ttl": parse_duration(args.ttl, what="--ttl", unlimited_ok=True) / 1e9 if args.ttl else 0.0,
        "max_bytes": -1 if max_bytes < 0 else max_bytes,
        "storage": StorageType(args.storage),
        "replicas": args.replicas,
        "compression": args.compress,
        "metadata": parse_metadata(args.metadata),
        "placement": Placement(cluster=args.cluster or "", tags=args.tag or None)
        if args.tag or args.cluster
        else None,
    }


def read_value(value: str | None, *, what: str = "value") -> bytes:
    """The value argument, or stdin when it is omitted and stdin is not a terminal."""
    if value is not None:
        return value.encode()
    if sys.stdin.isatty():
        raise UsageError(f"a {what} is required (as an argument, or on stdin)")
    return sys.stdin.buffer.read()


def value_fields(value: bytes, key: str = "value") -> dict[str, str]:
    try:
        return {key: value.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{key}_base64": base64.b64encode(value).decode()}
