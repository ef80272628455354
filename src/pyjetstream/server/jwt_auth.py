"""Operator mode: decentralized JWT authentication (nats-server ``jwt.go``, ``auth.go``, ``accounts.go``).

The configuration trusts one or more operator JWTs. Account JWTs, signed by an operator (or one of
its signing keys), come from the resolver: ``MEMORY`` (the ``resolver_preload`` map) or the full
``nats`` resolver (``resolver { type: full, dir: … }``: one ``<account public key>.jwt`` file per
account, kept up to date by ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE`` requests from the system
account). Accounts are named by their public key.

A client CONNECTs with its user JWT and the ed25519 signature of the INFO nonce by the user key
(both from a ``.creds`` file); a ``bearer_token`` user JWT needs no signature. The user JWT must be
signed by its account (or one of the account's signing keys, naming the account in
``issuer_account``), unexpired and not revoked by the account. Its ``pub``/``sub``/``resp``
permissions and ``subs``/``payload`` limits apply to the connection; the account JWT's limits
(``conn``, ``subs``, ``payload``, and the JetStream ``mem_storage``/``disk_storage``/``streams``/
``consumer``) to the account. A connection is closed when its user JWT expires.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyjetstream.api.jwt import JWTError, verify, verify_signature
from pyjetstream.protocol.subjects import is_valid_publish_subject
from pyjetstream.server.options import (
    DEFAULT_ALLOW_RESPONSE_EXPIRATION,
    DEFAULT_ALLOW_RESPONSE_MAX_MSGS,
    AccountExport,
    AccountImport,
    AccountJetStreamLimits,
    AccountLimits,
    MapDest,
    Permissions,
    ResponsePermission,
    ServerOptions,
    SubjectPermission,
)
from pyjetstream.server.options import (
    Account as AccountConfig,
)
from pyjetstream.server.options import Mappings as MappingsConfig
from pyjetstream.server.sys_requests import server_info

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = ["JWTIdentity", "OperatorTrust"]


def _b64_sig(text: str) -> bytes | None:

    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.urlsafe_b64decode(padded)
    except (binascii.Error, ValueError):
        try:
            return base64.b64decode(padded)
        except (binascii.Error, ValueError):
            return None


def _signing_keys(nats: dict[str, Any]) -> set[str]:
    """Signing keys of an operator or account: plain keys or scoped ``{"key": …}`` objects."""
    keys = set()
    for entry in nats.get("signing_keys") or []:
        if isinstance(entry, str):
            keys.add(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("key"), str):
            keys.add(entry["key"])
    return keys


def _subject_permission(value: Any) -> SubjectPermission | None:
    if not isinstance(value, dict):
        return None
    allow, deny = value.get("allow"), value.get("deny")
    if not allow and not deny:
        return None
    return SubjectPermission(allow=list(allow) if allow else None, deny=list(deny) if deny else None)


def user_permissions(nats: dict[str, Any]) -> Permissions | None:
    """The ``pub``, ``sub`` and ``resp`` of a user JWT as configured permissions."""
    pub = _subject_permission(nats.get("pub"))
    sub = _subject_permission(nats.get("sub"))
    resp = nats.get("resp")
    response = None
    if isinstance(resp, dict):
        # nats-server: 0 means the defaults of allow_responses (one reply within two minutes)
        ttl = int(resp.get("ttl", 0) or 0)
        response = ResponsePermission(
            max_msgs=int(resp.get("max", 0) or 0) or DEFAULT_ALLOW_RESPONSE_MAX_MSGS,
            expires=ttl / 1e9 if ttl else DEFAULT_ALLOW_RESPONSE_EXPIRATION,
        )
    if pub is None and sub is None and response is None:
        return None
    return Permissions(publish=pub, subscribe=sub, response=response)


_JWT_RESPONSE_TYPES = {"Singleton": "singleton", "Stream": "stream", "Chunked": "chunked"}


def _jwt_export(entry: Any) -> AccountExport | None:
    """A public export of an account JWT (exports that need an activation token are not served)."""
    if not isinstance(entry, dict) or entry.get("token_req") or entry.get("type") not in ("stream", "service"):
        return None
    export = AccountExport(kind=entry["type"], subject=str(entry.get("subject", "")))
    export.response_type = _JWT_RESPONSE_TYPES.get(str(entry.get("response_type") or "Singleton"), "singleton")
    threshold = entry.get("response_threshold")
    if isinstance(threshold, int) and threshold > 0:
        export.response_threshold = threshold / 1e9
    export.allow_trace = export.kind == "service" and entry.get("allow_trace") is True
    return export


def _jwt_import(entry: Any) -> AccountImport | None:
    """An import of an account JWT: ``subject`` of ``account``, seen here as ``local_subject``
    (or, for streams, under the deprecated ``to`` prefix)."""
    if not isinstance(entry, dict) or entry.get("type") not in ("stream", "service") or entry.get("token"):
        return None
    imp = AccountImport(kind=entry["type"], account=str(entry.get("account", "")), subject=str(entry.get("subject", "")))
    local = str(entry.get("local_subject") or "")
    to = str(entry.get("to") or "")
    if imp.kind == "service":
        imp.to = local or to
    elif local:
        imp.to = local
    elif to:
        imp.prefix = to
    imp.allow_trace = imp.kind == "stream" and entry.get("allow_trace") is True
    imp.share = imp.kind == "service" and entry.get("share") is True  # nats-server addServiceImport: claim.Share
    return imp


def _jwt_mappings(value: Any) -> MappingsConfig:
    """An account JWT's ``mappings`` (``{subject: [{subject, weight, cluster}]}``): a weight of
    0 or none is 100 (jwt ``WeightedMapping.GetWeight``)."""
    out: MappingsConfig = {}
    if not isinstance(value, dict):
        return out
    for src, dests in value.items():
        if not isinstance(dests, list):
            continue
        out[str(src)] = [
            MapDest(subject=str(d.get("subject", "")), weight=int(d.get("weight") or 100), cluster=str(d.get("cluster", "")))
            for d in dests
            if isinstance(d, dict)
        ]
    return out


def account_config(public_key: str, claims: dict[str, Any]) -> AccountConfig:
    """An account's configuration from its JWT (connection and JetStream limits)."""
    limits = (claims.get("nats") or {}).get("limits") or {}
    config = AccountConfig(name=public_key)
    config.limits = AccountLimits(
        max_connections=int(limits.get("conn", -1)),
        max_subscriptions=int(limits.get("subs", -1)),
        max_payload=int(limits.get("payload", -1)),
        max_leafnodes=int(limits.get("leaf", -1)),
    )
    nats = claims.get("nats") or {}
    config.exports = [e for e in (_jwt_export(x) for x in nats.get("exports") or []) if e is not None]
    config.imports = [i for i in (_jwt_import(x) for x in nats.get("imports") or []) if i is not None]
    config.mappings = _jwt_mappings(nats.get("mappings"))
    trace = nats.get("trace")
    if isinstance(trace, dict):  # nats-server updateAccountClaimsWithRefresh: an invalid one is none
        dest, sampling = trace.get("dest"), trace.get("sampling")
        if isinstance(dest, str) and is_valid_publish_subject(dest):
            config.msg_trace_dest = dest
            config.msg_trace_sampling = sampling if isinstance(sampling, int) and 0 < sampling <= 100 else 100
    js_limits = _jwt_jetstream_limits(limits)
    if js_limits is not None:
        config.jetstream = True
        config.jetstream_limits = js_limits
    return config


def _jwt_js_tier(limits: dict[str, Any]) -> AccountJetStreamLimits:
    """One set of a JWT's JetStream limits as nats-server's ``updateAccountClaimsWithRefresh``
    takes it (jwt.JetStreamLimits: ``toUnlimited`` turns the max stream bytes and max ack pending
    that are not positive into -1)."""

    def unlimited(key: str) -> int:
        value = int(limits.get(key, 0) or 0)
        return value if value > 0 else -1

    return AccountJetStreamLimits(
        max_memory=int(limits.get("mem_storage", 0) or 0),
        max_store=int(limits.get("disk_storage", 0) or 0),
        max_streams=int(limits.get("streams", 0) or 0),
        max_consumers=int(limits.get("consumer", 0) or 0),
        max_ack_pending=unlimited("max_ack_pending"),
        memory_max_stream_bytes=unlimited("mem_max_stream_bytes"),
        store_max_stream_bytes=unlimited("disk_max_stream_bytes"),
        max_bytes_required=bool(limits.get("max_bytes_required", False)),
    )


def _jwt_jetstream_limits(limits: dict[str, Any]) -> AccountJetStreamLimits | None:
    """The account's JetStream limits, None when JetStream is off (jwt ``OperatorLimits.IsJSEnabled``:
    a storage limit that is not 0, in the plain limits or, when the JWT has ``tiered_limits``,
    in one of its tiers; then the plain limits are ignored and each tier is its own)."""
    tiered = limits.get("tiered_limits") or {}
    if isinstance(tiered, dict) and tiered:
        tiers = {str(t): _jwt_js_tier(v) for t, v in tiered.items() if isinstance(v, dict)}
        if not any(t.max_memory or t.max_store for t in tiers.values()):
            return None
        return AccountJetStreamLimits(tiers=tiers)
    plain = _jwt_js_tier(limits)
    return plain if plain.max_memory or plain.max_store else None


@dataclass
class JWTIdentity:
    """What a user JWT grants a connection."""

    user: str
    account: str
    permissions: Permissions | None = None
    max_subs: int = -1
    max_payload: int = -1
    expires: int = 0  # unix seconds, 0 = never
    issued_at: int = 0
    name: str = ""


@dataclass
class OperatorTrust:
    """The trusted operators and the account JWTs the resolver knows."""

    options: ServerOptions
    trusted: set[str] = field(default_factory=set)
    accounts: dict[str, str] = field(default_factory=dict)  # public key -> account JWT
    system_account: str = ""

    def __post_init__(self) -> None:
        for token in self.options.operator_jwts:
            claims = verify(token, "operator")
            self.trusted.add(claims["sub"])
            nats = claims.get("nats") or {}
            self.trusted |= _signing_keys(nats)
            if not self.system_account and isinstance(nats.get("system_account"), str):
                self.system_account = nats["system_account"]
        for pub, token in self.options.resolver_preload.items():
            self._store(pub, token, persist=False)
        if self.options.resolver == "FULL" and self.options.resolver_dir:
            os.makedirs(self.options.resolver_dir, exist_ok=True)
            for name in sorted(os.listdir(self.options.resolver_dir)):
                if name.endswith(".jwt"):
                    with open(os.path.join(self.options.resolver_dir, name), encoding="utf-8") as fh:
                        self._store(name[:-4], fh.read().strip(), persist=False)

    @property
    def enabled(self) -> bool:
        return bool(self.options.operator_jwts)

    # ------------------------------------------------------------------------ accounts

    def account_claims(self, public_key: str) -> dict[str, Any] | None:
        token = self.accounts.get(public_key)
        if token is None:
            return None
        try:
            return self.check_account_jwt(token)
        except JWTError:
            return None

    def check_account_jwt(self, token: str) -> dict[str, Any]:
        """A verified account JWT issued by a trusted operator key (raises JWTError)."""
        claims = verify(token, "account")
        if claims.get("iss") not in self.trusted:
            raise JWTError("account JWT not signed by a trusted operator")
        exp = claims.get("exp")
        if exp and exp < time.time():
            raise JWTError("account JWT expired")
        return claims

    def _store(self, pub: str, token: str, persist: bool) -> dict[str, Any]:
        claims = self.check_account_jwt(token)
        if claims.get("sub") != pub:
            raise JWTError("account JWT subject does not match")
        self.accounts[pub] = token
        if persist and self.options.resolver == "FULL" and self.options.resolver_dir:
            path = os.path.join(self.options.resolver_dir, f"{pub}.jwt")
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(token)
            os.replace(tmp, path)
        return claims

    def update(self, token: str) -> dict[str, Any]:
        """``CLAIMS.UPDATE``: take a newer account JWT (raises JWTError)."""
        claims = self.check_account_jwt(token)
        return self._store(claims["sub"], token, persist=True)

    # --------------------------------------------------------------------------- users

    def authenticate(self, connect: dict[str, Any], nonce: str) -> JWTIdentity | None:
        """The identity a CONNECT's user JWT proves, or None (Authorization Violation)."""
        token = connect.get("jwt")
        if not isinstance(token, str) or not token:
            return None
        try:
            claims = verify(token, "user")
        except JWTError:
            return None
        nats = claims.get("nats") or {}
        now = time.time()
        exp = claims.get("exp") or 0
        if exp and exp < now:
            return None
        issuer = claims.get("iss", "")
        account_key = nats.get("issuer_account") or issuer
        account = self.account_claims(account_key)
        if account is None:
            return None
        account_nats = account.get("nats") or {}
        if issuer != account_key and issuer not in _signing_keys(account_nats):
            return None
        user_key = claims.get("sub", "")
        if self.revoked(account_nats, user_key, int(claims.get("iat", 0))):
            return None
        if not nats.get("bearer_token"):
            sig = _b64_sig(str(connect.get("sig") or ""))
            if sig is None or not nonce or not verify_signature(user_key, nonce.encode(), sig):
                return None
        return JWTIdentity(
            user=user_key,
            account=account_key,
            permissions=user_permissions(nats),
            max_subs=int(nats.get("subs", -1)),
            max_payload=int(nats.get("payload", -1)),
            expires=int(exp),
            issued_at=int(claims.get("iat", 0)),
            name=str(claims.get("name", "")),
        )

    @staticmethod
    def revoked(account_nats: dict[str, Any], user_key: str, issued_at: int) -> bool:
        """nats-server ``isRevoked``: a user JWT issued at or before the revocation time."""
        revocations = account_nats.get("revocations") or {}
        for key in (user_key, "*"):
            when = revocations.get(key)
            if isinstance(when, int) and issued_at <= when:
                return True
        return False


class ClaimsUpdates:
    """``$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE`` and ``$SYS.REQ.CLAIMS.UPDATE`` in the system account."""

    def __init__(self, server: Server, system: Account) -> None:
        self.server = server
        self.system = system

    def subscribe(self) -> None:
        self.system.subscribe_internal("$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE", self.on_update)
        self.system.subscribe_internal("$SYS.REQ.CLAIMS.UPDATE", self.on_update)

    def on_update(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        """nats-server ``updateAccountClaimsWithRefresh``: the full resolver stores and applies a
        newer JWT ("jwt updated"); the MEMORY resolver is static ("jwt update skipped"); a bad
        token is a 500 "jwt update resulted in error - <reason>"."""
        server = self.server
        trust: OperatorTrust = server.authenticator.trust
        tokens = subject.split(".")
        account = tokens[3] if len(tokens) == 6 else ""
        token = payload.decode(errors="replace").strip()
        try:
            claims = trust.check_account_jwt(token)
            pub = claims["sub"]
            account = account or pub
            if pub != account:
                raise JWTError("subject does not match account")
            if self.server.options.resolver != "FULL":
                self._respond(reply, {"data": {"account": pub, "code": 200, "message": "jwt update skipped"}})
                return
            trust.update(token)
        except (JWTError, KeyError) as exc:
            description = f"jwt update resulted in error - {exc}"
            self._respond(reply, {"error": {"account": account, "code": 500, "description": description}})
            return
        server.account_claims_updated(pub, claims)
        self._respond(reply, {"data": {"account": pub, "code": 200, "message": "jwt updated"}})

    def _respond(self, reply: str, body: dict[str, Any]) -> None:
        """nats-server's ``ServerAPIResponse``: the ``server`` block (``ServerInfo``), then the body."""
        if not reply:
            return
        out = {"server": server_info(self.server), **body}
        self.system.publish_internal(reply, json.dumps(out, separators=(",", ":")).encode())
