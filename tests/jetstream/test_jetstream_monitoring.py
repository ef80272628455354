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

    shapes, limits = [], []
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
        shapes.append(_shape(doc))
        limits.append(doc["limits"])
    assert shapes[0] == shapes[1]
    # Both enforce 2.15's default of 1000 consumers per stream (see the test below).
    assert limits[0] == limits[1] == {"default_max_consumers": 1000}
    # _shape keeps key order: the JSON field order must match too.
    assert json.dumps(shapes[0]) == json.dumps(shapes[1])


async def _create_durables(nc: Any, stream: str, count: int) -> list[int | None]:
    """Try ``count`` durables on ``stream``; the error code of each answer (None = created)."""
    codes = []
    for i in range(count):
        body = {"stream_name": stream, "config": {"durable_name": f"d{i}", "ack_policy": "explicit"}}
        reply = await nc.request(f"$JS.API.CONSUMER.CREATE.{stream}.d{i}", json.dumps(body).encode(), timeout=10)
        codes.append(json.loads(reply.data).get("error", {}).get("err_code"))
    return codes


async def test_default_max_consumers_applies_when_nothing_else_limits(start_server) -> None:
    """2.15 ``jetstream { limits { default_max_consumers } }`` (0 = 1000): the per-stream limit when
    neither the stream nor the account sets max_consumers; /jsz and /varz report it."""
    target = start_server(http_port=-1, jetstream_settings={"limits": {"default_max_consumers": 2}})
    nc = await nats.connect(target.url)
    for name, extra in (("A", {}), ("B", {"max_consumers": 3})):
        cfg = {"name": name, "subjects": [f"{name}.>"], "storage": "memory", **extra}
        reply = json.loads((await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(cfg).encode())).data)
        assert reply["config"]["max_consumers"] == extra.get("max_consumers", -1)
    assert await _create_durables(nc, "A", 3) == [None, None, 10026]
    assert await _create_durables(nc, "B", 4) == [None, None, None, 10026]
    assert (await _get(target, "/jsz"))["limits"] == {"default_max_consumers": 2}
    assert (await _get(target, "/varz"))["jetstream"]["limits"] == {"default_max_consumers": 2}
    await nc.close()


async def test_jsz_lists_the_public_consumers(start_server) -> None:
    """A mirror's consumer on its origin (a direct one) is neither listed nor counted by ``/jsz``
    (nats-server's ``getPublicConsumers``, its streams' states' consumer counts), and the stream
    state's ``consumer_count`` leaves it out too."""
    target = start_server(http_port=-1)
    nc = await nats.connect(target.url)
    js = nc.jetstream()
    await js.add_stream(name="ORIGIN", subjects=["o.>"])
    await js.publish("o.a", b"x")
    await js.add_consumer("ORIGIN", durable_name="D", ack_policy="explicit")
    await js.add_stream(name="MIRROR", mirror={"name": "ORIGIN"})
    for _ in range(100):  # (the mirror's consumer is made once it runs)
        if (await js.stream_info("MIRROR")).state.messages == 1:
            break
        await asyncio.sleep(0.05)
    jsz = await _get(target, "/jsz?consumers=1")
    listed = {s["name"]: s for s in jsz["account_details"][0]["stream_detail"]}
    assert [c["name"] for c in listed["ORIGIN"]["consumer_detail"]] == ["D"]
    assert listed["ORIGIN"]["state"]["consumer_count"] == 1
    assert jsz["consumers"] == 1
    await nc.close()


async def test_jsz_parameters_decode_as_nats_servers(tmp_path) -> None:
    """``/jsz``'s parameters decoded as ``HandleJsz`` decodes them, once a request: Go's
    ``strconv.ParseBool`` values (``t``, ``TRUE``, ``0`` …), a 400 in Go's words for the first it
    cannot decode (``yes``, ``on``: not booleans to Go), in its order."""
    import urllib.error

    from tests.support.targets import make_target

    queries = ["streams=t&consumers=TRUE&config=0", "streams=yes", "accounts=on", "consumers=x&streams=y",
               "direct-consumers=2", "config=1&offset=1.5", "limit=x", "raft=2", "stream-leader-only=x",
               "leader-only=x"]  # fmt: skip
    answers = []
    for kind in ("embedded", "nats-server"):
        target = make_target(kind, tmp_path / kind, http_port=-1)
        try:
            nc = await nats.connect(target.url)
            await nc.jetstream().add_stream(name="S", subjects=["s.>"])
            await nc.close()
            answer = []
            for query in queries:
                try:
                    doc = await _get(target, f"/jsz?{query}")
                    details = doc["account_details"][0]["stream_detail"][0]
                    answer.append((200, sorted(details)))
                except urllib.error.HTTPError as exc:
                    answer.append((exc.code, exc.read().decode()))
        finally:
            target.stop()
        answers.append(answer)
    assert answers[0] == answers[1]
    assert answers[0][1] == (400, "Error decoding boolean for 'streams': strconv.ParseBool: parsing \"yes\": invalid syntax")


async def test_jsz_names_the_leader_by_the_server_name(start_server) -> None:
    """A stream's ``cluster.leader`` in ``/jsz`` is the server's name (nats-server's ``clusterInfo`` of a
    stream without a group: ``s.Name()``), as in its ``STREAM.INFO``; the server's id only when unnamed."""
    target = start_server(http_port=-1, server_name="N1")
    nc = await nats.connect(target.url)
    await nc.jetstream().add_stream(name="S", subjects=["s.>"])
    jsz = await _get(target, "/jsz?streams=1")
    assert jsz["account_details"][0]["stream_detail"][0]["cluster"]["leader"] == "N1" != jsz["server_id"]
    info = json.loads((await nc.request("$JS.API.STREAM.INFO.S", b"")).data)
    assert info["cluster"]["leader"] == "N1"
    await nc.close()


#: Three JetStream accounts whose names are out of order (each user's name is its account's).
_JS_ACCOUNTS = {
    name: {"jetstream": "enabled", "users": [{"user": name.lower(), "password": "p"}]} for name in ("C", "A", "B")
}
_JSZ_PAGES = ["accounts=1", "accounts=1&offset=1", "accounts=1&limit=2", "accounts=1&offset=1&limit=1",
              "accounts=1&offset=5", "accounts=1&offset=-3&limit=1", "streams=1&limit=1", "acc=B&streams=1",
              "acc=NONE&streams=1", "acc=NONE&accounts=1&limit=2", "acc=B&accounts=1", "streams=1&acc=C&raft=1",
              "raft=1", "consumers=1&acc=C&stream-leader-only=1", "consumers=1&acc=C&direct-consumers=1"]  # fmt: skip


def _listed(doc: dict[str, Any]) -> Any:
    """What a ``/jsz`` answer lists: the totals it has, each account's streams, each stream's
    consumers (public and direct), mirror and raft fields, by name."""
    keys = [k for k in ("total", "streams", "streams_leader", "consumers", "consumers_leader") if k in doc]
    accounts = []
    for detail in doc.get("account_details", []):
        streams = []
        for s in detail.get("stream_detail", []):
            names = {k: [c["name"] for c in s[k]] for k in ("consumer_detail", "direct_consumer_detail") if k in s}
            if "direct_consumer_detail" in names:  # (named at random: JS_MIRROR_<random>)
                names["direct_consumer_detail"] = [n[:10] for n in names["direct_consumer_detail"]]
            mirror = s["mirror"]["name"] if "mirror" in s else None
            raft = [k for k in s if "raft" in k]
            streams.append((s["name"], names, mirror, raft))
        accounts.append((detail["name"], sorted(streams)))
    return {k: doc[k] for k in keys}, accounts


async def test_jsz_pages_accounts_and_lists_as_nats_server(tmp_path) -> None:
    """``/jsz`` over several JetStream accounts, as nats-server's ``Jsz``: the accounts listed sorted
    by name from ``offset``, at most ``limit`` (1024 by default); ``acc`` one account when it has
    JetStream, else the page with ``accounts``; ``raft`` adds ``streams_leader`` / ``consumers_leader``;
    ``direct-consumers`` lists a mirror's consumer on its origin; a mirror's detail names its origin."""
    from tests.support.targets import make_target

    answers = []
    for kind in ("embedded", "nats-server"):
        target = make_target(kind, tmp_path / kind, http_port=-1, accounts=_JS_ACCOUNTS)
        try:
            for name in ("C", "A", "B"):
                nc = await nats.connect(target.url, user=name.lower(), password="p")
                js = nc.jetstream()
                await js.add_stream(name=f"S{name}", subjects=[f"s{name}.>"])
                await js.publish(f"s{name}.a", b"x")
                await js.add_consumer(f"S{name}", durable_name="D", ack_policy="explicit")
                if name == "C":
                    await js.add_stream(name="M", mirror={"name": "SC"})
                    for _ in range(200):  # (the mirror's consumer on SC is made once it runs)
                        if (await js.stream_info("M")).state.messages == 1:
                            break
                        await asyncio.sleep(0.05)
                await nc.close()
            answers.append([_listed(await _get(target, f"/jsz?{query}")) for query in _JSZ_PAGES])
        finally:
            target.stop()
    for query, ours, theirs in zip(_JSZ_PAGES, *answers, strict=True):
        assert ours == theirs, query
    assert [name for name, _ in answers[0][1][1]] == ["B", "C"]  # (offset 1 of A, B, C)
    assert ("SC", {"consumer_detail": ["D"], "direct_consumer_detail": ["JS_MIRROR_"]}, None, []) in answers[0][-1][1][0][1]
