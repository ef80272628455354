"""``pyjetstream account info``: the account's JetStream usage and limits, as ``nats account info``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pyjetstream.cli.app import Command, Group, Session

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, limit, print_json, print_sections

    client = await session.connect()
    info = await (await session.jetstream()).account_info()
    if session.json:
        print_json(info)
        return 0
    server = client.server_info
    lim = info.limits
    connection = [
        ("Client ID", server.get("client_id")),
        ("Client IP", server.get("client_ip")),
        ("Connected URL", client.connected_url),
        ("Connected Server", server.get("server_name") or server.get("server_id")),
        ("Server Version", server.get("version")),
    ]
    usage = [
        ("Domain", info.domain or None),
        ("Memory", f"{human_bytes(info.memory)} of {limit(lim.max_memory, human_bytes)}"),
        ("File Storage", f"{human_bytes(info.storage)} of {limit(lim.max_storage, human_bytes)}"),
        ("Streams", f"{human_count(info.streams)} of {limit(lim.max_streams)}"),
        ("Consumers", f"{human_count(info.consumers)} of {limit(lim.max_consumers)}"),
        ("API Requests", human_count(info.api.total)),
        ("API Errors", human_count(info.api.errors)),
    ]
    limits = [
        ("Max Ack Pending", limit(lim.max_ack_pending)),
        ("Max Memory Stream Size", limit(lim.memory_max_stream_bytes, human_bytes)),
        ("Max File Stream Size", limit(lim.storage_max_stream_bytes, human_bytes)),
        ("Stream Requires Max Bytes", "yes" if lim.max_bytes_required else "no"),
    ]
    print_sections(
        "Account Information",
        [("Connection", connection), ("JetStream Account Information", usage), ("Account Limits", limits)],
    )
    return 0


GROUP = Group(
    "pyjetstream account",
    "JetStream account information",
    [Command("info", "show the account's JetStream usage and limits", cmd_info)],
)
