"""Name validation: streams, consumers, KV buckets/keys, object store buckets.

Stream and consumer names follow nats-server ``isValidName`` (no whitespace, ``.``, ``*``,
``>``) plus the separate path-separator rule (10127/10128) and ``JSMaxNameLen``. KV rules
are ADR-8 (nats.go ``validBucketRe`` / ``validKeyRe`` / ``validSearchKey``); object store
buckets use the same bucket rule (ADR-20).
"""

from __future__ import annotations

import re

from pyjetstream._hashes import sha256

from .constants import JS_MAX_NAME_LEN
from .timefmt import format_time

__all__ = [
    "has_invalid_name_chars",
    "has_path_separators",
    "is_valid_bucket_name",
    "is_valid_kv_key",
    "is_valid_kv_search_key",
    "is_valid_name",
    "is_valid_object_name",
    "stream_identity",
]

_INVALID_NAME_CHARS = frozenset(" \t\r\n\f.*>")
_PATH_SEPARATORS = frozenset("/\\")
_BUCKET_RE = re.compile(r"[a-zA-Z0-9_-]+\Z")
_KV_KEY_RE = re.compile(r"[-/_=.a-zA-Z0-9]+\Z")
_KV_SEARCH_KEY_RE = re.compile(r"[-/_=.a-zA-Z0-9*]*>?\Z")


def has_invalid_name_chars(name: str) -> bool:
    """True if ``name`` contains whitespace, ``.``, ``*`` or ``>`` (nats-server ``isValidName``)."""
    return not _INVALID_NAME_CHARS.isdisjoint(name)


def has_path_separators(name: str) -> bool:
    """True if ``name`` contains ``/`` or ``\\`` (⇒ 10127 consumer / 10128 stream)."""
    return not _PATH_SEPARATORS.isdisjoint(name)


def is_valid_name(name: str, max_len: int = JS_MAX_NAME_LEN) -> bool:
    """A usable stream or consumer name: non-empty, at most ``max_len`` chars, no
    whitespace, ``.``, ``*``, ``>``, ``/`` or ``\\``."""
    return (
        bool(name)
        and len(name) <= max_len
        and not has_invalid_name_chars(name)
        and not has_path_separators(name)
    )


def is_valid_bucket_name(bucket: str) -> bool:
    """KV / object store bucket: ``[a-zA-Z0-9_-]+``."""
    return bool(_BUCKET_RE.match(bucket))


def is_valid_kv_key(key: str) -> bool:
    """KV key: ``[-/_=.a-zA-Z0-9]+`` not starting or ending with ``.`` (keys starting with
    ``_kv`` are reserved by ADR-8 but not rejected by clients)."""
    return bool(key) and key[0] != "." and key[-1] != "." and bool(_KV_KEY_RE.match(key))


def is_valid_kv_search_key(key: str) -> bool:
    """KV watch/list filter: key characters plus ``*`` tokens and a trailing ``>``."""
    return bool(key) and key[0] != "." and key[-1] != "." and bool(_KV_SEARCH_KEY_RE.match(key))


def is_valid_object_name(name: str) -> bool:
    """Object names are free-form but must not be empty (they are base64url-encoded in subjects)."""
    return bool(name)


_HASH_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def stream_identity(created_ns: int) -> str:
    """⟨2.15+⟩ A stream's identity (``Nats-Stream-Identity``): nats-server's ``getHash`` (8 base-62
    digits of a SHA-256) of its creation time in RFC3339Nano, so a recreated stream has another."""
    digest = sha256(format_time(created_ns).encode()).digest()
    return "".join(_HASH_DIGITS[b % 62] for b in digest[:8])
