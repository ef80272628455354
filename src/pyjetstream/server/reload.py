"""Configuration reload of a running server (SIGHUP, ``--signal reload``): nats-server's
``ReloadOptions`` / ``applyOptions`` (``server/reload.go``).

`reload_options` checks the new options (``validateOptions``), diffs them against the running ones
(`pyjetstream.server.reload_diff`: a refused change leaves everything as it was), then applies each
change in nats-server's order, logging its ``Reloaded: …`` line, and redoes what the changes need:
the log configuration, the trace level of every connection, the protocol limits of the
connections' parsers, the TLS context of new connections, the INFO line, the authorization of
every connected client (nats-server ``reloadAuthorization``: one whose user is gone or in another
account is closed, one whose credentials no longer pass gets ``Authorization Violation``, the
others take their new permissions, losing the subscriptions those forbid), JetStream turned on or
off, its server-wide limits raised, the accounts' subject mappings replaced. It ends with
nats-server's ``Reloaded server configuration``.
"""

from __future__ import annotations

import logging
import random
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.server.auth import AuthDecision, Authenticator, PendingCheck
from pyjetstream.server.client import ClosedReason
from pyjetstream.server.log import reconfigure_logging
from pyjetstream.server.reload_diff import Change, ReloadError, diff_options

if TYPE_CHECKING:
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.options import ServerOptions
    from pyjetstream.server.server import Server

__all__ = ["ReloadError", "reload_options"]

# pyjetstream's own settings, not the configuration file's: a reload keeps them.
_KEPT = ("runs", "queue_seed", "disable_short_first_ping")


async def reload_options(server: Server, new: ServerOptions) -> None:
    """Apply ``new`` to the running ``server``, or raise `ReloadError` having changed nothing."""
    old = server.options
    problems = new.problems()
    if problems:
        raise ReloadError(problems[0])
    changes = diff_options(server, old, new)
    for name in _KEPT:
        setattr(new, name, getattr(old, name))
    server.options = new
    kinds: set[str] = set()
    for change in changes:
        _apply(server, change, old, new)
        server.logger.info("%s", change.line)
        kinds |= change.kinds
    if "logging" in kinds:
        reconfigure_logging(new)
    if "trace" in kinds:
        server.trace = new.trace or new.trace_verbose
    if "tls" in kinds:
        server.ssl_context = new.tls.server_context() if new.tls is not None else None
    if "auth" in kinds:
        await _reload_authorization(server, old)
    elif "trace" in kinds:
        for conn in list(server.clients.values()):
            conn.reconfigured(None, keep=True)
    _reload_mappings(server, new)
    if "jetstream" in kinds:
        await _reload_jetstream(server, new.jetstream)
    if "js_limits" in kinds:
        for engine in server.jetstream_engines():
            engine.max_memory = max(engine.max_memory, new.max_memory_store)
            engine.max_storage = max(engine.max_storage, new.max_file_store)
    server.rebuild_info()
    server.config_load_time_ns = time.time_ns()
    digest = f"({new.config_digest})" if new.config_digest else ""
    server.logger.info("Reloaded server configuration %s", digest)


def _apply(server: Server, change: Change, old: ServerOptions, new: ServerOptions) -> None:
    """What an option does as it is applied (before its line, as nats-server's ``Apply``)."""
    if "max_connections" in change.kinds:
        clients = [c for c in server.clients.values() if not c.closed]
        random.shuffle(clients)  # nats-server closes the first of its (randomly ordered) map
        excess = clients[: max(0, len(clients) - max(0, new.max_connections))]
        for conn in excess:
            conn.max_connections_exceeded()
        if excess:
            server.logger.info("Closed %d connections to fall within max_connections", len(excess))
    if "parser" in change.kinds:
        for conn in server.clients.values():
            conn.parser.max_payload = new.max_payload
            conn.parser.max_control_line = new.max_control_line
    if "pid_file" in change.kinds and new.pid_file:
        try:
            server.write_pid_file()
        except OSError as exc:
            server.logger.error("Failed to write pidfile: %s", exc)
    if "ports_file" in change.kinds:
        server.rewrite_ports_file()


def _reload_mappings(server: Server, new: ServerOptions) -> None:
    """Every account's subject mappings as the new configuration has them (nats-server
    ``configureAccounts`` on reload: the global account's and each account's replaced); the next
    read of each connection uses them."""
    server.global_account.set_mappings(new.mappings)
    for config in new.accounts:
        account = server.accounts.get(config.name)
        if account is not None:
            account.set_mappings(config.mappings)


def _moved(auth: Authenticator, conn: ClientConnection) -> bool:
    """nats-server ``clientHasMovedToDifferentAccount``: the user or nkey a client authenticated as
    is gone, or now belongs to another account (nats-server looks only in the ``users`` and
    ``nkeys`` lists: a client of the single ``authorization { user }`` counts as gone)."""
    nkey = str(conn.connect_opts.get("nkey") or "")
    if nkey:
        account = auth.nkey_accounts.get(nkey) if nkey in auth.nkeys else None
    elif conn.user:
        user = auth.users.get(conn.user)
        account = user.account if user is not None else None
    else:
        return False
    return account is None or (account or "$G") != conn.account.name


async def _reload_authorization(server: Server, old: ServerOptions) -> None:
    """nats-server ``reloadAuthorization`` for the connected clients."""
    previous = server.authenticator
    auth = server.authenticator = Authenticator(server.options)
    auth.adopt_cache(previous)
    for conn in list(server.clients.values()):
        if conn.closed or not conn.connected or conn.authenticating:
            continue
        if conn.identity is not None:  # operator mode: the user JWT decides, as before
            conn.reconfigured(None, keep=True)
            continue
        if auth.required and _moved(auth, conn):
            conn.close(ClosedReason.CLIENT_CLOSED)
            continue
        decision: Any = auth.check(conn.connect_opts, conn.nonce, conn.peercert)
        if isinstance(decision, PendingCheck):
            decision = await server.loop.run_in_executor(None, decision.run)
        if conn.closed:
            continue
        if not decision.ok:
            conn.auth_violation(decision.user)
            continue
        _new_permissions(server, conn, decision)


def _new_permissions(server: Server, conn: ClientConnection, decision: AuthDecision) -> None:
    """nats-server ``processSubsOnConfigReload``: the new permissions, and the subscriptions they
    no longer allow removed, each told to the client and logged."""
    conn.reconfigured(server.authenticator.permissions_for(decision))
    perms = conn.perms
    if perms is None:
        return
    who = f'Nkey "{conn.connect_opts["nkey"]}"' if conn.connect_opts.get("nkey") else f'User "{conn.user or "N/A"}"'
    for sub in list(conn.subs.values()):
        if perms.can_subscribe(sub.subject, sub.queue or ""):
            continue
        conn.remove_sub(sub)
        if sub.queue:
            text = f'Permissions Violation for Subscription to "{sub.subject}" using queue "{sub.queue}" (sid "{sub.sid}")'
            server.logger.info('Removed sub "%s" using queue "%s" (sid "%s") for %s - not authorized',
                               sub.subject, sub.queue, sub.sid, who)  # fmt: skip
        else:
            text = f'Permissions Violation for Subscription to "{sub.subject}" (sid "{sub.sid}")'
            server.logger.info('Removed sub "%s" (sid "%s") for %s - not authorized', sub.subject, sub.sid, who)
        conn.enqueue(f"-ERR '{text}'\r\n".encode())
        conn.log(logging.DEBUG, f"Removed subscription {sub.sid}")


async def _reload_jetstream(server: Server, enable: bool) -> None:
    """JetStream turned on (nats-server ``restartJetStream``) or off (``DisableJetStream``)."""
    if enable:
        if not server.jetstream_enabled:
            server.logger.info("Restarting JetStream")
            await server.start_jetstream()
        return
    await server.stop_jetstream()
