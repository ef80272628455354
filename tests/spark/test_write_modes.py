"""Write modes (``publishMode``): fast-ingest and atomic batches — whole batches only after a
failure, the server's refusals, its batch size limit, and a server too old for the mode.

The retried-task and re-run cases of every mode are in test_write.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.spark import jsutil
from tests.spark.test_write import write
from tests.support.targets import KINDS, Target, make_target, old_target

pytestmark = pytest.mark.xdist_group("spark")


def rows_frame(spark: Any, subject: str, n: int, bad_row: int | None = None) -> Any:
    """``n`` rows in one partition; ``bad_row`` carries an expected last sequence no stream has."""
    schema = "subject string, data string, headers map<string,string>"
    rows = [(subject, f"{i}", {"Nats-Expected-Last-Sequence": "999999"} if i == bad_row else None) for i in range(n)]
    return spark.createDataFrame(rows, schema).coalesce(1)


def test_sync_and_fast_modes_write_every_row(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"], allow_batched=True)
    df = rows_frame(spark, f"{stream_name}.a", 300)
    write(df, url, publishMode="sync", writeId="w1")
    write(df, url, publishMode="fast", writeId="w2")
    write(df, url, publishMode="fast", writeId="w2")  # a re-run: every row is skipped as a duplicate
    stored = jsutil.stored(url, stream_name)
    assert len(stored) == 600
    assert sorted(int(m.data) for m in stored) == sorted(list(range(300)) * 2)
    assert all(m.headers and m.headers["Nats-Msg-Id"] for m in stored)


def test_atomic_failure_mid_partition_leaves_whole_batches(spark: Any, js_server: Target, stream_name: str) -> None:
    """A refused row fails its batch as a whole: the batches before it stay, nothing of its own
    batch (rows 100-149 were staged before it) is stored; the task's retry adds nothing."""
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"], allow_atomic=True)
    df = rows_frame(spark, f"{stream_name}.a", 250, bad_row=150)
    with pytest.raises(Exception, match=r"wrong last sequence: \d+ \(error 10071\)"):
        write(df, url, publishMode="atomic", atomicBatchSize=100)
    stored = jsutil.stored(url, stream_name)
    assert sorted(int(m.data) for m in stored) == list(range(100))


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("fast", r"batch publish is disabled \(error 10205\); the stream needs allow_batched"),
        ("atomic", r"atomic publish is disabled \(error 10174\); the stream needs allow_atomic"),
    ],
)
def test_stream_without_the_mode_is_refused(
    spark: Any, js_server: Target, stream_name: str, mode: str, message: str
) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    with pytest.raises(Exception, match=message):
        write(rows_frame(spark, f"{stream_name}.a", 3), url, publishMode=mode)
    assert jsutil.stream_state(url, stream_name).messages == 0


@pytest.mark.parametrize("kind", KINDS)
def test_atomic_batches_over_the_server_limit(spark: Any, kind: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path, jetstream_settings={"limits": {"batch": {"max_msgs": 20}}})
    try:
        jsutil.create_stream(target.url, "LIM", ["lim.>"], allow_atomic=True)
        df = rows_frame(spark, "lim.a", 45)
        with pytest.raises(Exception, match=r"atomic publish batch is too large: 20 \(error 10199\)"):
            write(df, target.url, publishMode="atomic", atomicBatchSize=30)
        assert jsutil.stream_state(target.url, "LIM").messages == 0
        write(df, target.url, publishMode="atomic", atomicBatchSize=20)
        assert jsutil.stream_state(target.url, "LIM").messages == 45
    finally:
        target.stop()


def test_old_server_names_the_version_a_mode_needs(spark: Any, tmp_path: Path) -> None:
    target = old_target("2.9.10", tmp_path)
    if target is None:
        pytest.skip("nats-server 2.9.10 is not installed")
    try:
        jsutil.create_stream(target.url, "OLD", ["old.>"])
        df = rows_frame(spark, "old.a", 3)
        with pytest.raises(Exception, match=r"publishMode=fast: fast-ingest batch publish needs nats-server 2\.14"):
            write(df, target.url, publishMode="fast")
        with pytest.raises(Exception, match=r"publishMode=atomic: atomic batch publish needs nats-server 2\.12"):
            write(df, target.url, publishMode="atomic")
        write(df, target.url)  # the default mode works there
        assert jsutil.stream_state(target.url, "OLD").messages == 3
    finally:
        target.stop()
