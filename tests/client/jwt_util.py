"""Build NATS operator/account/user JWTs (nats-io/jwt v2 claims) with the nkeys package, for tests.

A JWT is ``b64url(header).b64url(claims).b64url(ed25519 signature of the first two parts)`` with
header ``{"typ":"JWT","alg":"ed25519-nkey"}``; ``jti`` is the base32 SHA-512/256 of the claims.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import nkeys


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Identity:
    seed: bytes
    public: str

    @classmethod
    def new(cls, prefix: int) -> Identity:
        seed = nkeys.encode_seed(os.urandom(32), prefix)
        return cls(seed=seed, public=nkeys.from_seed(bytearray(seed)).public_key.decode())

    def sign(self, data: bytes) -> bytes:
        return nkeys.from_seed(bytearray(self.seed)).sign(data)


def encode_jwt(issuer: Identity, subject: str, name: str, nats: dict[str, Any]) -> str:
    claims: dict[str, Any] = {"iat": int(time.time()), "iss": issuer.public, "name": name, "sub": subject}
    claims["nats"] = nats
    digest = hashlib.new("sha512_256", json.dumps(claims, separators=(",", ":")).encode()).digest()
    claims["jti"] = base64.b32encode(digest).rstrip(b"=").decode()
    header = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{body}".encode()
    return f"{header}.{body}.{_b64(issuer.sign(signing_input))}"


UNLIMITED = {"subs": -1, "data": -1, "payload": -1}


@dataclass
class OperatorSetup:
    operator: Identity
    account: Identity
    user: Identity
    operator_jwt: str
    account_jwt: str
    user_jwt: str

    def creds(self) -> str:
        """A ``.creds`` file's text, in nsc's layout."""
        return (
            "-----BEGIN NATS USER JWT-----\n"
            f"{self.user_jwt}\n"
            "------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n"
            f"{self.user.seed.decode()}\n"
            "------END USER NKEY SEED------\n\n"
            "*************************************************************\n"
        )

    def server_settings(self) -> dict[str, Any]:
        return {
            "operator": self.operator_jwt,
            "resolver": "MEMORY",
            "resolver_preload": {self.account.public: self.account_jwt},
        }


def operator_setup() -> OperatorSetup:
    op = Identity.new(nkeys.PREFIX_BYTE_OPERATOR)
    acc = Identity.new(nkeys.PREFIX_BYTE_ACCOUNT)
    user = Identity.new(nkeys.PREFIX_BYTE_USER)
    op_jwt = encode_jwt(op, op.public, "op", {"type": "operator", "version": 2})
    acc_jwt = encode_jwt(
        op,
        acc.public,
        "acc",
        {
            "limits": {**UNLIMITED, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1},
            "default_permissions": {"pub": {}, "sub": {}},
            "type": "account",
            "version": 2,
        },
    )
    user_jwt = encode_jwt(
        acc, user.public, "user", {"pub": {}, "sub": {}, **UNLIMITED, "type": "user", "version": 2}
    )
    return OperatorSetup(op, acc, user, op_jwt, acc_jwt, user_jwt)
