"""`engine.check_store_dir`: nats-server's ``enableJetStream`` checks of the store directory (made
when missing; one there must be a directory and writable, tried with a ``_test_`` file that is
removed again) — without the tempfile module, which start-up does not load."""

from __future__ import annotations

from pathlib import Path

from pyjetstream.server.jetstream.engine import check_store_dir


def test_a_directory_is_tried_and_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "kept").write_text("x")
    assert check_store_dir(tmp_path) == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


def test_a_missing_directory_is_made(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b"
    assert check_store_dir(store) == ""
    assert store.is_dir()


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert check_store_dir(tmp_path / "f") == "storage directory is not a directory"
