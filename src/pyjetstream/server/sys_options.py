"""The Go types of a system monitoring request's options, so that a request whose options do not
fit them is answered as nats-server answers it: ``zReq`` unmarshals the body into the kind's
``*EventOptions`` struct, and ``encoding/json``'s first ``UnmarshalTypeError`` is a 400 with its words
(``json: cannot unmarshal string into Go struct field ConnzEventOptions.offset of type int``). Without
this, a value of the wrong type reached the endpoint's query decoding (a 500 in other words) or
failed before any answer.

Only the types are checked here; the values go on to `pyjetstream.server.sys_requests`. Unknown
fields and ``null`` are ignored, as Go's decoder ignores them; field names match case-insensitively,
as there.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["option_type_error"]

# EventFilterOptions, embedded in every *EventOptions (the server filters).
_FILTER = {"server_name": "string", "cluster": "string", "host": "string", "tags": "[]string", "domain": "string",
           "exact_match": "bool"}  # fmt: skip
_CONNZ = {"sort": "server.SortOpt", "auth": "bool", "subscriptions": "bool", "subscriptions_detail": "bool",
          "offset": "int", "limit": "int", "cid": "uint64", "mqtt_client": "string", "state": "server.ConnState",
          "user": "string", "acc": "string", "filter_subject": "string"}  # fmt: skip
_SUBSZ = {"offset": "int", "limit": "int", "subscriptions": "bool", "account": "string", "test": "string"}
_LEAFZ = {"subscriptions": "bool", "account": "string"}
_JSZ = {"account": "string", "accounts": "bool", "streams": "bool", "consumer": "bool", "config": "bool",
        "leader_only": "bool", "offset": "int", "limit": "int", "raft": "bool", "stream_leader_only": "bool"}  # fmt: skip
#: KIND of ``$SYS.REQ.SERVER.PING[.KIND]`` → (its options struct, its fields' Go types).
SERVER_KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "STATSZ": ("StatszEventOptions", {}),
    "VARZ": ("VarzEventOptions", {}),
    "CONNZ": ("ConnzEventOptions", _CONNZ),
    "SUBSZ": ("SubszEventOptions", _SUBSZ),
    "ROUTEZ": ("RoutezEventOptions", {"subscriptions": "bool", "subscriptions_detail": "bool"}),
    "GATEWAYZ": ("GatewayzEventOptions", {"name": "string", "accounts": "bool", "account_name": "string",
                                          "subscriptions": "bool", "subscriptions_detail": "bool"}),
    "LEAFZ": ("LeafzEventOptions", _LEAFZ),
    "ACCOUNTZ": ("AccountzEventOptions", {"account": "string"}),
    "JSZ": ("JszEventOptions", _JSZ),
    "HEALTHZ": ("HealthzEventOptions", {"js-enabled": "bool", "js-enabled-only": "bool", "js-server-only": "bool",
                                        "js-meta-only": "bool", "account": "string", "stream": "string",
                                        "consumer": "string", "details": "bool"}),
    "IPQUEUESZ": ("IpqueueszEventOptions", {"all": "bool", "filter": "string"}),
    "RAFTZ": ("RaftzEventOptions", {"account": "string", "group": "string"}),
    "EXPVARZ": ("ExpvarzEventOptions", {}),
    "PROFILEZ": ("ProfilezEventOptions", {"name": "string", "debug": "int", "duration": "time.Duration"}),
}  # fmt: skip
#: KIND of ``$SYS.REQ.ACCOUNT.<acc>.KIND`` (nats-server ``monAccSrvc``'s structs).
ACCOUNT_KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "CONNZ": SERVER_KINDS["CONNZ"],
    "SUBSZ": SERVER_KINDS["SUBSZ"],
    "LEAFZ": SERVER_KINDS["LEAFZ"],
    "JSZ": SERVER_KINDS["JSZ"],
    "STATZ": ("AccountStatzEventOptions", {"accounts": "[]string", "include_unused": "bool"}),
    "INFO": ("AccInfoEventOptions", {}),
}
_INT_RANGE = {"int": (-(2**63), 2**63), "server.ConnState": (-(2**63), 2**63), "uint64": (0, 2**64),
              "time.Duration": (-(2**63), 2**63)}


class _Number:
    """A JSON number as written (Go names the literal when it does not fit an integer type)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _kind(value: Any) -> str:
    """The JSON kind of a value in Go's words (``UnmarshalTypeError.Value``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, _Number):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _misfit(value: Any, go_type: str) -> tuple[str, str] | None:
    """(what Go says was found, the type it wanted) when ``value`` does not decode into ``go_type``."""
    if value is None:
        return None
    if go_type == "[]string":
        if not isinstance(value, list):
            return _kind(value), go_type
        return next((m for m in (_misfit(item, "string") for item in value) if m is not None), None)
    if go_type in ("string", "server.SortOpt"):
        return None if isinstance(value, str) else (_kind(value), go_type)
    if go_type == "bool":
        return None if isinstance(value, bool) else (_kind(value), go_type)
    if not isinstance(value, _Number):  # an integer type
        return _kind(value), go_type
    low, high = _INT_RANGE[go_type]
    try:
        number = int(value.text)
    except ValueError:
        number = None
    if number is None or not low <= number < high:
        return f"number {value.text}", go_type
    return None


def option_type_error(kinds: dict[str, tuple[str, dict[str, str]]], kind: str, payload: bytes) -> str | None:
    """Go's ``json.Unmarshal`` error for ``payload`` into the kind's options struct, None when the
    types fit (or the kind takes no options here). ``payload`` is known to be valid JSON."""
    if kind not in kinds:
        return None
    struct, fields = kinds[kind]
    doc = json.loads(payload, parse_int=_Number, parse_float=_Number)
    if doc is None:  # null: the struct stays as it is
        return None
    if not isinstance(doc, dict):
        return f"json: cannot unmarshal {_kind(doc)} into Go value of type server.{struct}"
    known = {name.lower(): (name, go_type) for name, go_type in {**fields, **_FILTER}.items()}
    for key, value in doc.items():
        field = known.get(key.lower())
        misfit = _misfit(value, field[1]) if field is not None else None
        if field is not None and misfit is not None:
            found, wanted = misfit
            return f"json: cannot unmarshal {found} into Go struct field {struct}.{field[0]} of type {wanted}"
    return None
