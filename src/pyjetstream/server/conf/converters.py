"""Value converters: a node of the tree to a typed option value, or `Invalid` with nats-server's text.

Each converter is ``(node, key) -> value``; ``key`` is the name as written, for the message.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Any

from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.units import parse_duration, parse_storage_size


class Invalid(Exception):
    """A value of the wrong shape; reported at the node it concerns."""

    def __init__(self, node: Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


def _type_name(value: Any) -> str:
    """Go's name for a value's type, as nats-server's messages use it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {
        str: "string",
        int: "integer",
        float: "float",
        dict: "map",
        list: "array",
        datetime: "datetime",
    }.get(type(value), type(value).__name__)


def _describe(value: Any) -> str:
    """A value with its type (``string "x"``, ``integer 5``), as nats-server's messages show it."""
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict | list) or value is None:
        return _type_name(value)
    return f"{_type_name(value)} {value}"


_GO_TYPES = {bool: "bool", int: "int64", float: "float64", str: "string", datetime: "time.Time"}


def go_type(value: Any) -> str:
    """Go's ``%T`` of a config value, for the nats-server texts that print one."""
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return _GO_TYPES.get(type(value), type(value).__name__)


def _expect(node: Node, kind: type | tuple[type, ...], what: str, key: str) -> Any:
    """The node's value if it is a ``kind`` (a bool is never taken for an int)."""
    value = node.value
    kinds = _as_tuple(kind)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise Invalid(node, f"'{key}' expected {what}, got {_describe(value)}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def as_int(node: Node, key: str) -> int:
    return int(_expect(node, int, "an integer", key))


def as_str(node: Node, key: str) -> str:
    return str(_expect(node, str, "a string", key))


def as_bool(node: Node, key: str) -> bool:
    return bool(_expect(node, bool, "a boolean", key))


def as_map(node: Node, key: str) -> dict[str, Node]:
    return _expect(node, dict, "a map", key)


def as_list(node: Node, key: str) -> list[Node]:
    return _expect(node, list, "an array", key)


def as_strings(node: Node, key: str) -> list[str]:
    """A string or an array of strings."""
    if isinstance(node.value, str):
        return [node.value]
    return [as_str(item, key) for item in as_list(node, key)]


def as_duration(node: Node, key: str) -> float:
    text = _expect(node, str, 'a duration string such as "2m" or "10s"', key)
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise Invalid(node, f"error parsing {key}: {exc}") from None


def go_value(value: Any) -> str:
    """A config value as Go's ``%v`` prints it, for texts that quote one: a float64 in
    strconv's shortest ``%g`` (``61.5``, ``100000``, ``1e+06``: the exponent form below 1e-4
    and from 1e6 up), anything else as ``str``."""
    if not isinstance(value, float):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if str(value).startswith("-") else ""
    if value == 0:
        return sign + "0"
    shortest = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, shortest.digits)).rstrip("0")
    point = len(shortest.digits) + int(shortest.exponent)  # digits before the decimal point
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def as_storage_size(node: Node, key: str) -> int:
    """An integer, or a string ending in K, M, G or T (powers of 1024)."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise Invalid(node, f"{key} must be int64 or string")
    try:
        return parse_storage_size(value)
    except ValueError:
        raise Invalid(node, f"{key} sizes defined as strings must end in K, M, G, T") from None


def _split_host_port(text: str) -> tuple[str, str]:
    """Go's net.SplitHostPort (enough of it for listen addresses)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ValueError
        return text[1:end], text[end + 2 :]
    host, sep, port = text.rpartition(":")
    if not sep or ":" in host:
        raise ValueError
    return host, port


def as_host_port(node: Node, key: str) -> tuple[str | None, int]:
    """``port`` or ``"host:port"``; returns (host or None, port)."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        return None, value
    if not isinstance(value, str):
        raise Invalid(node, f"expected port or host:port, got {go_type(value)}")
    try:
        host, port = _split_host_port(value)
    except ValueError:
        raise Invalid(node, f'could not parse address string "{value}"') from None
    if not re.fullmatch(r"[+-]?[0-9]+", port):
        raise Invalid(node, f'could not parse port "{port}"')
    return host, int(port)


def as_enabled(node: Node, key: str) -> bool:
    """``true``/``false`` or ``"enabled"``/``"disabled"`` (JetStream switches)."""
    value = node.value
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("enabled", "enable", "disabled", "disable"):
        return value.lower().startswith("enable")
    if isinstance(value, str):
        raise Invalid(node, f"Expected 'enabled' or 'disabled' for string value, got '{value}'")
    raise Invalid(node, f"Expected map, bool or string to define JetStream, got {_type_name(value)}")
