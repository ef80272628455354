"""NATS JWTs (v2): operator, account and user claims signed with nkeys (nats-io/jwt ``v2``).

A NATS JWT is ``base64url(header).base64url(claims).base64url(signature)`` with the header
``{"typ":"JWT","alg":"ed25519-nkey"}``; the signature is the issuer's ed25519 signature of the
first two parts, ``iss`` is the issuer's public nkey, ``sub`` the subject's, ``jti`` the
unpadded base32 SHA-512/256 of the claims without ``jti``, and ``nats`` holds the typed part
(``type`` ``operator``/``account``/``user``, ``version`` 2, limits, permissions, signing keys …).

Claims are plain dicts with the Go field names, so every field nats-server reads is available
without a model per claim kind. The nkeys package (already a dependency) signs and verifies;
the PyPI ``nats-jwt`` package would add pycryptodome, dataclasses-json, dacite and an old pytz
pin for the same few lines.

``.creds`` files (``-----BEGIN NATS USER JWT-----`` …) are written by `format_creds`; the
client reads them with `pyjetstream.client.auth.parse_creds`.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import nkeys

__all__ = [
    "JWTError",
    "decode",
    "encode",
    "format_creds",
    "new_account_key",
    "new_operator_key",
    "new_user_key",
    "nkey_crc16",
    "public_key_bytes",
    "verify",
    "verify_signature",
]

_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}
_OLD_ALG = "ed25519"


class JWTError(ValueError):
    """A token that cannot be decoded or whose signature does not verify."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise JWTError(f"bad base64: {exc}") from None


def _new_key(prefix: int) -> nkeys.KeyPair:
    import os

    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    raw = os.urandom(32)
    return nkeys.from_seed(nkeys.encode_seed(raw, prefix))


def new_operator_key() -> nkeys.KeyPair:
    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    return _new_key(nkeys.PREFIX_BYTE_OPERATOR)


def new_account_key() -> nkeys.KeyPair:
    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    return _new_key(nkeys.PREFIX_BYTE_ACCOUNT)


def new_user_key() -> nkeys.KeyPair:
    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    return _new_key(nkeys.PREFIX_BYTE_USER)


def _public(key: nkeys.KeyPair | str) -> str:
    if isinstance(key, str):
        return key
    pub = key.public_key
    return pub.decode() if isinstance(pub, bytes) else str(pub)


def encode(
    kind: str,
    subject: nkeys.KeyPair | str,
    issuer: nkeys.KeyPair,
    name: str = "",
    nats: dict[str, Any] | None = None,
    expires: int = 0,
    issued_at: int | None = None,
) -> str:
    """Sign a JWT of ``kind`` (``operator``, ``account``, ``user``) for ``subject`` by ``issuer``."""
    claims: dict[str, Any] = {"jti": "", "iat": int(time.time()) if issued_at is None else issued_at}
    claims["iss"] = _public(issuer)
    if name:
        claims["name"] = name
    claims["sub"] = _public(subject)
    if expires:
        claims["exp"] = expires
    body = dict(nats or {})
    body["type"] = kind
    body["version"] = 2
    claims["nats"] = body
    without_jti = {k: v for k, v in claims.items() if k != "jti"}
    import hashlib  # deferred: only signing a JWT needs it (a server's start imports no hashlib)

    digest = hashlib.new("sha512_256", json.dumps(without_jti, separators=(",", ":")).encode()).digest()
    claims["jti"] = base64.b32encode(digest).rstrip(b"=").decode()
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{head}.{payload}".encode()
    return f"{head}.{payload}.{_b64(issuer.sign(signing_input))}"


def decode(token: str) -> dict[str, Any]:
    """The claims of a token, without checking its signature (see `verify`)."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise JWTError("expected 3 chunks")
    try:
        header = json.loads(_unb64(parts[0]))
        claims = json.loads(_unb64(parts[1]))
    except json.JSONDecodeError as exc:
        raise JWTError(f"bad JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("alg") not in (_HEADER["alg"], _OLD_ALG):
        raise JWTError("unexpected algorithm")
    if not isinstance(claims, dict) or not isinstance(claims.get("nats", {}), dict):
        raise JWTError("claims are not an object")
    return claims


def verify(token: str, kind: str | None = None) -> dict[str, Any]:
    """Decode ``token`` and check that its ``iss`` signed it (and that it is of ``kind``)."""
    claims = decode(token)
    head, payload, sig = token.strip().split(".")
    issuer = claims.get("iss")
    if not isinstance(issuer, str):
        raise JWTError("no issuer")
    if not verify_signature(issuer, f"{head}.{payload}".encode(), _unb64(sig)):
        raise JWTError("signature does not verify")
    if kind is not None and claims.get("nats", {}).get("type") != kind:
        raise JWTError(f"not an {kind} JWT")
    return claims


def nkey_crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021), the checksum nkeys appends to an encoded key (nkeys ``crc16``)."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def public_key_bytes(public_key: str) -> tuple[int, bytes] | None:
    """``(prefix byte, ed25519 key)`` of a public nkey (``U…``, ``A…``, ``O…``), None if malformed."""
    try:
        raw = base64.b32decode(public_key + "=" * (-len(public_key) % 8))
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 35 or int.from_bytes(raw[-2:], "little") != nkey_crc16(raw[:-2]):
        return None
    return raw[0], raw[1:33]


def verify_signature(public_key: str, data: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is the ed25519 signature of ``data`` by the public nkey."""
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    decoded = public_key_bytes(public_key)
    if decoded is None:
        return False
    try:
        VerifyKey(decoded[1]).verify(data, signature)
    except (BadSignatureError, ValueError):
        return False
    return True


def format_creds(user_jwt: str, seed: bytes | str) -> str:
    """The text of a ``.creds`` file, as ``nsc generate creds`` writes it."""
    seed_text = seed.decode() if isinstance(seed, bytes) else seed
    return (
        "-----BEGIN NATS USER JWT-----\n"
        f"{user_jwt}\n"
        "------END NATS USER JWT------\n\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{seed_text}\n"
        "------END USER NKEY SEED------\n\n"
        "*************************************************************\n"
    )
