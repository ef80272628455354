"""JetStream in the monitoring endpoints (/jsz, /varz jetstream, /healthz) on both targets."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import nats
from tests.support.targets import Target


async def _get(target: Target, path: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{target.http_port}{path}"
    body = await asyncio.get_running_loop().run_in_executor(
        None, lambda: urllib.request.urlopen(url, timeout=10).read()
    )
    return json.loads(body)


def _shape(value: Any) -> Any:
    """Keys (recursively) and value types, so both servers' documents can be compared."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


async def test_jsz_varz_and_healthz(start_server) -> None:
    target = start_server(http_port=-1)
    nc = await nats.connect(target.url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"])
    await js.publish("s.a", b"hello")
    await js.add_consumer("S", durable_name="D", ack_policy="explicit")

    varz = await _get(target, "/varz")
    assert varz["jetstream"]["stats"]["api"]["total"] >= 2
    assert varz["jetstream"]["config"]["store_dir"].endswith("jetstream")

    jsz = await _get(target, "/jsz")
    assert (jsz["streams"], jsz["consumers"], jsz["messages"]) == (1, 1, 1)
    assert jsz["bytes"] == jsz["storage"] > 0

    full = await _get(target, "/jsz?accounts=true&streams=true&consumers=true&config=true")
    account = full["account_details"][0]
    assert account["name"] == "$G"
    stream = account["stream_detail"][0]
    assert stream["name"] == "S" and stream["state"]["messages"] == 1
    assert stream["config"]["subjects"] == ["s.>"]
    consumer = stream["consumer_detail"][0]
    assert consumer["name"] == "D" and consumer["num_pending"] == 1
    expected_keys = {
        "server_id",
        "now",
        "config",
        "memory",
        "storage",
        "reserved_memory",
        "reserved_storage",
        "accounts",
        "ha_assets",
        "api",
        "streams",
        "consumers",
        "messages",
        "bytes",
        "account_details",
    }
    assert expected_keys <= set(full)
    assert {"name", "created", "cluster", "config", "state", "consumer_detail"} <= set(stream)

    assert await _get(target, "/healthz") == {"status": "ok"}
    await nc.close()


async def test_jsz_documents_have_the_same_shape(tmp_path) -> None:
    from tests.support.targets import make_target

    shapes = []
    for kind in ("embedded", "nats-server"):
        target = make_target(kind, tmp_path / kind, http_port=-1)
        try:
            nc = await nats.connect(target.url)
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s.>"])
            await js.publish("s.a", b"x")
            await js.add_consumer("S", durable_name="D", ack_policy="explicit")
            doc = await _get(target, "/jsz?accounts=true&streams=true&consumers=true")
            await nc.close()
        finally:
            target.stop()
        # 2.10 adds `ts` to consumer info; a 2.9.10 server has no such key.
        for stream in doc["account_details"][0]["stream_detail"]:
            for consumer in stream.get("consumer_detail", []):
                consumer.pop("ts", None)
        shapes.append(_shape(doc))
    assert shapes[0] == shapes[1]
