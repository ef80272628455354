"""SHA-256 for what a server's start hashes, without loading OpenSSL's hash library.

Why: ``import hashlib`` loads ``_hashlib`` (OpenSSL's digests, initialised one by one): ~6 M
instructions, 1.3% of a server start to its first answer (callgrind), for the one digest a start
takes (the configuration file's ``config_digest``, which the start logs). CPython's own SHA-256,
the built-in module ``hashlib`` itself falls back to (``_sha256`` up to 3.11, ``_sha2`` since
3.12), computes the same digest and costs nothing to import. Where neither is built in, `sha256`
is ``hashlib``'s. A digest other than SHA-256 (a JWT's SHA-512/256, a password's HMAC) is taken
from ``hashlib`` where it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = ["sha256"]


def _builtin() -> Callable[[bytes], _Hash] | None:
    try:
        from _sha256 import sha256 as one  # type: ignore[import-not-found,unused-ignore]  # CPython <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as one  # type: ignore[import-not-found,unused-ignore]  # CPython >= 3.12
        except ImportError:
            return None
    made: Callable[[bytes], _Hash] = one
    return made


_BUILTIN = _builtin()


def sha256(data: bytes = b"") -> _Hash:
    """A SHA-256 hash object over ``data`` (``hashlib.sha256``'s interface: ``update``,
    ``digest``, ``hexdigest``)."""
    if _BUILTIN is not None:
        return _BUILTIN(data)
    import hashlib  # deferred: only an interpreter built without its own SHA-256 needs OpenSSL's

    return hashlib.sha256(data)
