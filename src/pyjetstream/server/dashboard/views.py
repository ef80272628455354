"""The dashboard's read-only JSON views: what each page shows, read from the server's own state.

Every list is a page with a cursor (``after``: a name, a subject id or a sequence) and a bounded
``limit``, read through the store's index queries (`MessageStore.subjects_page`,
``load_next_msgs``, ``load_prev_msg``, ``get_seq_from_time``) so a page costs its own size, not
the stream's: a stream of millions of messages or subjects, a bucket of 100k keys page in
milliseconds. nats-server has no dashboard; the shapes here are the dashboard's own (the models
inside them — stream and consumer info — are the ``$JS.API`` ones, encoded by the shared codec).
"""

from __future__ import annotations

import base64
import time
from bisect import bisect_right
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyjetstream.api.codec import to_builtins
from pyjetstream.api.timefmt import format_time, parse_time
from pyjetstream.protocol.headers import HeaderError, parse_headers
from pyjetstream.protocol.subjects import is_valid_subject
from pyjetstream.server.jetstream.store.base import ErrStoreMsgNotFound

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = [
    "ViewError",
    "connections",
    "consumers",
    "encode_msg",
    "message_page",
    "overview",
    "pick_account",
    "query_int",
    "stream_detail",
    "stream_of",
    "streams",
    "subjects",
]

#: The most a page holds, whatever ``limit`` asks.
MAX_LIMIT = 200
#: The payload bytes a message row carries (its ``size`` says how long it is).
PAYLOAD_PREVIEW = 32 * 1024


class ViewError(Exception):
    """A request the dashboard cannot answer: ``status`` (400, 403, 404) and a text."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


def query_int(query: dict[str, str], key: str, default: int, low: int = 0, high: int | None = None) -> int:
    text = query.get(key, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ViewError(400, f"{key}: not a number") from None
    value = max(low, value)
    return min(high, value) if high is not None else value


def _limit(query: dict[str, str], default: int = 50) -> int:
    return query_int(query, "limit", default, 1, MAX_LIMIT)


def pick_account(server: Server, query: dict[str, str]) -> Account:
    """The account a page shows (one at a time): ``account``, else ``$G`` when it has JetStream,
    else the first account that has it, else ``$G``."""
    name = query.get("account", "")
    if name:
        account = server.accounts.get(name)
        if account is None:
            raise ViewError(404, f"no account {name!r}")
        return account
    accounts = server.accounts
    glob = accounts.get("$G")
    if glob is not None and glob.jetstream is not None:
        return glob
    for account in accounts.values():
        if account.jetstream is not None and account is not server.system_account:
            return account
    if glob is None:
        raise ViewError(404, "no account")
    return glob


def _engine(account: Account) -> Any:
    engine = account.jetstream
    if engine is None or not hasattr(engine, "streams"):
        raise ViewError(404, f"JetStream is not enabled for account {account.name!r}")
    return engine


def stream_of(account: Account, name: str) -> Any:
    stream = _engine(account).streams.get(name)
    if stream is None:
        raise ViewError(404, f"no stream {name!r}")
    return stream


# ----------------------------------------------------------------------------- overview


async def overview(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """The server (``/varz``'s fields), its accounts, the chosen account's JetStream usage and limits."""
    varz = server.monitor_handlers["/varz"]({})
    keep = ("server_id", "server_name", "version", "host", "port", "http_port", "start", "uptime", "mem", "cpu",
            "connections", "total_connections", "subscriptions", "slow_consumers", "in_msgs", "out_msgs",
            "in_bytes", "out_bytes", "max_payload", "max_connections")  # fmt: skip
    account = pick_account(server, query)
    conns: dict[str, int] = {}
    for conn in server.clients.values():
        conns[conn.account.name] = conns.get(conn.account.name, 0) + 1
    accounts = [
        {
            "name": a.name,
            "connections": conns.get(a.name, 0),
            "jetstream": a.jetstream is not None and hasattr(a.jetstream, "streams"),
        }
        for a in server.accounts.values()
    ]
    out: dict[str, Any] = {"server": {k: varz[k] for k in keep if k in varz}, "accounts": accounts,
                           "account": account.name, "now": format_time(time.time_ns())}  # fmt: skip
    engine = account.jetstream
    if engine is not None and hasattr(engine, "streams"):
        memory, storage = engine.usage()
        out["jetstream"] = {
            "memory": memory,
            "storage": storage,
            "streams": len(engine.streams),
            "consumers": engine.num_consumers(),
            "limits": _limits(engine.limits),
            "server": {"max_memory": engine.max_memory, "max_storage": engine.max_storage},
            "api": {"total": engine.api_total, "errors": engine.api_errors},
        }
    return out


def _limits(limits: Any) -> dict[str, int]:
    """The account's JetStream limits (-1: unlimited), under the names of ``$JS.API.INFO``."""
    names = {"max_memory": "max_memory", "max_storage": "max_store", "max_streams": "max_streams",
             "max_consumers": "max_consumers"}  # fmt: skip
    return {wire: int(getattr(limits, attr, -1)) for wire, attr in names.items()}


def rates_tick(server: Server) -> dict[str, Any]:
    """What the overview's live chart differences: the server's message and byte totals, now."""
    in_msgs, in_bytes, out_msgs, out_bytes = server.message_totals()
    return {"t": time.time(), "in_msgs": in_msgs, "out_msgs": out_msgs, "in_bytes": in_bytes,
            "out_bytes": out_bytes, "connections": len(server.clients)}  # fmt: skip


# ------------------------------------------------------------------------------ streams


def _kind(name: str) -> str:
    if name.startswith("KV_"):
        return "kv"
    if name.startswith("OBJ_"):
        return "obj"
    return "stream"


def _stream_row(stream: Any) -> dict[str, Any]:
    st = stream.store.fast_state()
    cfg = stream.cfg
    return {
        "name": stream.name,
        "kind": _kind(stream.name),
        "subjects": list(cfg.subjects or []),
        "storage": str(cfg.storage.value if hasattr(cfg.storage, "value") else cfg.storage),
        "messages": st.msgs,
        "bytes": st.bytes,
        "first_seq": st.first_seq,
        "last_seq": st.last_seq,
        "consumers": stream.csl.public,
        "mirror": cfg.mirror.name if cfg.mirror is not None else "",
        "sources": [s.name for s in (cfg.sources or [])],
    }


def streams(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of the account's streams in name order (``after``: the last name of the page before;
    ``kind``: stream, kv or obj)."""
    engine = _engine(pick_account(server, query))
    after, kind, limit = query.get("after", ""), query.get("kind", ""), _limit(query, 100)
    names = sorted(n for n in engine.streams if n > after and (not kind or _kind(n) == kind))
    rows = [_stream_row(engine.streams[n]) for n in names[:limit]]
    return {
        "streams": rows,
        "total": len(engine.streams),
        "next": names[limit - 1] if len(names) > limit else "",
    }


def stream_detail(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A stream's info (config, state, mirror and sources with their lag) as ``STREAM.INFO`` has it."""
    stream = stream_of(pick_account(server, query), query.get("stream", ""))
    info: dict[str, Any] = to_builtins(stream.info())
    info.pop("ts", None)  # (the time of asking: a live view sends only what changed)
    info["kind"] = _kind(stream.name)
    return info


def subjects(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of a stream's subjects with their counts (``filter``; ``after``: the cursor)."""
    stream = stream_of(pick_account(server, query), query.get("stream", ""))
    filt = query.get("filter", "") or ">"
    if not is_valid_subject(filt):
        raise ViewError(400, "filter: not a valid subject")
    page = stream.store.subjects_page(filt, query_int(query, "after", 0), _limit(query, 100))
    rows = [{"subject": name, "msgs": st.msgs, "first": st.first, "last": st.last} for _, name, st in page]
    return {
        "subjects": rows,
        "next": page[-1][0] if page else 0,
        "num_subjects": stream.store.fast_state().num_subjects,
    }


# ----------------------------------------------------------------------------- messages


def encode_msg(subject: str, seq: int, ts: int, hdr: bytes, data: bytes) -> dict[str, Any]:
    """One message for the page: headers parsed (a block that does not parse shown raw), the
    payload base64 (the first `PAYLOAD_PREVIEW` bytes; ``size`` is the whole)."""
    headers: list[list[str]] = []
    status = ""
    if hdr:
        try:
            block = parse_headers(hdr)
            headers = [[k, v] for k, vals in block.headers.items() for v in vals]
            status = f"{block.status} {block.description}".strip() if block.status else ""
        except HeaderError:
            headers = [["(raw)", hdr.decode("utf-8", "replace")]]
    return {
        "seq": seq,
        "subject": subject,
        "time": format_time(ts),
        "headers": headers,
        "status": status,
        "size": len(data),
        "data": base64.b64encode(data[:PAYLOAD_PREVIEW]).decode(),
    }


def message_page(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of a stream's messages from ``seq`` (or the first at or after ``time``, RFC 3339 or
    Unix seconds) forwards, or with ``dir=prev`` backwards from ``seq`` (default: the last), matching
    ``filter``. ``next``/``prev``: the sequences the pages after and before start at."""
    stream = stream_of(pick_account(server, query), query.get("stream", ""))
    store = stream.store
    filt = query.get("filter", "") or ">"
    if not is_valid_subject(filt):
        raise ViewError(400, "filter: not a valid subject")
    limit = _limit(query)
    st = store.fast_state()
    if query.get("time"):
        start = store.get_seq_from_time(_parse_time(query["time"]))
    else:
        start = query_int(query, "seq", 0)
    if query.get("dir") == "prev":
        seq = start or st.last_seq
        rows: list[tuple[str, int, int, bytes, bytes]] = []
        while seq >= max(1, st.first_seq) and len(rows) < limit:
            try:
                msg = store.load_prev_msg(seq, filt)
            except ErrStoreMsgNotFound:
                break
            rows.append(tuple(msg))
            seq = msg.seq - 1
        rows.reverse()
    else:
        rows = store.load_next_msgs(filt, max(start, st.first_seq, 1), limit, 8 * 1024 * 1024)
    msgs = [encode_msg(*r) for r in rows]
    return {
        "messages": msgs,
        "first_seq": st.first_seq,
        "last_seq": st.last_seq,
        "messages_total": st.msgs,
        "next": msgs[-1]["seq"] + 1 if msgs else start,
        "prev": msgs[0]["seq"] - 1 if msgs else start,
    }


def _parse_time(text: str) -> int:
    """RFC 3339 (``2026-11-28T13:00:00Z``) or Unix seconds, as nanoseconds."""
    try:
        return int(float(text) * 1_000_000_000)
    except ValueError:
        pass
    try:
        return parse_time(text)  # (exact to the nanosecond, as the page shows a message's time)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ViewError(400, "time: not RFC 3339 or Unix seconds") from None
    return int(moment.timestamp() * 1_000_000_000)


async def connections(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of the account's connections with their subscriptions: ``/connz`` itself
    (``acc``, ``subs=detail``, ``offset``, ``limit``)."""
    account = pick_account(server, query)
    connz = {"acc": account.name, "subs": "detail", "offset": str(query_int(query, "offset", 0)),
             "limit": str(_limit(query, 100))}  # fmt: skip
    result: dict[str, Any] = server.monitor_handlers["/connz"](connz)
    return result


# ---------------------------------------------------------------------------- consumers


def consumers(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of a stream's consumers in name order, each its ``CONSUMER.INFO`` (delivered, ack
    floor, pending, redelivered, waiting, paused, pinned priority groups)."""
    stream = stream_of(pick_account(server, query), query.get("stream", ""))
    after, limit = query.get("after", ""), _limit(query, 100)
    public = stream.csl.public_names()
    names = public[bisect_right(public, after) :]
    rows = [to_builtins(stream.consumers[n].info()) for n in names[:limit]]
    return {"consumers": rows, "next": names[limit - 1] if len(names) > limit else ""}
