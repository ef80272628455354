"""``$JS.API.INFO`` and ``/jsz`` report the bytes the streams reserve from the stream index's running
sums (`JetStreamEngine.reserved`), as the limits checks take them: the same totals as a pass over the
streams (switch ``stream_index.INDEXED`` off) through creates, updates and deletes."""

from __future__ import annotations

import json
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import embedded

from pyjetstream.server.jetstream import stream_index

MB = 1 << 20


async def _api(nc: Any, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(
        (await nc.request(f"$JS.API.{subject}", json.dumps(body).encode())).data
    )
    assert "error" not in answer, answer
    return answer


async def _reservations(indexed: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    monkeypatch.setattr(stream_index, "INDEXED", indexed)
    seen = []
    async with embedded(http_port=-1) as server:
        nc = await nats.connect(server.client_url)

        async def look() -> None:
            info = await _api(nc, "INFO", {})
            jsz = server.monitor_handlers["/jsz"]({"accounts": "1"})
            detail = jsz["account_details"][0]
            seen.append((info["reserved_memory"], info["reserved_storage"], jsz["reserved_memory"],
                         jsz["reserved_storage"], detail["reserved_memory"], detail["reserved_storage"]))  # fmt: skip

        for i in range(6):
            storage = "memory" if i % 2 else "file"
            config = {"name": f"R{i}", "subjects": [f"r{i}.>"], "storage": storage}
            if i % 3:
                config["max_bytes"] = (i + 1) * MB
            await _api(nc, f"STREAM.CREATE.R{i}", config)
            await look()
        await _api(
            nc,
            "STREAM.UPDATE.R1",
            {"name": "R1", "subjects": ["r1.>"], "storage": "memory", "max_bytes": 9 * MB},
        )
        await look()
        await _api(nc, "STREAM.UPDATE.R3", {"name": "R3", "subjects": ["r3.>"], "storage": "memory"})
        await look()
        await _api(nc, "STREAM.DELETE.R2", {})
        await look()
        await nc.close()
    return seen


async def test_reserved_totals_are_the_pass_over_the_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    indexed = await _reservations(True, monkeypatch)
    assert indexed == await _reservations(False, monkeypatch)
    assert indexed[-1][:4] == (15 * MB, 5 * MB) * 2  # memory: R1 (9 MiB now) and R5; file: R4 (R2 deleted)
