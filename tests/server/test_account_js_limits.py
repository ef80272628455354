"""Account JetStream limits enforced as nats-server 2.15.1, from the config and from account JWTs
(plain ``limits`` and ``tiered_limits``), on both targets, answers compared between them.

nats.py's ``AccountLimitsTest::test_account_limits`` (its ``js-limits.conf``) and nats.js's
``jsm - account limits`` (a JWT whose ``tiered_limits`` R1 alone turns JetStream on) are the cases
that found the differences: ``max_stream_bytes: true`` (10113), ``store_max_stream_bytes`` /
``memory_max_stream_bytes`` (10122) and ``max_ack_pending`` were read but not enforced, and tiered
limits left JetStream off (10039).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from tests.support.operator import Operator
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

TIMEOUT = 10.0

#: nats.py's tests/conf/js-limits.conf, the account's JetStream limits.
JS_LIMITS = {
    "max_mem": 64 << 20,
    "max_file": 32 << 20,
    "max_streams": 10,
    "max_consumers": 20,
    "max_ack_pending": 100,
    "memory_max_stream_bytes": 2048,
    "store_max_stream_bytes": 4096,
    "max_stream_bytes": True,
}


async def _api(nc: nats.NATS, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    msg = await nc.request("$JS.API." + subject, json.dumps(body).encode() if body else b"", timeout=TIMEOUT)
    out: dict[str, Any] = json.loads(msg.data)
    return out


def _shape(resp: dict[str, Any], *keys: str) -> Any:
    """An answer without what differs between two servers' successes (times, ids)."""
    if "error" in resp:
        return resp["error"]
    return {k: resp["config"].get(k) if k != "limits" else resp.get(k) for k in keys} if keys else "ok"


async def _streams_and_consumers(nc: nats.NATS) -> list[Any]:
    out: list[Any] = []
    for storage, max_bytes in (
        ("file", None),  # 10113 max bytes required
        ("file", 65536),  # 10122 over store_max_stream_bytes
        ("file", 4096),
        ("memory", 4096),  # 10122 over memory_max_stream_bytes
        ("memory", 2048),
    ):
        name = f"{storage}{max_bytes}"
        cfg: dict[str, Any] = {"name": name, "subjects": [name], "storage": storage}
        if max_bytes is not None:
            cfg["max_bytes"] = max_bytes
        out.append(_shape(await _api(nc, f"STREAM.CREATE.{name}", cfg), "max_bytes"))
    update = {"name": "file4096", "subjects": ["file4096"], "max_bytes": 8192}
    out.append(_shape(await _api(nc, "STREAM.UPDATE.file4096", update), "max_bytes"))
    for name, extra in (("dflt", {}), ("over", {"max_ack_pending": 101}), ("at", {"max_ack_pending": 100})):
        body = {"stream_name": "file4096", "config": {"durable_name": name, "ack_policy": "explicit", **extra}}
        out.append(_shape(await _api(nc, f"CONSUMER.CREATE.file4096.{name}", body), "max_ack_pending"))
    info = await _api(nc, "INFO")
    out.append({k: info.get(k) for k in ("limits", "tiers", "streams", "consumers", "reserved_storage")})
    return out


async def _config_case(target: Target) -> list[Any]:
    nc = await nats.connect(target.url, user="a", password="a", allow_reconnect=False)
    try:
        return await _streams_and_consumers(nc)
    finally:
        await nc.close()


def _both(tmp_path: Path, case: Callable[[Target], Any], **settings: Any) -> dict[str, Any]:
    import asyncio

    out: dict[str, Any] = {}
    for kind in (NATS_SERVER, EMBEDDED):
        target = make_target(kind, tmp_path / kind, **settings)
        try:
            out[kind] = asyncio.run(case(target))
        finally:
            target.stop()
    return out


def test_config_account_limits(tmp_path: Path) -> None:
    accounts = {"A": {"jetstream": JS_LIMITS, "users": [{"user": "a", "password": "a"}]}}
    got = _both(tmp_path, _config_case, accounts=accounts)
    assert got[EMBEDDED] == got[NATS_SERVER]
    theirs = got[NATS_SERVER]
    assert [e.get("err_code", e) for e in theirs[:3]] == [10113, 10122, {"max_bytes": 4096}]
    assert theirs[3]["err_code"] == 10122 and theirs[5]["err_code"] == 10122
    assert theirs[6:9] == [
        {"max_ack_pending": 100},
        {"code": 400, "err_code": 10121, "description": "consumer max ack pending exceeds system limit of 100"},
        {"max_ack_pending": 100},
    ]
    assert theirs[9]["limits"]["storage_max_stream_bytes"] == 4096 and theirs[9]["limits"]["max_bytes_required"]


# ----------------------------------------------------------------------------------- JWT accounts

#: Account JWT limits (nsc's names): plain ones with the max-bytes rules, tiered ones as nats.js's
#: "jsm - account limits" writes them, and tiers with no R1 tier.
JWT_ACCOUNTS: dict[str, dict[str, Any]] = {
    "PLAIN": {
        "mem_storage": 1 << 20,
        "disk_storage": 1 << 20,
        "streams": 10,
        "consumer": 20,
        "max_ack_pending": 100,
        "mem_max_stream_bytes": 2048,
        "disk_max_stream_bytes": 4096,
        "max_bytes_required": True,
    },
    "TIERED": {"tiered_limits": {"R1": {"disk_storage": 1 << 20, "consumer": -1, "streams": -1}}},
    "TIERED_RULES": {
        "tiered_limits": {
            "R1": {
                "mem_storage": 1 << 20,
                "disk_storage": 1 << 20,
                "streams": 10,
                "consumer": 20,
                "max_ack_pending": 100,
                "mem_max_stream_bytes": 2048,
                "disk_max_stream_bytes": 4096,
                "max_bytes_required": True,
            },
            "R3": {"disk_storage": 1 << 20, "streams": 2},
        }
    },
    "TIERED_STREAMS": {"tiered_limits": {"R1": {"disk_storage": 1 << 20, "streams": 1}}},
    "R3_ONLY": {"tiered_limits": {"R3": {"disk_storage": 1 << 20}}},
}


@pytest.fixture
def operator(tmp_path: Path) -> Operator:
    op = Operator(tmp_path / "nsc")
    for name, limits in JWT_ACCOUNTS.items():
        op.account(name, limits)
    return op


async def _jwt_case(target: Target, op: Operator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in JWT_ACCOUNTS:
        creds, _, _ = op.user(name, "u")
        nc = await nats.connect(target.url, user_credentials=str(creds), allow_reconnect=False)
        try:
            if name in ("PLAIN", "TIERED_RULES"):
                out[name] = await _streams_and_consumers(nc)
                continue
            steps = [await _api(nc, "INFO")]
            for stream, storage in (("F1", "file"), ("F2", "file"), ("M1", "memory")):
                cfg = {"name": stream, "subjects": [stream], "storage": storage}
                steps.append(_shape(await _api(nc, f"STREAM.CREATE.{stream}", cfg)))
            info = await _api(nc, "INFO")
            steps.append({k: info.get(k) for k in ("limits", "tiers", "streams", "storage")})
            out[name] = [_without_api(steps[0]), *steps[1:]]
        finally:
            await nc.close()
    return out


def _without_api(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k != "api"}


def test_jwt_account_limits_and_tiers(tmp_path: Path, operator: Operator) -> None:
    import asyncio

    got: dict[str, Any] = {}
    for kind in (NATS_SERVER, EMBEDDED):
        target = make_target(kind, tmp_path / kind, **operator.settings())
        try:
            got[kind] = asyncio.run(_jwt_case(target, operator))
        finally:
            target.stop()
    ours, theirs = got[EMBEDDED], got[NATS_SERVER]
    for name in JWT_ACCOUNTS:
        assert ours[name] == theirs[name], name
    # nats.js "jsm - account limits": JetStream is on, its R1 tier as the JWT sets it.
    tier = theirs["TIERED"][0]["tiers"]["R1"]["limits"]
    assert (tier["max_storage"], tier["max_consumers"], tier["max_streams"], tier["max_ack_pending"]) == (
        1 << 20,
        -1,
        -1,
        -1,
    )
    assert theirs["R3_ONLY"][1]["err_code"] == 10120
    assert theirs["TIERED_STREAMS"][2]["err_code"] == 10027


# ------------------------------------------------------------------- the server's consumer limits


async def _server_limits_case(target: Target) -> list[Any]:
    """``jetstream { limits { max_ack_pending: 50, max_request_batch: 10 } }``: defaults and caps."""
    nc = await nats.connect(target.url, allow_reconnect=False)
    try:
        out: list[Any] = [_shape(await _api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s"]}))]
        for name, cfg in (
            ("dflt", {}),
            ("pending", {"max_ack_pending": 51}),
            ("batch", {"max_batch": 11}),
            ("fits", {"max_ack_pending": 50, "max_batch": 10}),
            ("push", {"deliver_subject": "dl"}),
            ("none", {"ack_policy": "none"}),
        ):
            body = {"stream_name": "S", "config": {"durable_name": name, "ack_policy": "explicit", **cfg}}
            out.append(_shape(await _api(nc, f"CONSUMER.CREATE.S.{name}", body), "max_ack_pending", "max_batch"))
        body = {"stream_name": "S", "config": {"durable_name": "ped", "ack_policy": "explicit", "max_ack_pending": 5}}
        out.append(_shape(await _api(nc, "CONSUMER.CREATE.S.ped", {**body, "pedantic": True})))
        return out
    finally:
        await nc.close()


def test_server_consumer_limits(tmp_path: Path) -> None:
    limits = {"limits": {"max_ack_pending": 50, "max_request_batch": 10}}
    got = _both(tmp_path, _server_limits_case, jetstream_settings=limits)
    assert got[EMBEDDED] == got[NATS_SERVER]
    theirs = got[NATS_SERVER]
    assert theirs[1] == {"max_ack_pending": 50, "max_batch": 10}
    assert theirs[2]["err_code"] == 10121 and theirs[3]["err_code"] == 10125


#: Two accounts sharing the server's ``max_file_store`` / ``max_memory_store`` of 10,000 bytes.
TWO_ACCOUNTS = {
    "accounts": {
        "A": {"users": [{"user": "a", "password": "a"}], "jetstream": "enabled"},
        "B": {"users": [{"user": "b", "password": "b"}], "jetstream": "enabled"},
    },
    "jetstream_settings": {"max_file_store": 10_000, "max_memory_store": 10_000},
}


async def _shared_reservations_case(target: Target) -> list[Any]:
    """Streams' ``max_bytes`` reserved in two accounts: a create or update that would take every
    account's reservations together past the server's limit is refused (10047 file, 10028 memory)."""
    a = await nats.connect(target.url, user="a", password="a", allow_reconnect=False)
    b = await nats.connect(target.url, user="b", password="b", allow_reconnect=False)
    out: list[Any] = []
    try:
        for st in ("file", "memory"):
            for nc, name, max_bytes in ((a, "A", 6000), (b, "B", 6000), (b, "C", 3000)):
                cfg = {"name": f"{name}{st}", "subjects": [f"{name}.{st}"], "storage": st, "max_bytes": max_bytes}
                out.append(_shape(await _api(nc, f"STREAM.CREATE.{name}{st}", cfg), "max_bytes"))
            cfg = {"name": f"C{st}", "subjects": [f"C.{st}"], "storage": st, "max_bytes": 5000}
            out.append(_shape(await _api(b, f"STREAM.UPDATE.C{st}", cfg), "max_bytes"))
            out.append(_shape(await _api(a, f"STREAM.DELETE.A{st}")))
            cfg = {"name": f"B{st}", "subjects": [f"B.{st}"], "storage": st, "max_bytes": 6000}
            out.append(_shape(await _api(b, f"STREAM.CREATE.B{st}", cfg), "max_bytes"))
        return out
    finally:
        await a.close()
        await b.close()


def test_the_server_limits_are_shared_by_the_accounts(tmp_path: Path) -> None:
    """nats-server checks a stream's ``max_bytes`` against every account's reservations
    (``checkBytesLimits``: ``js.storeReserved``); ours counted the account's own only (B's 6,000
    beside A's 6,000 was taken)."""
    got = _both(tmp_path, _shared_reservations_case, **TWO_ACCOUNTS)
    assert got[EMBEDDED] == got[NATS_SERVER]
    codes = [entry.get("err_code") for entry in got[NATS_SERVER] if isinstance(entry, dict)]
    assert codes.count(10047) == 2 and codes.count(10028) == 2, got[NATS_SERVER]
