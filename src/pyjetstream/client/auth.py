"""Credentials for CONNECT: token, user/password, nkey seed, and JWT ``.creds`` files.

nkey and JWT auth sign the ``nonce`` of the server's INFO with the user's ed25519 seed (the
``nkeys`` package) and send the signature base64url-encoded without padding, as nats.go does
(nats-server accepts raw URL or standard base64). Seed files and creds files are read again on
every (re)connect, so rotated credentials are picked up without restarting the client.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

from pyjetstream.client.errors import AuthorizationError

# nats.go's creds parser (``userFromFile``/``nkeyPairFromSeedFile``): blocks framed by dashed lines;
# the first block is the user JWT, the second the user's nkey seed.
_CREDS_BLOCK = re.compile(rb"\s*(?:(?:-{3,}.*-{3,}\r?\n)([\w\-.=]+)(?:\r?\n-{3,}.*-{3,}(?:\r?\n|\Z)))")
_SEED_PREFIX = b"SU"  # user seeds; operators/accounts (SO/SA) never log in as clients


def _read_source(source: str | bytes | Path) -> bytes:
    """Raw credential text: ``source`` itself when it looks like key material, else a file's content."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, Path):
        return source.read_bytes()
    stripped = source.strip()
    if "-----" in stripped or _looks_like_seed(stripped.encode()):
        return stripped.encode()
    return Path(source).expanduser().read_bytes()


def _looks_like_seed(data: bytes) -> bool:
    return len(data) == 58 and data[:1] == b"S" and data.isalnum()


def load_seed(source: str | bytes | Path) -> bytes:
    """A user nkey seed given as the seed itself or as a file that contains it on its own line."""
    data = _read_source(source)
    if b"-----" in data:
        return parse_creds(data)[1]
    for line in data.splitlines():
        line = line.strip()
        if line.startswith(b"S") and _looks_like_seed(line):
            return line
    raise AuthorizationError("no nkey seed found in the given nkeys_seed")


def parse_creds(data: bytes) -> tuple[str, bytes]:
    """``(user JWT, user seed)`` from the text of a ``.creds`` file."""
    blocks = _CREDS_BLOCK.findall(data)
    if len(blocks) < 2:
        raise AuthorizationError("invalid credentials: expected a user JWT block and an nkey seed block")
    jwt, seed = blocks[0].decode(), blocks[1]
    if not seed.startswith(b"S"):
        raise AuthorizationError("invalid credentials: the second block is not an nkey seed")
    return jwt, seed


def load_creds(source: str | bytes | Path) -> tuple[str, bytes]:
    """``(user JWT, user seed)`` from a creds file path or the creds text itself."""
    return parse_creds(_read_source(source))


def sign_nonce(seed: bytes, nonce: str) -> str:
    """The CONNECT ``sig``: ed25519 signature of the nonce, base64url without padding."""
    try:
        kp = nkeys.from_seed(bytearray(seed))
    except nkeys.NkeysError as exc:
        raise AuthorizationError(f"invalid nkey seed: {exc}") from exc
    signature = kp.sign(nonce.encode())
    return base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


def public_key(seed: bytes) -> str:
    """The public nkey (``U…``) belonging to a seed."""
    try:
        return nkeys.from_seed(bytearray(seed)).public_key.decode()
    except nkeys.NkeysError as exc:
        raise AuthorizationError(f"invalid nkey seed: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a client presents in CONNECT. URL userinfo is folded in by the server pool."""

    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkeys_seed: str | bytes | Path | None = None
    user_credentials: str | bytes | Path | None = None

    def connect_fields(self, nonce: str | None) -> dict[str, Any]:
        """The auth members of the CONNECT JSON for a server that sent ``nonce`` (or none)."""
        fields: dict[str, Any] = {}
        if self.user_credentials is not None:
            jwt, seed = load_creds(self.user_credentials)
            fields["jwt"] = jwt
            if nonce is not None:
                fields["sig"] = sign_nonce(seed, nonce)
        elif self.nkeys_seed is not None:
            seed = load_seed(self.nkeys_seed)
            fields["nkey"] = public_key(seed)
            if nonce is not None:
                fields["sig"] = sign_nonce(seed, nonce)
        if self.token is not None:
            fields["auth_token"] = self.token
        if self.user is not None:
            fields["user"] = self.user
            fields["pass"] = self.password or ""
        return fields


__all__ = ["Credentials", "load_creds", "load_seed", "parse_creds", "public_key", "sign_nonce"]
