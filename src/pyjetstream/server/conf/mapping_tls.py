"""The ``tls {}`` block, with nats-server's error texts."""

from __future__ import annotations

import os
import re

from pyjetstream.server.conf.converters import Invalid, as_bool, as_duration, as_map, as_strings
from pyjetstream.server.conf.mapping_base import BlockMapper, Handler
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.units import parse_duration
from pyjetstream.server.options import TLSOptions


def _tls_filename(node: Node, key: str) -> str:
    if not isinstance(node.value, str):
        raise Invalid(node, f"error parsing tls config, expected '{key}' to be filename")
    return node.value


def _tls_flag(node: Node, key: str) -> bool:
    if not isinstance(node.value, bool):
        raise Invalid(node, f"error parsing tls config, expected '{key}' to be a boolean")
    return node.value


def _tls_names(node: Node, key: str) -> list[str]:
    values = as_strings(node, key)
    if not values:
        raise Invalid(node, f"error parsing tls config, '{key}' cannot be empty")
    return values


def _tls_timeout(node: Node, key: str) -> float:
    value = node.value
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise Invalid(node, f"error parsing tls config, 'timeout' {exc}") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise Invalid(node, "error parsing tls config, 'timeout' wrong type")


def _tls_rate_limit(node: Node, key: str) -> int:
    if not isinstance(node.value, int) or isinstance(node.value, bool):
        raise Invalid(node, "error parsing tls config, 'connection_rate_limit' wrong type")
    return node.value


def _tls_pinned(node: Node, key: str) -> list[str]:
    certs = [c.lower() for c in as_strings(node, key)]
    for cert in certs:
        if not re.fullmatch(r"[0-9a-f]{64}", cert):
            raise Invalid(
                node,
                f"error parsing tls config, 'pinned_certs' key {cert} does not look like "
                "hex-encoded sha256 of DER encoded SubjectPublicKeyInfo",
            )
    return certs


def _tls_handshake_first(node: Node, key: str) -> bool:
    value = node.value
    if isinstance(value, str):  # 2.10: "auto" or a fallback delay also enable it
        return value.lower() in ("auto", "auto_fallback") or as_duration(node, key) >= 0
    return as_bool(node, key)


def _tls_unknown(key: str, node: Node) -> None:
    raise Invalid(node, f'error parsing tls config, unknown field "{key}"')


def _tls_known_urls(node: Node, key: str) -> bool:
    if as_bool(node, key):
        raise Invalid(node, f"{key} not supported in this context")
    return False


_TLS_FIELDS: dict[str, Handler] = {
    "cert_file": ("cert_file", _tls_filename),
    "key_file": ("key_file", _tls_filename),
    "ca_file": ("ca_file", _tls_filename),
    "verify": ("verify", _tls_flag),
    "verify_and_map": ("verify_and_map", _tls_flag),
    "insecure": ("insecure", _tls_flag),
    "verify_cert_and_check_known_urls": ("insecure", _tls_known_urls),
    "cipher_suites": ("cipher_suites", _tls_names),
    "curve_preferences": ("curve_preferences", _tls_names),
    "timeout": ("timeout", _tls_timeout),
    "connection_rate_limit": ("connection_rate_limit", _tls_rate_limit),
    "pinned_certs": ("pinned_certs", _tls_pinned),
    "handshake_first|first": ("handshake_first", _tls_handshake_first),
}


class TLSKeys(BlockMapper):
    """``tls``: checked as a whole, and the certificate/key pair is loaded to prove it works."""

    def tls(self, key: str, node: Node) -> None:
        tls = TLSOptions()
        errors_before = len(self.errors)
        self.each(as_map(node, key), _TLS_FIELDS, tls, unknown=_tls_unknown)
        if len(self.errors) > errors_before:
            return
        tls.verify = tls.verify or tls.verify_and_map
        if not tls.cert_file or not tls.key_file:
            missing = "cert_file" if not tls.cert_file else "key_file"
            # nats-server GenTLSConfig's words (a block with neither file is valid there, but
            # serves no TLS: refused here, docs/server.md "Where serve -t differs").
            raise Invalid(node, f"missing '{missing}' in TLS configuration")
        for path in (tls.cert_file, tls.key_file):  # tls.LoadX509KeyPair opens them in this order
            if not os.path.exists(path):
                raise Invalid(node, f"error parsing X509 certificate/key pair: open {path}: no such file or directory")
        try:
            tls.server_context()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise Invalid(node, f"error parsing X509 certificate/key pair: {exc}") from None
        self.o.tls = tls
