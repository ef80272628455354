"""An operator with accounts and users made in the tests (what ``nsc`` would make): JWTs signed with
fresh nkeys, ``.creds`` files, and the server settings for operator mode on both targets."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nkeys

from pyjetstream.api import jwt

__all__ = ["JS_UNLIMITED", "Operator", "sign_nonce"]

#: Account limits that turn JetStream on without limits (nsc ``--js-mem-storage -1`` …).
JS_UNLIMITED = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
_OPEN_LIMITS = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1}


def _pub(key: nkeys.KeyPair) -> str:
    return key.public_key.decode()


def sign_nonce(seed: bytes, nonce: str) -> str:
    return base64.urlsafe_b64encode(nkeys.from_seed(seed).sign(nonce.encode())).rstrip(b"=").decode()


@dataclass
class Operator:
    folder: Path
    key: nkeys.KeyPair = field(default_factory=jwt.new_operator_key)
    accounts: dict[str, tuple[nkeys.KeyPair, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.account("SYS")

    @property
    def jwt(self) -> str:
        return jwt.encode("operator", self.key, self.key, "OP", {"system_account": self.pub("SYS")})

    def pub(self, account: str) -> str:
        return _pub(self.accounts[account][0])

    def account(self, name: str, limits: dict[str, Any] | None = None, **nats: Any) -> str:
        """Create (or re-sign, keeping its key) an account; returns its JWT."""
        key = self.accounts[name][0] if name in self.accounts else jwt.new_account_key()
        body = {"limits": {**_OPEN_LIMITS, **(limits or {})}, **nats}
        token = jwt.encode("account", key, self.key, name, body)
        self.accounts[name] = (key, token)
        return token

    def user(
        self, account: str, name: str, expires: int = 0, issued_at: int | None = None, **nats: Any
    ) -> tuple[Path, str, bytes]:
        """A user of ``account``: ``(creds path, user JWT, seed)``."""
        user = jwt.new_user_key()
        body = {"subs": -1, "data": -1, "payload": -1, **nats}
        token = jwt.encode("user", user, self.accounts[account][0], name, body, expires, issued_at)
        path = self.folder / f"{account}-{name}.creds"
        path.write_text(jwt.format_creds(token, user.seed))
        return path, token, user.seed

    def settings(self, resolver_dir: Path | None = None) -> dict[str, Any]:
        """Server settings: the operator, the system account, and a MEMORY (or full) resolver."""
        settings: dict[str, Any] = {"operator": self.jwt, "system_account": self.pub("SYS")}
        if resolver_dir is None:
            settings["resolver"] = "MEMORY"
            settings["resolver_preload"] = {_pub(k): t for k, t in self.accounts.values()}
        else:
            resolver_dir.mkdir(parents=True, exist_ok=True)
            for key, token in self.accounts.values():
                (resolver_dir / f"{_pub(key)}.jwt").write_text(token)
            settings["resolver"] = {"type": "full", "dir": str(resolver_dir), "allow_delete": False}
        return settings


def now() -> int:
    return int(time.time())
