"""The dashboard's KV and object-store views, read from their streams (``KV_<bucket>``,
``OBJ_<bucket>``) with the same paged index queries as the stream pages: a key is a subject of the
bucket's stream and its value that subject's last message, so a page of keys is a page of
`MessageStore.subjects_page` plus one read per key (ADR-8 and ADR-20 lay the buckets out).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pyjetstream.api.headers import KV_OPERATION
from pyjetstream.api.kv import kv_bucket_from_stream, kv_stream_name
from pyjetstream.api.objstore import (
    decode_object_name,
    obj_bucket_from_stream,
    obj_meta_subject,
    obj_stream_name,
)
from pyjetstream.protocol.headers import get_header
from pyjetstream.protocol.subjects import is_valid_subject
from pyjetstream.server.dashboard.views import (
    MAX_LIMIT,
    ViewError,
    encode_msg,
    pick_account,
    query_int,
    stream_of,
)
from pyjetstream.server.jetstream.store.base import ErrStoreMsgNotFound

if TYPE_CHECKING:
    from pyjetstream.server.server import Server

__all__ = ["kv_buckets", "kv_history", "kv_keys", "kv_watch", "obj_buckets", "obj_download", "obj_list"]

_OP = KV_OPERATION.encode()


def _buckets(server: Server, query: dict[str, str], bucket_of: Any) -> list[tuple[str, Any]]:
    engine = pick_account(server, query).jetstream
    if engine is None or not hasattr(engine, "streams"):
        return []
    found = ((bucket_of(name), stream) for name, stream in engine.streams.items())
    return sorted((b, s) for b, s in found if b is not None)


def kv_buckets(server: Server, query: dict[str, str]) -> dict[str, Any]:
    rows = []
    for bucket, stream in _buckets(server, query, kv_bucket_from_stream):
        st, cfg = stream.store.fast_state(), stream.cfg
        rows.append({"bucket": bucket, "keys": st.num_subjects, "values": st.msgs, "bytes": st.bytes,
                     "history": cfg.max_msgs_per_subject, "ttl": cfg.max_age, "storage": str(cfg.storage.value)})  # fmt: skip
    return {"buckets": rows}


def _kv_stream(server: Server, query: dict[str, str]) -> tuple[str, Any]:
    bucket = query.get("bucket", "")
    return bucket, stream_of(pick_account(server, query), kv_stream_name(bucket))


def _op(hdr: bytes) -> str:
    value = get_header(hdr, _OP) if hdr else None
    return value.decode("latin-1") if value else "PUT"


def _entry(prefix: str, msg: tuple[str, int, int, bytes, bytes]) -> dict[str, Any]:
    row = encode_msg(*msg)
    row["key"] = msg[0][len(prefix) :]
    row["op"] = _op(msg[3])
    return row


def kv_keys(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of a bucket's keys (``filter``: a key pattern such as ``orders.*``), each with its
    latest entry (revision, operation, value)."""
    bucket, stream = _kv_stream(server, query)
    prefix = f"$KV.{bucket}."
    key_filter = query.get("filter", "")
    filt = prefix + key_filter if key_filter else ">"  # (the stream holds only the bucket's subjects)
    if not is_valid_subject(filt):
        raise ViewError(400, "filter: not a valid key pattern")
    store = stream.store
    page = store.subjects_page(
        filt, query_int(query, "after", 0), query_int(query, "limit", 50, 1, MAX_LIMIT)
    )
    seqs = [st.last for _, _, st in page]
    msgs = {m[1]: m for m in store.load_msgs(seqs)} if seqs else {}
    rows = []
    for _, subject, st in page:
        msg = msgs.get(st.last)
        if msg is not None:
            row = _entry(prefix, msg)
            row["history"] = st.msgs
            rows.append(row)
        else:
            rows.append({"key": subject[len(prefix) :], "seq": st.last, "op": "?", "history": st.msgs})
    return {"keys": rows, "next": page[-1][0] if page else 0, "total": store.fast_state().num_subjects}


def kv_history(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """Every entry the bucket keeps of one key, oldest first (at most its history, 64)."""
    bucket, stream = _kv_stream(server, query)
    prefix = f"$KV.{bucket}."
    subject = prefix + query.get("key", "")
    if not is_valid_subject(subject) or "*" in subject or ">" in subject:
        raise ViewError(400, "key: not a valid key")
    page = stream.store.subjects_page(subject, 0, 1)
    if not page:
        return {"key": query.get("key", ""), "entries": []}
    first = page[0][2].first
    msgs = stream.store.load_next_msgs(subject, first, MAX_LIMIT, 8 * 1024 * 1024)
    return {"key": query.get("key", ""), "entries": [_entry(prefix, m) for m in msgs]}


def kv_watch(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """The bucket's entries after revision ``after`` (a live watch polls this)."""
    bucket, stream = _kv_stream(server, query)
    prefix = f"$KV.{bucket}."
    after = query_int(query, "after", 0)
    msgs = stream.store.load_next_msgs(">", after + 1, 100, 4 * 1024 * 1024)
    return {"entries": [_entry(prefix, m) for m in msgs], "last_seq": stream.store.fast_state().last_seq}


# --------------------------------------------------------------------------- object stores


def obj_buckets(server: Server, query: dict[str, str]) -> dict[str, Any]:
    rows = []
    for bucket, stream in _buckets(server, query, obj_bucket_from_stream):
        st = stream.store.fast_state()
        rows.append(
            {
                "bucket": bucket,
                "bytes": st.bytes,
                "messages": st.msgs,
                "storage": str(stream.cfg.storage.value),
            }
        )
    return {"buckets": rows}


def _meta(data: bytes) -> dict[str, Any]:
    try:
        meta = json.loads(data)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def obj_list(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """A page of a bucket's objects (their meta messages): name, size, chunks, time, digest."""
    bucket = query.get("bucket", "")
    stream = stream_of(pick_account(server, query), obj_stream_name(bucket))
    store = stream.store
    page = store.subjects_page(f"$O.{bucket}.M.>", query_int(query, "after", 0),
                               query_int(query, "limit", 50, 1, MAX_LIMIT))  # fmt: skip
    msgs = {m[1]: m for m in store.load_msgs([st.last for _, _, st in page])} if page else {}
    rows = []
    for _, subject, st in page:
        msg = msgs.get(st.last)
        meta = _meta(msg[4]) if msg is not None else {}
        try:
            name = decode_object_name(subject.rsplit(".", 1)[1])
        except ValueError:
            name = str(meta.get("name", ""))
        rows.append({"name": name, "size": meta.get("size", 0), "chunks": meta.get("chunks", 0),
                     "mtime": meta.get("mtime", ""), "digest": meta.get("digest", ""),
                     "deleted": bool(meta.get("deleted")), "description": meta.get("description", "")})  # fmt: skip
    return {"objects": rows, "next": page[-1][0] if page else 0}


def obj_download(server: Server, query: dict[str, str]) -> tuple[str, bytes]:
    """An object's name and bytes: its meta message's ``nuid`` names its chunks' subject."""
    bucket, name = query.get("bucket", ""), query.get("name", "")
    stream = stream_of(pick_account(server, query), obj_stream_name(bucket))
    try:
        meta = _meta(stream.store.load_last_msg(obj_meta_subject(bucket, name)).data)
    except ErrStoreMsgNotFound:
        raise ViewError(404, "no such object") from None
    nuid = meta.get("nuid")
    if not isinstance(nuid, str) or meta.get("deleted") or not nuid:
        raise ViewError(404, "no such object")
    subject = f"$O.{bucket}.C.{nuid}"
    chunks: list[bytes] = []
    seq = 1
    while True:
        msgs = stream.store.load_next_msgs(subject, seq, 256, 16 * 1024 * 1024)
        if not msgs:
            break
        chunks.extend(m[4] for m in msgs)
        seq = msgs[-1][1] + 1
    return name, b"".join(chunks)
