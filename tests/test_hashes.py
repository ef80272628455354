"""`pyjetstream._hashes.sha256`: the digest ``hashlib.sha256`` makes, with or without CPython's
built-in SHA-256 (whichever a start uses, what it logs and reports is the same)."""

from __future__ import annotations

import hashlib

import pytest

from pyjetstream import _hashes

INPUTS = (b"", b"abc", b"x" * 63, b"y" * 64, b"z" * 65, bytes(range(256)) * 1000)


@pytest.mark.parametrize("builtin", [True, False], ids=["builtin", "hashlib"])
def test_sha256_is_hashlibs(builtin: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if builtin:
        assert _hashes._BUILTIN is not None  # CPython is built with its own SHA-256
    else:
        monkeypatch.setattr(_hashes, "_BUILTIN", None)
    for data in INPUTS:
        assert _hashes.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        h = _hashes.sha256()
        h.update(data[: len(data) // 2])
        h.update(data[len(data) // 2 :])
        assert h.digest() == hashlib.sha256(data).digest()
