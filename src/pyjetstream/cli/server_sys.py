"""The system requests behind ``server list``, ``server report`` and ``server request``: natscli's
``serverdata`` (``DoReqAsync``) on the ``$SYS.REQ.SERVER.PING.<KIND>`` subjects.

A request goes to every server at once (``PING``) and gathers their answers until ``--expect``
came, or, without it, until none came for 300 ms after the last (the first may take up to
``--timeout``), as natscli's adaptive wait. Each answer is nats-server's
``{"server": {...}, "data": {...}}`` (``statsz`` for a plain ``PING``); an ``error`` in it is
reported. These subjects are the system account's: another account gets no answer (nats-server
imports only ``CONNZ`` into every account, scoped to it), which is reported as one clear line
naming the server, as natscli says it: ensure the account used has system privileges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.cli.errors import CliError

if TYPE_CHECKING:
    from pyjetstream.cli.app import Session

__all__ = ["Answer", "add_filter_arguments", "filter_options", "sys_request"]

ADAPTIVE_GAP = 0.3  # natscli: after each answer, wait this long for more


class Answer(dict[str, Any]):
    """One server's answer (its JSON object) and how long after the request it came (``rtt``)."""

    rtt: float = 0.0


def add_filter_arguments(p: argparse.ArgumentParser) -> None:
    """natscli's server selection: ``--name``, ``--host``, ``--cluster``, ``--tags`` (exact)."""
    g = p.add_argument_group("servers to ask")
    g.add_argument("--name", metavar="NAME", help="only the server with this name")
    g.add_argument("--host", metavar="HOST", help="only servers on this host")
    g.add_argument("--cluster", metavar="CLUSTER", help="only servers in this cluster")
    g.add_argument("--tags", action="append", metavar="TAG", help="only servers with these tags (repeatable)")


def filter_options(args: argparse.Namespace, session: Session) -> dict[str, Any]:
    """nats-server's ``EventFilterOptions`` from the selection flags (exact matching, as natscli)."""
    body: dict[str, Any] = {}
    for key, dest in (("server_name", "name"), ("host", "host"), ("cluster", "cluster")):
        if getattr(args, dest, None):
            body[key] = getattr(args, dest)
    tags = [t for v in getattr(args, "tags", None) or () for t in v.split(",") if t]
    if tags:
        body["tags"] = tags
    if body:
        body["exact_match"] = True
    if session.settings.get("js_domain"):
        body["domain"] = session.settings["js_domain"]
    return body


async def sys_request(
    session: Session, subject: str, body: dict[str, Any] | None = None, *, expect: int = 0
) -> list[Answer]:
    """Send ``body`` to ``subject`` and gather the servers' JSON answers (see the module)."""
    client = await session.connect()
    inbox = client.new_inbox()
    answers: list[Answer] = []
    refused = False
    more = asyncio.Event()
    start = time.perf_counter()

    def on_reply(msg: Any) -> None:
        nonlocal refused
        if msg.status == 503 or (msg.status and not msg.data):
            refused = True
        else:
            try:
                answer = Answer(json.loads(msg.data))
            except ValueError:
                return
            answer.rtt = time.perf_counter() - start
            answers.append(answer)
        more.set()

    sub = await client.subscribe(inbox, cb=on_reply)
    try:
        await client.publish(subject, json.dumps(body or {}).encode(), reply=inbox)
        await _gather(answers, more, lambda: refused, session.timeout, expect)
    finally:
        await sub.unsubscribe()
    if not answers and not refused and any(k in (body or {}) for k in ("server_name", "host", "cluster", "tags")):
        chosen = ", ".join(f"{k} {(body or {})[k]}" for k in ("server_name", "host", "cluster", "tags") if k in (body or {}))
        raise CliError(f"no server answered {subject}: none has {chosen}")
    if refused or not answers:
        raise CliError(
            f"{client.connected_url} answered no {subject} request: ensure the account used has "
            "system privileges and appropriate permissions (a user of the system account)"
        )
    for answer in answers:
        error = answer.get("error")
        if error:
            name = (answer.get("server") or {}).get("name", "a server")
            raise CliError(f"{name} answered {subject} with an error: {error.get('description', error)}")
    return answers


async def _gather(answers: list[Answer], more: asyncio.Event, refused: Any, timeout: float, expect: int) -> None:
    deadline = time.monotonic() + timeout
    while not refused() and not (expect and len(answers) >= expect):
        # The first answer may take the whole timeout; later ones get ADAPTIVE_GAP each (no --expect).
        wait = deadline - time.monotonic()
        if answers and not expect:
            wait = min(wait, ADAPTIVE_GAP)
        if wait <= 0:
            return
        more.clear()
        try:
            await asyncio.wait_for(more.wait(), wait)
        except TimeoutError:
            return
