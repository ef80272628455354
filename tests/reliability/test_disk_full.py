"""A full disk (issue #15), on both targets, on a real 8 MiB tmpfs (skipped where the machine
cannot mount one): every publish is answered at once — the stored ones with a PubAck, the rest
with 503 / 10023 "insufficient resources", never a timeout — the stream counts exactly the
acknowledged messages (before and after a restart), the server keeps serving reads and the API,
and publishing resumes by itself once there is room again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats
from tests.support.targets import make_target


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, check=False
    )
    if done.returncode:
        pytest.skip(f"cannot mount an 8 MiB tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


async def api(client: RawNats, subject: str, body: Any = b"") -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (await client.request(f"$JS.API.{subject}", data, timeout=10)).json()


async def test_full_disk_answers_every_publish(small_disk: Path, server_kind: str) -> None:
    srv = make_target(server_kind, small_disk / "srv")
    client = await RawNats.connect(srv.url)
    try:
        resp = await api(client, "STREAM.CREATE.F", {"name": "F", "subjects": ["f"]})
        assert "error" not in resp, resp
        payload = b"x" * 4096
        acked = 0
        errors: dict[int, int] = {}
        for _ in range(3000):
            reply = (await client.request("f", payload, timeout=10)).json()
            if "error" in reply:
                code = reply["error"]["err_code"]
                errors[code] = errors.get(code, 0) + 1
                if errors[code] >= 20:
                    break
            else:
                acked += 1
        assert acked > 100
        assert 10023 in errors, errors
        err = await client.request("f", payload, timeout=10)
        assert err.json()["error"] == {"code": 503, "err_code": 10023, "description": "insufficient resources"}
        info = await api(client, "STREAM.INFO.F")
        assert info["state"]["messages"] == acked
        assert info["state"]["last_seq"] == acked
        # Reads and the API keep working.
        got = await api(client, "STREAM.MSG.GET.F", {"seq": acked})
        assert got["message"]["seq"] == acked
        # Room again: publishing resumes by itself.
        assert (await api(client, "STREAM.PURGE.F", {"keep": 10}))["success"] is True
        await asyncio.sleep(0.5)
        ok = (await client.request("f", b"again", timeout=10)).json()
        assert ok.get("seq") == acked + 1, ok
    finally:
        await client.close()
    srv.restart()
    client = await RawNats.connect(srv.url)
    try:
        state = (await api(client, "STREAM.INFO.F"))["state"]
        assert (state["messages"], state["last_seq"]) == (11, acked + 1)
        assert "lost" not in state
    finally:
        await client.close()
        srv.stop()
        with contextlib.suppress(OSError):
            (small_disk / "srv").rename(small_disk / "done")
