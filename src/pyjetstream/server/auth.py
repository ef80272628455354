"""Client authentication on CONNECT: token, user/password (plain or bcrypt), users list, nkeys, no_auth_user.

Mirrors nats-server's ``processClientOrLeafAuthentication`` for the non-JWT cases:

- with a users list, the CONNECT ``user`` picks the user and ``pass`` must match its password; a
  client that sends no credentials at all gets the ``no_auth_user`` identity when one is set;
- otherwise a configured ``token`` must equal ``auth_token``, or the single configured
  ``user``/``password`` must match.

NKey users prove their identity by signing the per-connection ``nonce`` the server put in INFO
(ed25519, the signature in base64url); nats-server's ``nonceLen`` is 11 random bytes.

Bcrypt verification takes tens of milliseconds by design, so `Authenticator.check` returns
either a decision or a `PendingCheck` that the connection runs in a worker thread.
Successful bcrypt checks are remembered (as a keyed digest, never the password) so a reconnect
storm does not pay for them again.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

from msgspec import Struct

from pyjetstream.api.jwt import public_key_bytes
from pyjetstream.server.options import Permissions, ServerOptions, User, is_bcrypt_hash, password_matches
from pyjetstream.server.tls import cert_identities, dn_pairs, subject_pairs

__all__ = ["AuthDecision", "Authenticator", "PendingCheck", "new_nonce", "verify_nkey_signature"]

_BCRYPT_CACHE_MAX = 1024
_NONCE_BYTES = 11
_PREFIX_BYTE_USER = 20 << 3  # nkeys: public user keys start with "U"


def new_nonce() -> str:
    return base64.urlsafe_b64encode(os.urandom(_NONCE_BYTES)).rstrip(b"=").decode()


def _b64decode(text: str) -> bytes:
    """nats-server accepts a raw base64url signature and falls back to standard base64."""
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.urlsafe_b64decode(padded)
    except (binascii.Error, ValueError):
        return base64.b64decode(padded)


def verify_nkey_signature(public_key: str, nonce: str, signature: str) -> bool:
    """Whether ``signature`` is the user key's ed25519 signature of ``nonce``."""
    # PyNaCl is slow to load; only nkey users need it (start-up speed).
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    try:
        sig = _b64decode(signature)
    except (binascii.Error, ValueError):
        return False
    decoded = public_key_bytes(public_key)
    if decoded is None or decoded[0] != _PREFIX_BYTE_USER:
        return False
    try:
        VerifyKey(decoded[1]).verify(nonce.encode(), sig)
    except (BadSignatureError, ValueError):
        return False
    return True


class AuthDecision(Struct):
    """The outcome of authenticating one CONNECT (nats-server ``checkAuthentication``): who, in which account."""

    ok: bool
    user: str = ""
    #: The account the identity belongs to ("" for the global account).
    account: str = ""
    #: Operator mode: what the user JWT grants (a ``jwt_auth.JWTIdentity``).
    identity: Any = None


class PendingCheck(Struct):
    """A bcrypt comparison still to run; ``run()`` is blocking (call it off the event loop)."""

    authenticator: Authenticator
    stored: str
    given: str
    user: str

    account: str = ""

    def run(self) -> AuthDecision:
        ok = self.authenticator.verify_bcrypt(self.stored, self.given)
        return AuthDecision(ok, self.user, self.account)


class Authenticator:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.users: dict[str, User] = {u.username: u for u in options.users}
        self.nkeys = {n.nkey for n in options.nkeys}
        self.nkey_accounts = {n.nkey: n.account for n in options.nkeys}
        # Users and nkeys with permissions (default_permissions already applied by the config).
        self.permissions: dict[str, Permissions] = {
            n.nkey: n.permissions for n in options.nkeys if n.permissions is not None
        }
        self.permissions.update(
            (u.username, u.permissions) for u in options.users if u.permissions is not None
        )
        #: Operator mode: the trusted operators and the resolver's account JWTs.
        self.trust: Any = None
        if options.operator_jwts:
            # Deferred: start-up imports only what the options use (operator mode).
            from pyjetstream.server.jwt_auth import OperatorTrust

            self.trust = OperatorTrust(options)
        # INFO carries a nonce (to be signed) only when someone can authenticate with an nkey.
        self.uses_nonce = bool(self.nkeys) or self.trust is not None
        self.required = options.auth_required
        # INFO advertises auth_required only when a client without credentials cannot get in.
        self.info_auth_required = self.required and not options.no_auth_user
        self._cache_key = os.urandom(16)
        self._verified: set[bytes] = set()

    def adopt_cache(self, previous: Authenticator) -> None:
        """A configuration reload: keep the bcrypt checks already made (a hash and a password that
        matched still match), so that re-checking the connected clients costs no bcrypt run."""
        self._cache_key = previous._cache_key
        self._verified = previous._verified

    @property
    def maps_certificates(self) -> bool:
        """``tls { verify_and_map: true }``: a client's certificate names its user."""
        tls = self.options.tls
        return tls is not None and tls.verify_and_map

    def check_certificate(self, peercert: dict[str, Any]) -> AuthDecision:
        """The user a verified client certificate maps to (nats-server ``checkClientTLSCertSubject``):
        an e-mail, DNS or URI SAN naming a user, else a user whose name is the subject DN."""

        for name in cert_identities(peercert):
            user = self.users.get(name)
            if user is not None:
                return AuthDecision(True, name, user.account)
        subject = subject_pairs(peercert)
        for name, user in self.users.items():
            if dn_pairs(name) == subject:
                return AuthDecision(True, name, user.account)
        cn = next((v for k, v in subject if k == "CN"), "")
        return AuthDecision(False, cn)

    def check(
        self, connect: dict[str, Any], nonce: str = "", peercert: dict[str, Any] | None = None
    ) -> AuthDecision | PendingCheck:
        """Decide on a CONNECT's credentials (``connect`` is the CONNECT JSON object, ``nonce`` the
        one this connection's INFO carried, ``peercert`` the verified TLS client certificate)."""
        if peercert and self.maps_certificates:
            return self.check_certificate(peercert)
        if not self.required:
            return AuthDecision(True, str(connect.get("user") or ""))
        if self.trust is not None:
            identity = self.trust.authenticate(connect, nonce)
            if identity is None:
                return AuthDecision(False, str(connect.get("user") or ""))
            return AuthDecision(True, identity.user, identity.account, identity)
        opts = self.options
        user_name = str(connect.get("user") or "")
        password = str(connect.get("pass") or "")
        token = str(connect.get("auth_token") or "")
        if self.users or opts.nkeys:
            if connect.get("jwt"):
                return AuthDecision(False, user_name)  # JWT (operator mode) is not supported
            nkey = str(connect.get("nkey") or "")
            if nkey:
                ok = bool(nonce) and nkey in self.nkeys
                ok = ok and verify_nkey_signature(nkey, nonce, str(connect.get("sig") or ""))
                return AuthDecision(ok, nkey, self.nkey_accounts.get(nkey, ""))
            if user_name:
                user = self.users.get(user_name)
                if user is None:
                    return AuthDecision(False, user_name)
                return self._compare(user.password, password, user_name, user.account)
            if opts.no_auth_user and not password and not token:
                user = self.users.get(opts.no_auth_user)
                if user is not None:
                    return AuthDecision(True, opts.no_auth_user, user.account)
                account = self.nkey_accounts.get(opts.no_auth_user)
                return AuthDecision(account is not None, opts.no_auth_user, account or "")
            return AuthDecision(False, user_name)
        if opts.token:
            return self._compare(opts.token, token, "")
        if opts.username:
            if user_name != opts.username:
                return AuthDecision(False, user_name)
            return self._compare(opts.password, password, user_name)
        return AuthDecision(False, user_name)

    def permissions_for(self, decision: AuthDecision) -> Permissions | None:
        """The permissions of an authenticated identity (a user or nkey of the users list)."""
        if not self.required or not self.permissions or not (self.users or self.nkeys):
            return None
        return self.permissions.get(decision.user)

    def _compare(self, stored: str, given: str, user: str, account: str = "") -> AuthDecision | PendingCheck:
        if is_bcrypt_hash(stored):
            if self._digest(stored, given) in self._verified:
                return AuthDecision(True, user, account)
            return PendingCheck(self, stored, given, user, account)
        return AuthDecision(password_matches(stored, given), user, account)

    def _digest(self, stored: str, given: str) -> bytes:
        import hashlib  # deferred with hmac: only bcrypt hashes are remembered
        import hmac

        return hmac.new(self._cache_key, f"{stored}\0{given}".encode(), hashlib.sha256).digest()

    def verify_bcrypt(self, stored: str, given: str) -> bool:
        import bcrypt  # slow to import; only configurations with hashes need it

        try:
            ok = bcrypt.checkpw(given.encode(), stored.encode())
        except ValueError:
            return False
        if ok:
            if len(self._verified) >= _BCRYPT_CACHE_MAX:
                self._verified.clear()
            self._verified.add(self._digest(stored, given))
        return ok
