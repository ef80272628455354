"""Client-certificate checks of nats-server's TLS options: ``verify_and_map`` and ``pinned_certs``.

- ``verify_and_map`` (nats-server ``checkClientTLSCertSubject``): the verified certificate names a
  user of the configuration by one of its e-mail SANs, DNS SANs or URI SANs, or by its subject
  distinguished name (``CN=bob,O=Acme``: compared as a set of attribute=value pairs, so the RDN
  order of the user name does not matter).
- ``pinned_certs`` (nats-server ``matchesPinnedCert``): the hex SHA-256 of the certificate's DER
  ``SubjectPublicKeyInfo`` must be in the list; other certificates are refused after the handshake.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["cert_identities", "dn_pairs", "spki_sha256", "subject_pairs"]

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
            return hashlib.sha256(der_cert[pos:end]).hexdigest()
        pos = end
        index += 1
