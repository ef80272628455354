"""Name validation tables."""

from __future__ import annotations

import pytest

from pyjetstream.api.names import (
    has_invalid_name_chars,
    has_path_separators,
    is_valid_bucket_name,
    is_valid_kv_key,
    is_valid_kv_search_key,
    is_valid_name,
    is_valid_object_name,
)


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("ORDERS", True),
        ("orders-2023_v1", True),
        ("KV_bucket", True),
        ("a" * 255, True),
        ("a" * 256, False),
        ("ünïcode", True),
        ("", False),
        ("a.b", False),
        ("a*", False),
        ("a>", False),
        ("a b", False),
        ("a\tb", False),
        ("a\nb", False),
        ("a\rb", False),
        ("a\fb", False),
        ("a/b", False),
        ("a\\b", False),
    ],
)
def test_stream_consumer_names(name: str, valid: bool) -> None:
    assert is_valid_name(name) is valid


def test_name_rule_parts() -> None:
    assert has_invalid_name_chars("a.b") and not has_invalid_name_chars("a/b")
    assert has_path_separators("a/b") and has_path_separators("a\\b") and not has_path_separators("a.b")


@pytest.mark.parametrize(
    ("bucket", "valid"),
    [
        ("b", True),
        ("my-bucket_1", True),
        ("", False),
        ("a.b", False),
        ("a b", False),
        ("a*", False),
        ("ü", False),
    ],
)
def test_bucket_names(bucket: str, valid: bool) -> None:
    assert is_valid_bucket_name(bucket) is valid


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("k", True),
        ("a.b.c", True),
        ("a-b_c/d=e", True),
        ("_kv.internal", True),
        ("", False),
        (".a", False),
        ("a.", False),
        ("a b", False),
        ("a*", False),
        ("a.>", False),
        ("ü", False),
    ],
)
def test_kv_keys(key: str, valid: bool) -> None:
    assert is_valid_kv_key(key) is valid


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        (">", True),
        ("*", True),
        ("a.*.c", True),
        ("a.>", True),
        ("a.b", True),
        ("", False),
        ("a.>.b", False),
        (".a", False),
    ],
)
def test_kv_search_keys(key: str, valid: bool) -> None:
    assert is_valid_kv_search_key(key) is valid


def test_object_names() -> None:
    assert is_valid_object_name("any name / with spaces.txt")
    assert not is_valid_object_name("")
