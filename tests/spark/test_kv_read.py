"""Reading a KV bucket's current values as a table (``option("bucket", ...)``), on both targets."""

from __future__ import annotations

from typing import Any

import pytest
from tests.spark import jsutil
from tests.spark.jsutil import jetstream, publish
from tests.support.targets import Target

from pyjetstream.client.jetstream import KeyValueConfig, KeyWatcher
from pyjetstream.spark.kv_reader import read_bucket
from pyjetstream.spark.options import parse_options

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


def _read_counting(url: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[int]]:
    """Entries the read took from its watch before the first batch reached the caller, and every
    batch's row count."""
    taken = 0
    real_next = KeyWatcher.next

    async def counting_next(self: KeyWatcher, timeout: Any = None) -> Any:
        nonlocal taken
        entry = await real_next(self, timeout)
        taken += entry is not None
        return entry

    monkeypatch.setattr(KeyWatcher, "next", counting_next)
    opts = parse_options({"servers": url, "bucket": bucket, "batchSize": "50"})
    batches = read_bucket(opts, bucket)
    sizes = [next(batches).num_rows]
    before_first = taken
    sizes += [batch.num_rows for batch in batches]
    return before_first, sizes


def test_read_bucket_hands_each_batch_as_it_fills(
    js_server: Target, stream_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: the task holds one batch's rows, not the bucket's. Counted, not timed: before the
    first batch it has taken ``batchSize`` entries from its watch at 120 and at 1,200 keys (the first
    version read the whole bucket into a list first: 120 and 1,200)."""
    url = js_server.url
    taken = {}
    for keys in (120, 1200):
        bucket = f"kvb_{stream_name.lower()}_{keys}"
        with jetstream(url) as js:
            js.create_key_value(KeyValueConfig(bucket=bucket))
        publish(url, [(f"$KV.{bucket}.k{i}", b"v") for i in range(keys)])
        taken[keys], sizes = _read_counting(url, bucket, monkeypatch)
        assert sum(sizes) == keys and set(sizes[:-1]) == {50} and 0 < sizes[-1] <= 50
    assert taken == {120: 50, 1200: 50}


def test_read_empty_bucket_gives_one_empty_batch(js_server: Target, stream_name: str) -> None:
    url = js_server.url
    bucket = f"kve_{stream_name.lower()}"
    with jetstream(url) as js:
        js.create_key_value(KeyValueConfig(bucket=bucket))
    opts = parse_options({"servers": url, "bucket": bucket})
    assert [batch.num_rows for batch in read_bucket(opts, bucket)] == [0]
