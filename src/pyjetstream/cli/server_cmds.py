"""``pyjetstream server …``: the connected server and, through the system account, all of them.

``info`` shows the server's INFO (id, name, version, protocol, limits, JetStream) and one round
trip; ``ping`` measures round trips (PING/PONG) ``--count`` times, as ``nats rtt`` does; ``list``,
``request`` (`server_request`), ``report`` (`server_report`) and ``check``
(`server_check`) are natscli's.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.errors import UsageError
from pyjetstream.cli.server_check import CHECK
from pyjetstream.cli.server_report import REPORT
from pyjetstream.cli.server_request import LIST, REQUEST

__all__ = ["main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _ping_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=int, default=5, help="number of pings (default 5)")
    p.add_argument("--interval", default="100ms", metavar="DUR", help="pause between pings (default 100ms)")


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    client = await session.connect()
    rtt = await client.rtt(session.timeout)
    info = dict(client.server_info)
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json({"url": client.connected_url, "rtt_ms": round(rtt * 1000, 3), "info": info})
        return 0
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, print_sections

    server = [
        ("Name", info.get("server_name")),
        ("ID", info.get("server_id")),
        ("Version", info.get("version")),
        ("Go Version", info.get("go")),
        ("Protocol", info.get("proto")),
        ("Host", f"{info.get('host')}:{info.get('port')}"),
        ("Connected URL", client.connected_url),
        ("Round Trip", f"{rtt * 1000:.3f}ms"),
    ]
    features = [
        ("Headers", _yes(info.get("headers"))),
        ("JetStream", _yes(info.get("jetstream"))),
        ("Domain", info.get("domain")),
        ("Max Payload", human_bytes(int(info.get("max_payload", 0)))),
        ("Auth Required", _yes(info.get("auth_required"))),
        ("TLS Required", _yes(info.get("tls_required"))),
        ("Cluster", info.get("cluster")),
        ("Cluster URLs", ", ".join(info.get("connect_urls") or []) or None),
    ]
    client_info = [("Client ID", info.get("client_id")), ("Client IP", info.get("client_ip"))]
    print_sections(
        f"Server information for {info.get('server_name') or info.get('server_id')}",
        [("Server", server), ("Features", features), ("Connection", client_info)],
    )
    return 0


async def cmd_ping(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.values import parse_duration

    if args.count < 1:
        raise UsageError("--count must be at least 1")
    interval = parse_duration(args.interval, what="--interval") / 1e9
    client = await session.connect()
    name = client.server_info.get("server_name") or client.server_info.get("server_id", "?")
    rtts: list[float] = []
    for i in range(args.count):
        start = time.perf_counter()
        await client.flush(session.timeout)
        rtts.append((time.perf_counter() - start) * 1000)
        if not session.json:
            print(f"{name:<20} rtt={rtts[-1]:.3f}ms", flush=True)
        if i + 1 < args.count and interval:
            await asyncio.sleep(interval)
    summary: dict[str, Any] = {
        "server_name": name,
        "url": client.connected_url,
        "count": len(rtts),
        "rtt_ms": [round(r, 3) for r in rtts],
        "min_ms": round(min(rtts), 3),
        "avg_ms": round(sum(rtts) / len(rtts), 3),
        "max_ms": round(max(rtts), 3),
    }
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json(summary)
    else:
        print(
            f"\n--- {name} ping statistics ---\n{len(rtts)} pings, "
            f"min/avg/max = {summary['min_ms']:.3f}/{summary['avg_ms']:.3f}/{summary['max_ms']:.3f} ms"
        )
    return 0


def _yes(value: Any) -> str:
    return "yes" if value else "no"


GROUP = Group(
    "pyjetstream server",
    "server information, round-trip times, reports, health checks and monitoring requests",
    [
        Command("info", "show the connected server's information", cmd_info),
        Command("ping", "measure round trips to the server", cmd_ping, _ping_arguments, aliases=("rtt",)),
        LIST,
        REPORT,
        CHECK,
        REQUEST,
    ],
)
