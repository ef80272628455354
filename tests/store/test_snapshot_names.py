"""The subject names of a snapshot or a block index (``_snapshot.encode``): ASCII names without a
free id go out in C-speed passes, any other one by one — both read back as written."""

from __future__ import annotations

from array import array

import pytest

from pyjetstream.server.jetstream.store import _snapshot


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["a", "kv.b.k1", "x" * 300],
        [None, "a.b", None, "c"],
        ["ä.ö", "plain", "日本.語"],
        [f"mp.{i}" for i in range(5_000)],
    ],
)
def test_names_read_back(names: list[str | None]) -> None:
    parts = _snapshot.encode({"k": 1}, {"sids": array("I", [1, 2])}, names)
    decoded = _snapshot.decode(b"".join(bytes(p) for p in parts))
    assert decoded is not None
    header, arrays, got = decoded
    assert header == {"k": 1} and list(arrays["sids"]) == [1, 2]
    assert got == names
