"""``server list`` and ``server request <kind>``: natscli's ``server list`` and ``server request``
(``server_list_command.go``, ``server_request_command.go``).

``list`` asks every server for its statistics (``$SYS.REQ.SERVER.PING``) and shows them in a
table, one row per server, with totals. ``request`` sends one monitoring request
(``$SYS.REQ.SERVER.PING.VARZ``, ``CONNZ``, ``JSZ`` …, nats-server's ``*EventOptions`` as the body)
and prints each server's answer as one JSON line, as natscli does. natscli's ``profile`` (Go pprof
files) is not offered. All of them need a user of the system account (`server_sys`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.errors import UsageError
from pyjetstream.cli.server_sys import add_filter_arguments, filter_options, sys_request

__all__ = ["LIST", "REQUEST"]

Body = Callable[[argparse.Namespace], dict[str, Any]]


# --------------------------------------------------------------------------- server list


def _list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("expect", nargs="?", type=int, default=0, help="how many servers to expect (answers sooner)")
    p.add_argument(
        "--sort",
        default="rtt",
        choices=["name", "cluster", "conns", "subs", "routes", "gws", "mem", "cpu", "slow", "uptime", "rtt"],
        help="sort the servers by this (default rtt)",
    )
    p.add_argument("-R", "--reverse", action="store_true", help="reverse the sort")


def _uptime(server: dict[str, Any], stats: dict[str, Any]) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import parse_time
    from pyjetstream.cli.output import human_duration

    try:
        return human_duration(parse_time(server["time"]) - parse_time(stats["start"]))
    except (KeyError, ValueError):
        return ""


async def cmd_list(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, print_json, print_table

    answers = await sys_request(session, "$SYS.REQ.SERVER.PING", {}, expect=args.expect)
    if session.json:
        print_json(list(answers))
        return 0
    key: dict[str, Callable[[Any], Any]] = {
        "name": lambda a: a["server"].get("name", ""),
        "cluster": lambda a: (a["server"].get("cluster", ""), a["server"].get("name", "")),
        "conns": lambda a: a["statsz"].get("connections", 0),
        "subs": lambda a: a["statsz"].get("subscriptions", 0),
        "routes": lambda a: len(a["statsz"].get("routes") or ()),
        "gws": lambda a: len(a["statsz"].get("gateways") or ()),
        "mem": lambda a: a["statsz"].get("mem", 0),
        "cpu": lambda a: a["statsz"].get("cpu", 0),
        "slow": lambda a: a["statsz"].get("slow_consumers", 0),
        "uptime": lambda a: a["statsz"].get("start", ""),
        "rtt": lambda a: a.rtt,
    }
    answers.sort(key=key[args.sort], reverse=args.reverse)
    rows: list[tuple[Any, ...]] = []
    totals = {"conns": 0, "subs": 0, "mem": 0, "slow": 0, "js": 0}
    clusters = set()
    for a in answers:
        server, stats = a["server"], a["statsz"]
        js = (server.get("domain") or "yes") if server.get("jetstream") else "no"
        totals["conns"] += stats.get("connections", 0)
        totals["subs"] += stats.get("subscriptions", 0)
        totals["mem"] += stats.get("mem", 0)
        totals["slow"] += stats.get("slow_consumers", 0)
        totals["js"] += 1 if server.get("jetstream") else 0
        if server.get("cluster"):
            clusters.add(server["cluster"])
        rows.append(
            (
                server.get("name", ""),
                server.get("cluster", ""),
                server.get("host", ""),
                server.get("ver", ""),
                js,
                human_count(stats.get("connections", 0)),
                human_count(stats.get("subscriptions", 0)),
                len(stats.get("routes") or ()),
                len(stats.get("gateways") or ()),
                human_bytes(stats.get("mem", 0)),
                f"{stats.get('cpu', 0):.0f}",
                stats.get("cores", ""),
                human_count(stats.get("slow_consumers", 0)),
                _uptime(server, stats),
                f"{a.rtt * 1000:.0f}ms",
            )
        )
    footer = ("", len(clusters), len(answers), "", totals["js"], human_count(totals["conns"]),
              human_count(totals["subs"]), "", "", human_bytes(totals["mem"]), "", "", human_count(totals["slow"]), "",
              "")  # fmt: skip
    columns = ("Name", "Cluster", "Host", "Version", "JS", "Conns", "Subs", "Routes", "GWs", "Mem", "CPU %",
               "Cores", "Slow", "Uptime", "RTT")  # fmt: skip
    justify = ["left"] * 5 + ["right"] * 10
    print_table("Server Overview", columns, rows, justify=justify, footer=footer)
    return 0


LIST = Command("list", "list the servers, with their statistics (system account)", cmd_list, _list_arguments,
               aliases=("ls",))  # fmt: skip


# --------------------------------------------------------------------------- server request


def _request_arguments(extra: Callable[[argparse.ArgumentParser], None] | None = None) -> Any:
    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("expect", nargs="?", type=int, default=0, help="how many answers to wait for")
        p.add_argument("--limit", type=int, default=2048, help="at most this many records (default 2048)")
        p.add_argument("--offset", type=int, default=0, help="start at this record (default 0)")
        add_filter_arguments(p)
        if extra is not None:
            extra(p)

    return configure


def _connz(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sort",
        default="cid",
        choices=["cid", "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to", "bytes_from", "last",
                 "idle", "uptime", "stop", "reason", "rtt"],
        help="sort by this (default cid)",
    )
    p.add_argument("--subscriptions", action="store_true", help="show subscriptions")
    p.add_argument("--filter-cid", type=int, metavar="CID", help="only this connection")
    p.add_argument("--filter-state", default="open", choices=["open", "closed", "all"], help="default open")
    p.add_argument("--filter-user", metavar="USER", help="only this user's connections")
    p.add_argument("--filter-account", metavar="ACCOUNT", help="only this account's connections")
    p.add_argument("--filter-subject", metavar="SUBJECT", help="only connections interested in this subject")
    p.add_argument("--filter-empty", action="store_true", help="only answers that have connections")


def _connz_body(a: argparse.Namespace) -> dict[str, Any]:
    return {
        "sort": a.sort, "auth": True, "subscriptions": a.subscriptions, "offset": a.offset, "limit": a.limit,
        "cid": a.filter_cid or 0, "state": {"open": 0, "closed": 1, "all": 2}[a.filter_state],
        "user": a.filter_user or "", "acc": a.filter_account or "", "filter_subject": a.filter_subject or "",
    }  # fmt: skip


def _jsz(p: argparse.ArgumentParser) -> None:
    p.add_argument("--account", help="statistics of this account")
    p.add_argument("--accounts", action="store_true", help="include the accounts")
    p.add_argument("--streams", action="store_true", help="include the streams")
    p.add_argument("--consumer", action="store_true", help="include the consumers")
    p.add_argument("--config", action="store_true", help="include the configurations")
    p.add_argument("--raft", action="store_true", help="include the raft groups")
    p.add_argument("--leader", action="store_true", help="an answer from the meta leader only")
    p.add_argument("--stream-leader", action="store_true", help="answers from stream leaders only")
    p.add_argument("--all", action="store_true", help="accounts, streams, consumers and configurations")


def _jsz_body(a: argparse.Namespace) -> dict[str, Any]:
    body = {
        "account": a.account or "", "accounts": a.accounts or a.all, "streams": a.streams or a.all,
        "consumer": a.consumer or a.all, "config": a.config or a.all, "raft": a.raft, "leader_only": a.leader,
        "stream_leader_only": a.stream_leader, "offset": a.offset, "limit": a.limit,
    }  # fmt: skip
    return {k: v for k, v in body.items() if v}  # nats-server's omitempty


def _subsz(p: argparse.ArgumentParser) -> None:
    p.add_argument("--detail", action="store_true", help="include every subscription")
    p.add_argument("--filter-account", metavar="ACCOUNT", help="only this account")
    p.add_argument("--filter-subject", metavar="SUBJECT", help="only subscriptions matching this subject")


def _healthz(p: argparse.ArgumentParser) -> None:
    p.add_argument("-J", "--js-enabled", action="store_true", help="JetStream must be enabled on every server")
    p.add_argument("-S", "--server-only", action="store_true", help="the JetStream server only, not its assets")
    p.add_argument("--account", help="check only this account")
    p.add_argument("--stream", help="check only this stream")
    p.add_argument("--consumer", help="check only this consumer")
    p.add_argument("--details", action=argparse.BooleanOptionalAction, default=True, help="details of failures")


def _healthz_body(a: argparse.Namespace) -> dict[str, Any]:
    body = {"js-enabled": a.js_enabled, "js-server-only": a.server_only, "account": a.account or "",
            "stream": a.stream or "", "consumer": a.consumer or "", "details": a.details}  # fmt: skip
    return {k: v for k, v in body.items() if v}


def _account(p: argparse.ArgumentParser) -> None:
    p.add_argument("--account", help="this account only")


def _detail(flag: str) -> Callable[[argparse.ArgumentParser], None]:
    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument(flag, dest="detail", action="store_true", help="include the subscriptions")

    return configure


def _gatewayz(p: argparse.ArgumentParser) -> None:
    p.add_argument("--filter-name", metavar="NAME", help="only this gateway")
    p.add_argument("--filter-account", metavar="ACCOUNT", help="only this account in the account detail")
    p.add_argument("--accounts", action="store_true", help="show the account detail")


def _ipq(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action=argparse.BooleanOptionalAction, default=True, help="every queue (default)")
    p.add_argument("--filter", help="only queues with this in their name")


def _raftz(p: argparse.ArgumentParser) -> None:
    p.add_argument("--account", help="only this account's groups")
    p.add_argument("--group", help="only this group")


# (name, aliases, $SYS.REQ.SERVER.PING.<kind>, help, configure, body)
_REQUESTS: list[tuple[str, tuple[str, ...], str, str, Any, Body]] = [
    ("accounts", ("accountz", "acct"), "ACCOUNTZ", "account details", _account,
     lambda a: {"account": a.account or ""}),
    ("connections", ("conn", "connz"), "CONNZ", "connection details", _connz, _connz_body),
    ("gateways", ("gateway", "gwy", "gatewayz"), "GATEWAYZ", "gateway details", _gatewayz,
     lambda a: {"name": a.filter_name or "", "accounts": a.accounts, "account_name": a.filter_account or "",
                "subscriptions": True}),
    ("ipqueue", ("ipq", "ipqueuesz"), "IPQUEUESZ", "internal queue details", _ipq,
     lambda a: {"all": a.all, "filter": a.filter or ""}),
    ("jetstream-health", ("healthz",), "HEALTHZ", "JetStream health", _healthz, _healthz_body),
    ("jetstream", ("jsz", "js"), "JSZ", "JetStream details", _jsz, _jsz_body),
    ("leafnodes", ("leaf", "leafz"), "LEAFZ", "leaf node details", _detail("--subscriptions"),
     lambda a: {"subscriptions": a.detail}),
    ("raft", ("raftz",), "RAFTZ", "raft group details", _raftz,
     lambda a: {"account": a.account or "", "group": a.group or ""}),
    ("routes", ("route", "routez"), "ROUTEZ", "route details", _detail("--subscriptions"),
     lambda a: {"subscriptions": a.detail}),
    ("subscriptions", ("sub", "subsz"), "SUBSZ", "subscription information", _subsz,
     lambda a: {"subscriptions": a.detail, "account": a.filter_account or "", "test": a.filter_subject or "",
                "offset": a.offset, "limit": a.limit}),
    ("variables", ("var", "varz"), "VARZ", "runtime variables", None, lambda a: {}),
]  # fmt: skip


def _request_handler(kind: str, body: Body) -> Any:
    async def handler(session: Session, args: argparse.Namespace) -> int:
        payload = {**body(args), **filter_options(args, session)}
        answers = await sys_request(session, f"$SYS.REQ.SERVER.PING.{kind}", payload, expect=args.expect)
        if getattr(args, "filter_empty", False):
            answers = [a for a in answers if (a.get("data") or {}).get("connections")]
        for answer in answers:
            print(json.dumps(answer, separators=(",", ":"), ensure_ascii=False))
        return 0

    return handler


def _kick_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("client", type=int, metavar="ID", help="the client id (cid) to disconnect")
    p.add_argument("server_id", metavar="SERVER_ID", help="the id of the server it is connected to")


async def cmd_kick(session: Session, args: argparse.Namespace) -> int:
    if args.client < 1:
        raise UsageError(f"invalid client id {args.client}")
    answers = await sys_request(session, f"$SYS.REQ.SERVER.{args.server_id}.KICK", {"cid": args.client}, expect=1)
    for answer in answers:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    return 0


REQUEST = Group(
    "pyjetstream server request",
    "request monitoring data from the servers ($SYS.REQ.SERVER.PING.*; system account)",
    [
        *(
            Command(name, f"request {text}", _request_handler(kind, body), _request_arguments(extra), aliases=aliases)
            for name, aliases, kind, text, extra, body in _REQUESTS
        ),
        Command("kick", "disconnect a client now", cmd_kick, _kick_arguments),
    ],
    aliases=("req",),
)
