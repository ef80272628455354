"""The system imports nats-server gives every account (``events.go``: ``addSystemAccountExports``,
``registerSystemImports``), so that any user can ask about its own account:

- ``$SYS.REQ.SERVER.PING.CONNZ`` and ``$SYS.REQ.ACCOUNT.PING.CONNZ`` → ``$SYS.REQ.ACCOUNT.<acc>.CONNZ``
  (the account's connections: ``nats server report connections`` by an ordinary user);
- ``$SYS.REQ.ACCOUNT.PING.STATZ`` → ``$SYS.REQ.ACCOUNT.<acc>.STATZ`` (its statistics);
- ``$SYS.REQ.USER.INFO`` → ``$SYS.REQ.USER.<acc>.INFO`` (who the requester is, its permissions),
  which the system account imports for itself too.

Each is a service import (one internal subscription in the account, as there: ``/subsz`` and
``/accountz`` count and list them): the request goes on in the system account under the mapped
subject with a ``Nats-Request-Info`` header naming the requester (nats-server's ``ClientInfo``;
in full for ``USER.INFO``, whose import shares it), and the answer comes back to the requester's
reply through a ``_R_`` reply of the system account (`pyjetstream.server.imports.ServiceExport`).
The system account answers them in `pyjetstream.server.sys_requests`. With JetStream on, nats-server
also imports ``$JS.API.>`` from the system account into every account; here each account serves
its own API (the same one subscription), and ``/accountz`` lists it as nats-server does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from pyjetstream.protocol.headers import set_header
from pyjetstream.server.imports import CLIENT_INFO_HDR, ServiceExport, client_info
from pyjetstream.server.options import AccountExport

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = ["CLIENT_INFO_HDR", "SystemImports", "client_info"]

_CONNZ = "$SYS.REQ.ACCOUNT.{}.CONNZ"
_STATZ = "$SYS.REQ.ACCOUNT.{}.STATZ"
_USER_INFO = "$SYS.REQ.USER.{}.INFO"
#: The system account's exports, as ``/accountz`` lists them (Go ``ServiceRespType.String()``).
EXPORTS = (
    ("$SYS.REQ.ACCOUNT.*.CONNZ", "Streamed"),
    ("$SYS.REQ.ACCOUNT.*.STATZ", "Streamed"),
    ("$SYS.DEBUG.SUBSCRIBERS", "Singleton"),
    ("$SYS.REQ.USER.*.INFO", "Singleton"),
)
_JS_API = "$JS.API.>"
_STREAMED = AccountExport(kind="service", subject="$SYS.REQ.ACCOUNT.*", response_type="stream")
_SINGLETON = AccountExport(kind="service", subject="$SYS.REQ.USER.*.INFO")


class _Import(Struct, frozen=True):
    """One system-account service an account imports (nats-server ``addSystemAccountExports``' imports)."""

    local: str  # what the account's clients publish to
    remote: str  # the system account's subject
    share: bool  # the requester's details go along (USER.INFO)

    def monitor_info(self, system: str) -> dict[str, Any]:
        """nats-server's ``/accountz`` ``ExtImport`` of a service import."""
        return {"subject": self.remote, "account": system, "to": self.local, "local_subject": self.local,
                "type": "service", "invalid": False, "share": self.share, "tracking": False}  # fmt: skip


def _imports_of(account: Account, system: Account) -> list[_Import]:
    user_info = _Import("$SYS.REQ.USER.INFO", _USER_INFO.format(account.name), True)
    if account is system:
        return [user_info]
    connz = _CONNZ.format(account.name)
    return [
        _Import("$SYS.REQ.ACCOUNT.PING.CONNZ", connz, False),
        _Import("$SYS.REQ.SERVER.PING.CONNZ", connz, False),
        _Import("$SYS.REQ.ACCOUNT.PING.STATZ", _STATZ.format(account.name), False),
        user_info,
    ]


class SystemImports:
    """The system account's exports and every account's imports of them."""

    def __init__(self, server: Server, system: Account) -> None:
        self.server = server
        self.system = system
        self.responses = ServiceExport(system)  # the _R_ replies the answers come back through
        self._imports: dict[str, list[_Import]] = {}
        self._subs: dict[str, list[Any]] = {}

    def start(self) -> None:
        self.responses.start()
        for account in list(self.server.accounts.values()):
            self.register(account)

    def register(self, account: Account) -> None:
        """nats-server ``registerSystemImports``: an account (a new one too) gets its imports."""
        if account.name in self._imports:
            return
        imports = _imports_of(account, self.system)
        self._imports[account.name] = imports
        self._subs[account.name] = [
            account.subscribe_internal(imp.local, self._forward(account, imp), no_shadows=True) for imp in imports
        ]

    def unregister(self, account: Account) -> None:
        self._imports.pop(account.name, None)
        for sub in self._subs.pop(account.name, []):
            sub.unsubscribe()

    def _forward(self, account: Account, imp: _Import) -> Any:
        server, system = self.server, self.system

        def forward(subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
            """nats-server ``processServiceImport``: on in the system account, the requester named."""
            if client is not None:
                info = json.dumps(client_info(server, client, imp.share), separators=(",", ":")).encode()
                hdr = set_header(hdr or b"", CLIENT_INFO_HDR, info)
            mapped = self.responses.new_reply(account, reply, _SINGLETON if imp.share else _STREAMED) if reply else ""
            delivered = server.route(imp.remote, mapped, hdr, payload, None, None, system)
            if not delivered and reply:
                self.responses.forget(mapped)
                if client is not None and client.no_responders:
                    server.no_responders(client, reply, subject)

        return forward

    # ------------------------------------------------------------------ /accountz

    def import_infos(self, account: Account) -> list[dict[str, Any]]:
        infos = [imp.monitor_info(self.system.name) for imp in self._imports.get(account.name, [])]
        if account is not self.system and self.server.jetstream_enabled:
            infos.append(_Import(_JS_API, _JS_API, True).monitor_info(self.system.name))
        return infos

    def export_infos(self, account: Account) -> list[dict[str, Any]]:
        if account is not self.system:
            return []
        exports = [{"subject": s, "type": "service", "response_type": t} for s, t in EXPORTS]
        if self.server.jetstream_enabled:
            exports.append({"subject": _JS_API, "type": "service", "response_type": "Singleton"})
        return exports
