"""Client authentication on CONNECT: token, user/password (plain or bcrypt), users list, no_auth_user.

Mirrors nats-server's ``processClientOrLeafAuthentication`` for the non-JWT cases:

- with a users list, the CONNECT ``user`` picks the user and ``pass`` must match its password; a
  client that sends no credentials at all gets the ``no_auth_user`` identity when one is set;
- otherwise a configured ``token`` must equal ``auth_token``, or the single configured
  ``user``/``password`` must match.

Bcrypt verification takes tens of milliseconds by design, so :meth:`Authenticator.check` returns
either a decision or a :class:`PendingCheck` that the connection runs in a worker thread.
Successful bcrypt checks are remembered (as a keyed digest, never the password) so a reconnect
storm does not pay for them again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

from pyjetstream.server.options import ServerOptions, User, is_bcrypt_hash

__all__ = ["AuthDecision", "Authenticator", "PendingCheck"]

_BCRYPT_CACHE_MAX = 1024


@dataclass(slots=True)
class AuthDecision:
    ok: bool
    user: str = ""


@dataclass(slots=True)
class PendingCheck:
    """A bcrypt comparison still to run; ``run()`` is blocking (call it off the event loop)."""

    authenticator: Authenticator
    stored: str
    given: str
    user: str

    def run(self) -> AuthDecision:
        return AuthDecision(self.authenticator.verify_bcrypt(self.stored, self.given), self.user)


class Authenticator:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.users: dict[str, User] = {u.username: u for u in options.users}
        self.required = options.auth_required
        # INFO advertises auth_required only when a client without credentials cannot get in.
        self.info_auth_required = self.required and not options.no_auth_user
        self._cache_key = os.urandom(16)
        self._verified: set[bytes] = set()

    def check(self, connect: dict[str, Any]) -> AuthDecision | PendingCheck:
        """Decide on a CONNECT's credentials (``connect`` is the CONNECT JSON object)."""
        if not self.required:
            return AuthDecision(True, str(connect.get("user") or ""))
        opts = self.options
        user_name = str(connect.get("user") or "")
        password = str(connect.get("pass") or "")
        token = str(connect.get("auth_token") or "")
        if self.users or opts.nkeys:
            if connect.get("nkey") or connect.get("jwt"):
                return AuthDecision(False, user_name)  # nkey/JWT authentication is not supported
            if user_name:
                user = self.users.get(user_name)
                if user is None:
                    return AuthDecision(False, user_name)
                return self._compare(user.password, password, user_name)
            if opts.no_auth_user and not password and not token:
                return AuthDecision(opts.no_auth_user in self.users, opts.no_auth_user)
            return AuthDecision(False, user_name)
        if opts.token:
            return self._compare(opts.token, token, "")
        if opts.username:
            if user_name != opts.username:
                return AuthDecision(False, user_name)
            return self._compare(opts.password, password, user_name)
        return AuthDecision(False, user_name)

    def _compare(self, stored: str, given: str, user: str) -> AuthDecision | PendingCheck:
        if is_bcrypt_hash(stored):
            if self._digest(stored, given) in self._verified:
                return AuthDecision(True, user)
            return PendingCheck(self, stored, given, user)
        return AuthDecision(hmac.compare_digest(stored.encode(), given.encode()), user)

    def _digest(self, stored: str, given: str) -> bytes:
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
