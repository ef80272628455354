"""Monitoring of accounts: ``/accountz`` (the names, or one account's detail) and ``/accstatz``
(each account's connections, subscriptions and traffic), as nats-server 2.15.1 answers them on
one node (``server/monitor.go``: ``Accountz``, ``accountInfo``, ``AccountStatz``; ``events.go``:
``Account.statz``).

An account's traffic is its client connections': ``received`` what they published, ``sent`` what
was delivered to them, the connections gone included (kept in `Account.closed_totals`) — what
nats-server counts too (its deliveries to the server's own receivers, the JetStream API and the
streams, are not in an account's ``sent``). The system imports nats-server adds to every account
(`pyjetstream.server.sys_imports`) are listed with the configured ones.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api.timefmt import format_time
from pyjetstream.server.monitor_topology import go_bool

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = ["account_detail", "account_stat", "accountz", "accstatz"]


def _now() -> str:
    return format_time(time.time_ns())


def account_stat(server: Server, account: Account) -> dict[str, Any]:
    """nats-server ``Account.statz`` (``AccountStat``): one account's numbers."""
    in_msgs, in_bytes, out_msgs, out_bytes = account.closed_totals
    conns = account.clients  # (its connected clients, kept as they come and go: no walk of them all)
    for conn in conns:
        in_msgs += conn.in_msgs
        in_bytes += conn.in_bytes
        out_msgs += conn.out_msgs
        out_bytes += conn.out_bytes

    def data(msgs: int, size: int) -> dict[str, Any]:
        zero = {"msgs": 0, "bytes": 0}
        return {"msgs": msgs, "bytes": size, "gateways": dict(zero), "routes": dict(zero), "leafs": dict(zero)}

    return {
        "acc": account.name,
        "name": account.name,  # the JWT's name tag, else the account name
        "conns": len(conns),
        "leafnodes": 0,
        "total_conns": len(conns),
        "num_subscriptions": account.sublist.count,
        "sent": data(out_msgs, out_bytes),
        "received": data(in_msgs, in_bytes),
        "slow_consumers": account.slow_consumers,
    }


def account_stats(server: Server, names: list[str], unused: bool) -> list[dict[str, Any]]:
    """nats-server ``AccountStatz``: the accounts named (all when none), those without connections
    only with ``unused``."""
    if names:
        accounts = [server.accounts[n] for n in names if n in server.accounts]
    else:
        accounts = list(server.accounts.values())
    return [account_stat(server, a) for a in accounts if unused or a.clients]


def accstatz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``/accstatz``: every account with connections, every account with ``unused`` (the HTTP
    endpoint has no account filter: nats-server's ``HandleAccountStatz`` passes none)."""
    unused = go_bool(query, "unused")
    return {"server_id": server.server_id, "now": _now(), "account_statz": account_stats(server, [], unused)}


def account_detail(server: Server, account: Account) -> dict[str, Any]:
    """nats-server ``accountInfo``: one account's ``account_detail``."""
    detail: dict[str, Any] = {"account_name": account.name, "update_time": format_time(account.updated_ns)}
    if account is server.system_account:
        detail["is_system"] = True
    detail.update(
        {
            "expired": False,
            "complete": True,
            "jetstream_enabled": account.jetstream_enabled,
            "leafnode_connections": 0,
            "client_connections": len(account.clients),
            "subscriptions": account.sublist.count,
        }
    )
    if account.mapped:
        detail["mappings"] = account.mappings.monitor_info()
    exports = [e.monitor_info() for e in account.exports]
    imports = [i.monitor_info() for i in account.imports]
    system_imports = getattr(server, "system_imports", None)
    if system_imports is not None:
        exports += system_imports.export_infos(account)
        imports += system_imports.import_infos(account)
    if exports:
        detail["exports"] = exports
    if imports:
        detail["imports"] = imports
    detail["name_tag"] = account.name
    detail["sublist_stats"] = account.sublist.stats()
    responses = account.responses.monitor_info() if account.responses is not None else {}
    if system_imports is not None and account is server.system_account:
        responses.update(system_imports.responses.monitor_info())
    if responses:
        detail["responses"] = responses
    return detail


def accountz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``/accountz``: the account names, or one account's detail with ``?acc=``."""
    # Deferred: monitor imports this module for its handlers.
    from pyjetstream.server.monitor import MonitorError

    out: dict[str, Any] = {"server_id": server.server_id, "now": _now()}
    system = server.system_account
    if system is not None:
        out["system_account"] = system.name
    name = query.get("acc", "")
    if not name:
        out["accounts"] = list(server.accounts)
        return out
    account = server.accounts.get(name)
    if account is None:
        raise MonitorError(400, f"Account {name} does not exist")
    out["account_detail"] = account_detail(server, account)
    return out
