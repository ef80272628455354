"""The subject names of a snapshot or a block index (``_snapshot.encode``): ASCII names without a
free id go out in C-speed passes, any other one by one, as lines when none holds a newline —
all read back as written, and so do version 3's (names joined without a separator)."""

from __future__ import annotations

import json
import zlib
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


@pytest.mark.parametrize(
    "names",
    [
        [""],
        ["a\nb", "c"],
        [None, "x\ny", None],
        ["ä\nö", "plain"],
        [None, "a.b", "\n"],
    ],
)
def test_names_with_a_newline_are_not_written_as_lines(names: list[str | None]) -> None:
    """Names go out as lines (split in one C call when read) only when none holds a newline: a
    name that does is written as before, lengths and joined bytes, and reads back as it was."""
    parts = _snapshot.encode({}, {}, names)
    decoded = _snapshot.decode(b"".join(bytes(p) for p in parts))
    assert decoded is not None and decoded[2] == names


def _as_version_3(names: list[str | None]) -> bytes:
    """A snapshot as version 3 wrote it: the names' bytes joined without a separator (``_names``)."""
    lens = array("q", [-1 if n is None else len(n.encode()) for n in names])
    joined = b"".join(b"" if n is None else n.encode() for n in names)
    sids = array("I", [1, 2])
    lengths = {"sids": ["I", 8], "_name_lens": ["q", 8 * len(lens)], "_names": ["B", len(joined)]}
    head = json.dumps({"version": 3, "header": {"k": 1}, "arrays": lengths}).encode()
    body = _snapshot.MAGIC + _snapshot._LEN.pack(len(head)) + head + sids.tobytes() + lens.tobytes() + joined
    return body + zlib.crc32(body).to_bytes(4, "little")


@pytest.mark.parametrize("names", [[], ["a", "kv.b.k1"], [None, "a.b", None, "c"], ["ä.ö", "日本.語"]])
def test_a_version_3_snapshot_reads_back(names: list[str | None]) -> None:
    """A stream state or block index a version-3 store wrote is read as it was (a version-4 one
    is refused by a version-3 reader: its names would be misread, so it rebuilds instead)."""
    decoded = _snapshot.decode(_as_version_3(names))
    assert decoded is not None
    header, arrays, got = decoded
    assert header == {"k": 1} and list(arrays["sids"]) == [1, 2] and got == names
