"""The dashboard's actions that change state (only with ``dashboard_write``; `site.Dashboard`
checks who may ask): purge a stream, delete a message, pause or resume a consumer, put or delete
a KV key.

Each is the ``$JS.API`` request a client would send, handed to the account's API handler as its
router would (`ApiRouter.handlers`): the same checks, errors, advisories and API counters as a
request from the wire. A KV put or delete is a publish into the account, as a client's is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pyjetstream.api.codec import to_builtins
from pyjetstream.api.headers import KV_OPERATION
from pyjetstream.api.subjects import match_api_subject
from pyjetstream.protocol.headers import encode_headers
from pyjetstream.protocol.subjects import is_valid_literal_subject
from pyjetstream.server.dashboard.views import ViewError, pick_account, query_int

if TYPE_CHECKING:
    from pyjetstream.server.server import Server

__all__ = ["ACTIONS"]


def _api(server: Server, query: dict[str, str], subject: str, body: dict[str, Any] | None) -> dict[str, Any]:
    """Answer ``subject`` with ``body`` through the account's API handler; an API error is a 400
    with its description."""
    account = pick_account(server, query)
    engine = account.jetstream
    if engine is None or not hasattr(engine, "router"):
        raise ViewError(404, f"JetStream is not enabled for account {account.name!r}")
    match = match_api_subject(subject)
    handler = engine.router.handler(match.endpoint) if match is not None else None
    if match is None or handler is None:
        raise ViewError(400, "not an API request")
    payload = json.dumps(body).encode() if body is not None else b""
    response = handler(engine, match, payload, "")
    if isinstance(response, tuple):
        response = response[0]
    engine.api_answered(response is not None and response.error is not None)  # (as the router counts)
    if response is None:
        raise ViewError(500, "no answer")
    if response.error is not None:
        raise ViewError(400, f"{response.error.description} ({response.error.err_code})")
    out: dict[str, Any] = to_builtins(response)
    return out


def _name(query: dict[str, str], key: str) -> str:
    value = query.get(key, "")
    if not value or any(c in value for c in " .*>\t\r\n"):
        raise ViewError(400, f"{key}: not a valid name")
    return value


def purge(server: Server, query: dict[str, str]) -> dict[str, Any]:
    body = {"filter": query["subject"]} if query.get("subject") else None
    return _api(server, query, f"$JS.API.STREAM.PURGE.{_name(query, 'stream')}", body)


def delete_msg(server: Server, query: dict[str, str]) -> dict[str, Any]:
    seq = query_int(query, "seq", 0)
    body = {"seq": seq, "no_erase": True}
    return _api(server, query, f"$JS.API.STREAM.MSG.DELETE.{_name(query, 'stream')}", body)


def pause(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """Pause until ``until`` (RFC 3339; default: a year from now) or, without it and with
    ``resume``, resume."""
    subject = f"$JS.API.CONSUMER.PAUSE.{_name(query, 'stream')}.{_name(query, 'consumer')}"
    if query.get("resume"):
        return _api(server, query, subject, None)
    until = query.get("until") or "2099-01-01T00:00:00Z"
    return _api(server, query, subject, {"pause_until": until})


def _kv_subject(query: dict[str, str]) -> str:
    subject = f"$KV.{_name(query, 'bucket')}.{query.get('key', '')}"
    if not is_valid_literal_subject(subject) or not query.get("key"):
        raise ViewError(400, "key: not a valid key")
    return subject


def kv_put(server: Server, query: dict[str, str]) -> dict[str, Any]:
    subject = _kv_subject(query)
    pick_account(server, query).publish_internal(subject, query.get("value", "").encode())
    return {"ok": True}


def kv_delete(server: Server, query: dict[str, str]) -> dict[str, Any]:
    subject = _kv_subject(query)
    hdr = encode_headers({KV_OPERATION: "DEL"})
    pick_account(server, query).publish_internal(subject, b"", hdr=hdr)
    return {"ok": True}


#: ``/dashboard/api/action/<name>`` → handler.
ACTIONS = {
    "purge": purge,
    "delete_msg": delete_msg,
    "pause": pause,
    "kv_put": kv_put,
    "kv_delete": kv_delete,
}
