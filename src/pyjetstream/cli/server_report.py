"""``server report jetstream|connections|accounts``: natscli's ``server report`` (``server_report_command.go``).

``jetstream`` asks every server for its JetStream statistics (``JSZ``) and shows one row per
server with totals (and the meta group when clustered); ``connections`` asks for every connection
(``CONNZ``) and shows the top ones by ``--sort``, with the connections per server; ``accounts``
sums those connections per account. ``jetstream`` needs a user of the system account;
``connections`` and ``accounts`` also work for any account on nats-server, which answers ``CONNZ``
for the asking account's own connections (`server_sys`).
"""

from __future__ import annotations

import argparse
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.server_sys import add_filter_arguments, filter_options, sys_request

__all__ = ["REPORT"]


def _common(p: argparse.ArgumentParser, *, account_first: bool = False) -> None:
    if account_first:  # natscli: report accounts [ACCOUNT] [LIMIT]
        p.add_argument("account", nargs="?", help="the connections of this account")
    p.add_argument("expect", nargs="?", type=int, default=0, help="how many servers to expect (answers sooner)")
    p.add_argument("-R", "--reverse", action="store_true", help="reverse the sort")
    add_filter_arguments(p)


# --------------------------------------------------------------------------- jetstream


def _jsz_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--account", help="the report for this account")
    p.add_argument(
        "--sort",
        default="cluster",
        choices=["name", "cluster", "streams", "consumers", "msgs", "mbytes", "bytes", "mem", "file", "store", "api"],
        help="sort the servers by this (default cluster)",
    )


def _jsz_key(sort: str) -> Any:
    data = {
        "name": lambda a: a["server"].get("name", ""),
        "streams": lambda a: (a["data"].get("streams", 0), a["server"].get("name", "")),
        "consumers": lambda a: (a["data"].get("consumers", 0), a["server"].get("name", "")),
        "msgs": lambda a: a["data"].get("messages", 0),
        "mbytes": lambda a: a["data"].get("bytes", 0),
        "bytes": lambda a: a["data"].get("bytes", 0),
        "mem": lambda a: a["data"].get("memory", 0),
        "file": lambda a: a["data"].get("storage", 0),
        "store": lambda a: a["data"].get("storage", 0),
        "api": lambda a: (a["data"].get("api") or {}).get("total", 0),
    }
    return data.get(sort, lambda a: (a["server"].get("cluster", ""), a["server"].get("name", "")))


async def cmd_jetstream(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, print_json, print_table

    body: dict[str, Any] = {"raft": True}
    if args.account:
        body.update(account=args.account, streams=True, consumer=True, limit=10000)
    answers = await sys_request(session, "$SYS.REQ.SERVER.PING.JSZ", {**body, **filter_options(args, session)},
                                expect=args.expect)  # fmt: skip
    answers.sort(key=_jsz_key(args.sort), reverse=args.reverse)
    if session.json:
        print_json(list(answers))
        return 0
    domain = any((a["data"].get("config") or {}).get("domain") for a in answers)
    rows, tot = [], {"streams": 0, "consumers": 0, "msgs": 0, "bytes": 0, "mem": 0, "store": 0, "api": 0, "pending": 0}
    for a in answers:
        d = a["data"]
        stats = d
        streams, consumers, msgs, size = d.get("streams", 0), d.get("consumers", 0), d.get("messages", 0), d.get("bytes", 0)
        details = d.get("account_details") or []
        if args.account and len(details) == 1:
            stats = details[0]
            streams = len(stats.get("stream_detail") or ())
            consumers = sum((s.get("state") or {}).get("consumer_count", 0) for s in stats.get("stream_detail") or ())
            msgs = sum((s.get("state") or {}).get("messages", 0) for s in stats.get("stream_detail") or ())
            size = stats.get("memory", 0) + stats.get("storage", 0)
        meta = d.get("meta_cluster") or {}
        pending = meta.get("pending", 0)
        api = (stats.get("api") or {}).get("total", 0)
        for k, v in (("streams", streams), ("consumers", consumers), ("msgs", msgs), ("bytes", size),
                     ("mem", stats.get("memory", 0)), ("store", stats.get("storage", 0)), ("api", api),
                     ("pending", pending)):  # fmt: skip
            tot[k] += v
        leader = "*" if meta.get("leader") and meta.get("leader") == a["server"].get("name") else ""
        row: list[Any] = [a["server"].get("name", "") + leader, a["server"].get("cluster", "")]
        if domain:
            row.append((d.get("config") or {}).get("domain", ""))
        row += [human_count(streams), human_count(consumers), human_count(msgs), human_bytes(size),
                human_bytes(stats.get("memory", 0)), human_bytes(stats.get("storage", 0)), human_count(api), pending]  # fmt: skip
        rows.append(row)
    footer: list[Any] = ["", ""] + ([""] if domain else [])
    footer += [human_count(tot["streams"]), human_count(tot["consumers"]), human_count(tot["msgs"]),
               human_bytes(tot["bytes"]), human_bytes(tot["mem"]), human_bytes(tot["store"]),
               human_count(tot["api"]), tot["pending"]]  # fmt: skip
    columns = ["Server", "Cluster"] + (["Domain"] if domain else [])
    columns += ["Streams", "Consumers", "Messages", "Bytes", "Memory", "File", "API Req", "Pending"]
    title = f"JetStream Summary for Account {args.account}" if args.account else "JetStream Summary"
    print_table(title, columns, rows, justify=["left"] * (len(columns) - 8) + ["right"] * 8, footer=footer)
    _meta_groups(answers)
    return 0


def _meta_groups(answers: list[Any]) -> None:
    """natscli: the meta group of a cluster, as its leader sees it (nothing on a single server)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_duration, print_table

    for a in answers:
        meta = a["data"].get("meta_cluster") or {}
        if not meta.get("leader") or meta.get("leader") != a["server"].get("name") or not meta.get("replicas"):
            continue
        peers = [{"name": meta["leader"], "peer": meta.get("peer", ""), "current": True, "active": 0, "lag": 0}]
        peers += meta.get("replicas") or []
        rows = [
            (p.get("name", ""), p.get("peer", ""), "yes" if p.get("name") == meta["leader"] else "",
             str(bool(p.get("current"))).lower(), "false" if p.get("offline") else "true",
             human_duration(p.get("active", 0)), p.get("lag", 0))
            for p in sorted(peers, key=lambda p: p.get("name", ""))
        ]  # fmt: skip
        print()
        print_table(f"RAFT Meta Group Information - Lead cluster: {meta.get('name', '')}",
                    ("Connection Name", "ID", "Leader", "Current", "Online", "Active", "Lag"), rows)  # fmt: skip


# --------------------------------------------------------------------------- connections / accounts


def _conns_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--account", help="only this account's connections")
    p.add_argument(
        "--sort",
        default="subs",
        choices=["in-bytes", "out-bytes", "in-msgs", "out-msgs", "uptime", "cid", "subs"],
        help="sort by this (default subs)",
    )
    p.add_argument("--top", type=int, default=1000, help="show at most this many (default 1000)")
    p.add_argument("--subject", help="only connections interested in this subject")
    p.add_argument("--username", help="only this user's connections")
    p.add_argument("--state", default="open", choices=["open", "closed", "all"], help="default open")


async def _connections(session: Session, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every connection the servers report, each with ``server`` (who reported it), paged as natscli."""
    body = {
        "subscriptions": True, "auth": True, "user": getattr(args, "username", None) or "",
        "acc": getattr(args, "account", None) or "", "filter_subject": getattr(args, "subject", None) or "",
        "state": {"open": 0, "closed": 1, "all": 2}[getattr(args, "state", "open")], "limit": 1024, "offset": 0,
        **filter_options(args, session),
    }  # fmt: skip
    conns: list[dict[str, Any]] = []
    while True:
        answers = await sys_request(session, "$SYS.REQ.SERVER.PING.CONNZ", body, expect=args.expect)
        more = False
        for a in answers:
            data = a.get("data") or {}
            conns += [{**c, "server": a.get("server") or {}} for c in data.get("connections") or ()]
            more = more or data.get("offset", 0) + data.get("limit", 0) < data.get("total", 0)
        if not more:
            return conns
        body["offset"] += body["limit"]


_CONN_KEYS = {
    "in-bytes": lambda c: c.get("in_bytes", 0), "out-bytes": lambda c: c.get("out_bytes", 0),
    "in-msgs": lambda c: c.get("in_msgs", 0), "out-msgs": lambda c: c.get("out_msgs", 0),
    "uptime": lambda c: c.get("start", ""), "cid": lambda c: c.get("cid", 0),
    "subs": lambda c: len(c.get("subscriptions_list") or ()) or c.get("subscriptions", 0),
}  # fmt: skip


async def cmd_connections(session: Session, args: argparse.Namespace) -> int:
    conns = await _connections(session, args)
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json(conns)
        return 0
    _render_connections(conns, args)
    return 0


def _render_connections(conns: list[dict[str, Any]], args: argparse.Namespace) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, print_table

    conns.sort(key=_CONN_KEYS[args.sort], reverse=not args.reverse)  # natscli: the biggest first
    shown = conns[: args.top] if args.top > 0 else conns
    rows: list[Any] = []
    for c in shown:
        kind = c.get("kind", "Client")
        cid = str(c.get("cid", "")) if kind == "Client" else f"{kind[:1]}{c.get('cid', '')}"
        name = (c.get("name") or c.get("mqtt_client") or "")[:40]
        rows.append((cid, name, c["server"].get("name", ""), c["server"].get("cluster", ""),
                     f"{c.get('ip', '')}:{c.get('port', '')}", c.get("account", ""), c.get("uptime", ""),
                     human_count(c.get("in_msgs", 0)), human_count(c.get("out_msgs", 0)),
                     human_bytes(c.get("in_bytes", 0)), human_bytes(c.get("out_bytes", 0)),
                     human_count(_CONN_KEYS["subs"](c))))  # fmt: skip
    footer = None
    if len(conns) > 1:
        footer = ("", f"Totals for {len(conns):,} connections", "", "", "", "", "",
                  human_count(sum(c.get("in_msgs", 0) for c in conns)),
                  human_count(sum(c.get("out_msgs", 0) for c in conns)),
                  human_bytes(sum(c.get("in_bytes", 0) for c in conns)),
                  human_bytes(sum(c.get("out_bytes", 0) for c in conns)),
                  human_count(sum(_CONN_KEYS["subs"](c) for c in conns)))  # fmt: skip
    columns = ("CID", "Name", "Server", "Cluster", "IP", "Account", "Uptime", "In Msgs", "Out Msgs", "In Bytes",
               "Out Bytes", "Subs")  # fmt: skip
    print_table(f"Top {len(shown)} Connections out of {len(conns):,} by {args.sort}", columns, rows,
                justify=["left"] * 7 + ["right"] * 5, footer=footer)  # fmt: skip
    per_server: dict[str, list[Any]] = {}
    for c in conns:
        entry = per_server.setdefault(c["server"].get("name", ""), [c["server"].get("cluster", ""), 0])
        entry[1] += 1
    if per_server:
        print()
        rows = [(n, cl, count) for n, (cl, count) in sorted(per_server.items(), key=lambda kv: kv[1][1])]
        print_table("Connections per server", ("Server", "Cluster", "Connections"), rows)


def _accounts_arguments(p: argparse.ArgumentParser) -> None:
    _common(p, account_first=True)
    p.add_argument(
        "--sort",
        default="subs",
        choices=["in-bytes", "out-bytes", "in-msgs", "out-msgs", "conns", "subs"],
        help="sort by this (default subs)",
    )
    p.add_argument("--top", type=int, default=1000, help="show at most this many (default 1000)")


async def cmd_accounts(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.errors import CliError
    from pyjetstream.cli.output import human_bytes, human_count, print_json, print_table

    conns = await _connections(session, args)
    accounts: dict[str, dict[str, Any]] = {}
    for c in conns:
        acc = accounts.setdefault(c.get("account", ""), {"account": c.get("account", ""), "connections": 0,
                                  "in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0, "subscriptions": 0,
                                  "connection_info": []})  # fmt: skip
        acc["connections"] += 1
        for k in ("in_msgs", "out_msgs", "in_bytes", "out_bytes"):
            acc[k] += c.get(k, 0)
        acc["subscriptions"] += _CONN_KEYS["subs"](c)
        acc["connection_info"].append(c)
    if args.account:
        if args.account not in accounts:
            raise CliError(f"did not receive any results for account {args.account}")
        if session.json:
            print_json(accounts[args.account])
        else:
            args.sort, args.top = "subs" if args.sort == "conns" else args.sort, args.top
            _render_connections(accounts[args.account]["connection_info"], args)
        return 0
    key = {"in-bytes": "in_bytes", "out-bytes": "out_bytes", "in-msgs": "in_msgs", "out-msgs": "out_msgs",
           "conns": "connections", "subs": "subscriptions"}[args.sort]  # fmt: skip
    listed = sorted(accounts.values(), key=lambda a: a[key], reverse=not args.reverse)[: args.top]
    if session.json:
        print_json(listed)
        return 0
    rows = [(a["account"], human_count(a["connections"]), human_count(a["in_msgs"]), human_count(a["out_msgs"]),
             human_bytes(a["in_bytes"]), human_bytes(a["out_bytes"]), human_count(a["subscriptions"]))
            for a in listed]  # fmt: skip
    print_table(f"{len(listed)} Accounts Overview",
                ("Account", "Connections", "In Msgs", "Out Msgs", "In Bytes", "Out Bytes", "Subs"), rows,
                justify=["left"] + ["right"] * 6)  # fmt: skip
    return 0


REPORT = Group(
    "pyjetstream server report",
    "report on the servers: JetStream, connections, accounts",
    [
        Command("jetstream", "JetStream activity per server (system account)", cmd_jetstream, _jsz_arguments,
                aliases=("jsz", "js")),
        Command("connections", "the connections, top ones first", cmd_connections, _conns_arguments,
                aliases=("conn", "connz", "conns")),
        Command("accounts", "activity per account", cmd_accounts, _accounts_arguments, aliases=("acct",)),
    ],
    aliases=("rep",),
)
