"""Reading a KV bucket's current values as a table (``option("bucket", ...)``), on both targets."""

from __future__ import annotations

from typing import Any

import pytest
from tests.spark import jsutil
from tests.support.targets import Target

from pyjetstream.client.jetstream import KeyValueConfig

pytestmark = pytest.mark.xdist_group("spark")


def test_read_bucket_current_values(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    bucket = f"kvr_{stream_name.lower()}"
    with jsutil.jetstream(url) as js:
        kv = js.create_key_value(KeyValueConfig(bucket=bucket, history=5))
        kv.put("a.1", b"x")
        kv.put("b", b"y")
        kv.put("a.1", b"z")
        kv.put("gone", b"1")
        kv.put("purged", b"2")
        kv.put("empty", b"")
        kv.delete("gone")
        kv.purge("purged")
        expected = {k: kv.get(k) for k in ("a.1", "b", "empty")}
    df = spark.read.format("jetstream").option("servers", url).option("bucket", bucket).load()
    assert [f.name for f in df.schema.fields] == ["key", "value", "revision", "created", "operation"]
    rows = {
        r.key: (bytes(r.value), r.revision, r.created_us, r.operation)
        for r in df.selectExpr("key", "value", "revision", "unix_micros(created) AS created_us", "operation").collect()
    }
    assert rows == {
        k: (e.value, e.revision, int(e.created) // 1000, "PUT") for k, e in expected.items()
    }
    with pytest.raises(Exception, match="nope"):
        spark.read.format("jetstream").option("servers", url).option("bucket", "nope").load().collect()
