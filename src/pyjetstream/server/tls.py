"""A client connection's TLS: the upgrade after INFO (`start_tls`) and the client-certificate checks
of nats-server's TLS options, ``verify_and_map`` and ``pinned_certs``.

- ``verify_and_map`` (nats-server ``checkClientTLSCertSubject``): the verified certificate names a
  user of the configuration by one of its e-mail SANs, DNS SANs or URI SANs, or by its subject
  distinguished name (``CN=bob,O=Acme``: compared as a set of attribute=value pairs, so the RDN
  order of the user name does not matter).
- ``pinned_certs`` (nats-server ``matchesPinnedCert``): the hex SHA-256 of the certificate's DER
  ``SubjectPublicKeyInfo`` must be in the list; other certificates are refused after the handshake.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from typing import Any

from pyjetstream._hashes import sha256

__all__ = ["cert_identities", "check_peer_certificate", "dn_pairs", "spki_sha256", "start_tls", "subject_pairs"]

#: Why a connection whose TLS failed was closed (``client.ClosedReason.TLS_HANDSHAKE``).
TLS_HANDSHAKE = "TLS Handshake Failure"

# Python's ssl names → the short names of RFC 4514 (what Go's pkix.Name.String() writes).
_SHORT = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "postalCode": "POSTALCODE",
    "serialNumber": "SERIALNUMBER",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "emailAddress",
}


def subject_pairs(peercert: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """The certificate subject as a set of ``(TYPE, value)`` pairs."""
    pairs = []
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            pairs.append((_SHORT.get(name, name).upper(), value))
    return frozenset(pairs)


def dn_pairs(text: str) -> frozenset[tuple[str, str]] | None:
    """A user name written as a DN (``CN=bob, O=Acme``) as pairs; None when it is not a DN."""
    if "=" not in text:
        return None
    pairs = []
    current, escaped = "", False
    parts = []
    for ch in text:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",+":
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            return None
        pairs.append((key.strip().upper(), value.strip()))
    return frozenset(pairs)


def cert_identities(peercert: dict[str, Any]) -> list[str]:
    """Names a certificate may map to, in nats-server's order: e-mails, DNS names, URIs."""
    names: dict[str, list[str]] = {"email": [], "DNS": [], "URI": []}
    for kind, value in peercert.get("subjectAltName", ()):
        if kind in names:
            names[kind].append(value)
    return [*names["email"], *names["DNS"], *names["URI"]]


def _der_header(data: bytes, pos: int) -> tuple[int, int, int]:
    """``(tag, content start, content end)`` of the DER element at ``pos``."""
    tag = data[pos]
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[pos : pos + n], "big")
        pos += n
    return tag, pos, pos + length


def spki_sha256(der_cert: bytes) -> str:
    """Hex SHA-256 of a DER certificate's SubjectPublicKeyInfo (the seventh field of
    tbsCertificate, counting the optional ``[0]`` version)."""
    _, start, _ = _der_header(der_cert, 0)  # Certificate
    _, pos, _ = _der_header(der_cert, start)  # tbsCertificate
    index = 0
    while True:
        tag, _content, end = _der_header(der_cert, pos)
        if index == 0 and tag != 0xA0:  # no explicit version: serialNumber comes first
            index = 1
        if index == 6:
            return sha256(der_cert[pos:end]).hexdigest()
        pos = end
        index += 1


async def start_tls(conn: Any, ssl_context: ssl.SSLContext, info: bytes) -> None:
    """A client connection's TLS as nats-server does it: INFO in the clear, then the client's handshake; with
    ``allow_non_tls`` a client that does not start a handshake stays in the clear.
    (``handshake_first`` connections arrive with TLS done: the listener does it.)"""
    server = conn.server
    tls = server.options.tls
    timeout = tls.timeout if tls is not None else 2.0
    transport = conn.transport
    if transport is None or conn.closed:
        return
    transport.pause_reading()
    transport.write(info)
    if server.options.allow_non_tls and not await _client_starts_tls(conn, timeout):
        if not conn.closed:
            conn.sink.hold = False
            transport.resume_reading()
            if conn.sink.out:
                conn.flush_out()
        return
    try:
        upgraded = await server.loop.start_tls(
            conn.transport,
            conn,
            ssl_context,
            server_side=True,
            ssl_handshake_timeout=timeout,
        )
    except Exception as exc:  # handshake failure or timeout: nats-server closes without -ERR
        if not conn.closed:
            conn.log(logging.ERROR, f"TLS handshake error: {exc or type(exc).__name__}")
            conn.abort(TLS_HANDSHAKE)
        return
    if conn.closed or upgraded is None:
        if upgraded is not None:
            upgraded.abort()
        return
    conn.transport = conn.sink.transport = upgraded
    if not check_peer_certificate(conn, upgraded):
        return
    conn.sink.hold = False
    conn.set_write_limits()
    if conn.sink.out:
        conn.flush_out()

async def _client_starts_tls(conn: Any, timeout: float) -> bool:
    """``allow_non_tls``: whether the client's first byte opens a TLS record (0x16), peeked
    on a duplicate of the socket so the TLS layer or the parser still reads it."""

    sock = conn.transport.get_extra_info("socket") if conn.transport is not None else None
    if sock is None:
        return False
    loop = conn.server.loop
    dup = socket.socket(fileno=os.dup(sock.fileno()))
    dup.setblocking(False)
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(dup.fileno(), readable)
    try:
        await asyncio.wait_for(ready, timeout)
        first = dup.recv(1, socket.MSG_PEEK)
    except (TimeoutError, OSError):
        return False
    finally:
        loop.remove_reader(dup.fileno())
        dup.close()
    return first == b"\x16"

def check_peer_certificate(conn: Any, transport: Any) -> bool:
    """Keep the verified client certificate (``verify_and_map``) and enforce pinned_certs."""
    tls = conn.server.options.tls
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None or tls is None:
        return True
    conn.peercert = ssl_object.getpeercert() or None
    if tls.pinned_certs:

        der = ssl_object.getpeercert(binary_form=True)
        if der is None or spki_sha256(der) not in tls.pinned_certs:
            conn.log(logging.ERROR, "TLS handshake error: peer certificate does not match a pinned cert")
            conn.abort(TLS_HANDSHAKE)
            return False
    return True
