"""KV and object-store layouts (pure; the live checks are in test_live_nats_server.py)."""

from __future__ import annotations

import hashlib

import pytest

from pyjetstream.api import StorageType, StreamSource, codec, kv, objstore
from pyjetstream.api.enums import DiscardPolicy, StoreCompression
from pyjetstream.api.models_common import ExternalStream
from pyjetstream.api.timefmt import ZERO_TIME


def test_kv_subjects_and_names() -> None:
    assert kv.kv_stream_name("b") == "KV_b"
    assert kv.kv_bucket_from_stream("KV_b") == "b"
    assert kv.kv_bucket_from_stream("ORDERS") is None
    assert kv.kv_subject("b", "a.c") == "$KV.b.a.c"
    assert kv.kv_key_from_subject("b", "$KV.b.a.c") == "a.c"
    assert kv.kv_key_from_subject("b", "$KV.other.a") is None
    assert kv.kv_stream_subjects("b") == ["$KV.b.>"]
    assert kv.kv_delete_headers() == {"KV-Operation": "DEL"}
    assert kv.kv_purge_headers() == {"KV-Operation": "PURGE", "Nats-Rollup": "sub"}


def test_kv_stream_config_matches_nats_go() -> None:
    cfg = kv.kv_stream_config("b", history=5, ttl_ns=60 * 10**9, storage=StorageType.MEMORY)
    assert cfg.name == "KV_b"
    assert cfg.subjects == ["$KV.b.>"]
    assert cfg.max_msgs_per_subject == 5
    assert (cfg.max_msgs, cfg.max_bytes, cfg.max_msg_size, cfg.max_consumers) == (-1, -1, -1, -1)
    assert cfg.max_age == 60 * 10**9
    assert cfg.duplicate_window == 60 * 10**9  # ttl < 2 min
    assert cfg.allow_rollup_hdrs and cfg.deny_delete and cfg.allow_direct
    assert cfg.discard is DiscardPolicy.NEW
    assert cfg.num_replicas == 1
    assert cfg.compression == "none"
    assert kv.kv_stream_config("b").duplicate_window == 120 * 10**9
    assert kv.kv_stream_config("b", compression=True).compression is StoreCompression.S2
    marked = kv.kv_stream_config("b", limit_marker_ttl_ns=10**9)
    assert marked.allow_msg_ttl and marked.subject_delete_marker_ttl == 10**9
    with pytest.raises(ValueError):
        kv.kv_stream_config("b", history=65)


def test_kv_mirror_and_sources() -> None:
    mirrored = kv.kv_stream_config("m", mirror=StreamSource(name="src"))
    assert mirrored.mirror is not None and mirrored.mirror.name == "KV_src"
    assert mirrored.mirror_direct and mirrored.subjects == []
    sourced = kv.kv_stream_config(
        "agg",
        sources=[
            StreamSource(name="a"),
            StreamSource(name="KV_agg", external=ExternalStream(api="$JS.leaf.API", deliver="")),
        ],
    )
    assert [s.name for s in sourced.sources] == ["KV_a", "KV_agg"]
    assert sourced.sources[0].subject_transforms[0].src == "$KV.a.>"
    assert sourced.sources[0].subject_transforms[0].dest == "$KV.agg.>"
    assert sourced.sources[1].subject_transforms == []  # same bucket in another domain: no transform
    assert sourced.subjects == ["$KV.agg.>"]


def test_object_names_and_subjects() -> None:
    assert objstore.encode_object_name("a") == "YQ=="  # padded, like Go base64.URLEncoding
    assert objstore.encode_object_name("?>~") == "Pz5-"  # URL-safe alphabet
    assert objstore.decode_object_name("YQ==") == "a"
    assert objstore.obj_meta_subject("b", "a") == "$O.b.M.YQ=="
    assert objstore.obj_chunk_subject("b", "NUID") == "$O.b.C.NUID"
    assert objstore.obj_stream_name("b") == "OBJ_b"
    assert objstore.obj_bucket_from_stream("OBJ_b") == "b"
    cfg = objstore.obj_stream_config("b", ttl_ns=5)
    assert cfg.subjects == ["$O.b.C.>", "$O.b.M.>"]
    assert cfg.discard is DiscardPolicy.NEW and cfg.allow_rollup_hdrs and cfg.allow_direct
    assert cfg.max_bytes == -1 and cfg.max_age == 5


def test_object_digest() -> None:
    data = b"hello world"
    expected = "SHA-256=uU0nuZNNPgilLlLX2n2r-sSE7-N6U4DukIj3rOLvzek="
    assert objstore.object_digest(data) == expected
    h = hashlib.sha256()
    h.update(b"hello ")
    h.update(b"world")
    assert objstore.object_digest(h) == expected


def test_object_info_decodes_go_and_nats_py_meta() -> None:
    go_meta = (
        b'{"name":"file.txt","headers":{"X":["1","2"]},"options":{"max_chunk_size":131072},"bucket":"b",'
        b'"nuid":"N","size":11,"mtime":"0001-01-01T00:00:00Z","chunks":1,"digest":"SHA-256=x"}'
    )
    info = codec.decode(go_meta, objstore.ObjectInfo)
    assert info.headers == {"X": ["1", "2"]}
    assert info.options is not None and info.options.max_chunk_size == 131072
    assert codec.encode(info) == go_meta
    nats_py_meta = (
        b'{"name":"f","bucket":"b","nuid":"N","size":0,"mtime":"2024-05-01T10:00:00.123456+00:00","chunks":0}'
    )
    assert codec.decode(nats_py_meta, objstore.ObjectInfo).mtime.isoformat() == "2024-05-01T10:00:00.123456Z"
    deleted = b'{"name":"f","bucket":"b","nuid":"N","size":0,"mtime":"","chunks":0,"deleted":true}'
    assert codec.decode(deleted, objstore.ObjectInfo).mtime == ZERO_TIME
    link = objstore.ObjectInfo(
        name="l", options=objstore.ObjectMetaOptions(link=objstore.ObjectLink(bucket="b"))
    )
    assert b'"options":{"link":{"bucket":"b"}}' in codec.encode(link)
