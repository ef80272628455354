"""Test certificates made with the openssl command: a CA, a server certificate for 127.0.0.1 and
client certificates with chosen subjects and SANs (for ``verify``, ``verify_and_map``, pinning)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cert", "CertFactory", "have_openssl"]


def have_openssl() -> bool:
    return shutil.which("openssl") is not None


def _run(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@dataclass(frozen=True)
class Cert:
    cert: str
    key: str

    def spki_sha256(self) -> str:
        """Hex SHA-256 of the DER SubjectPublicKeyInfo (what ``pinned_certs`` lists)."""
        pub = subprocess.run(
            ["openssl", "x509", "-in", self.cert, "-noout", "-pubkey"], check=True, capture_output=True
        ).stdout
        der = subprocess.run(
            ["openssl", "pkey", "-pubin", "-outform", "DER"], input=pub, check=True, capture_output=True
        ).stdout
        return hashlib.sha256(der).hexdigest()


class CertFactory:
    """Issues certificates from one CA kept in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.ca = Cert(str(folder / "ca.pem"), str(folder / "ca-key.pem"))
        _run(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", self.ca.key, "-out", self.ca.cert, "-days", "2", "-subj", "/CN=Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )  # fmt: skip

    def issue(self, name: str, subject: str, san: str = "", client: bool = True, ca: Cert | None = None) -> Cert:
        """A certificate for ``subject`` (``/CN=x/O=y``) with ``san`` (``email:a@b,DNS:c``), signed
        by the CA (or ``ca``; a self-signed one when ``ca`` is the certificate itself)."""
        key, csr, crt = (str(self.folder / f"{name}.{ext}") for ext in ("key", "csr", "pem"))
        ext_file = self.folder / f"{name}.ext"
        usage = "clientAuth" if client else "serverAuth"
        lines = [f"extendedKeyUsage={usage}"]
        if san:
            lines.append(f"subjectAltName={san}")
        ext_file.write_text("\n".join(lines) + "\n")
        _run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", csr, "-subj", subject)  # fmt: skip
        signer = ca or self.ca
        _run("x509", "-req", "-in", csr, "-CA", signer.cert, "-CAkey", signer.key, "-CAcreateserial",
             "-out", crt, "-days", "2", "-extfile", str(ext_file))  # fmt: skip
        return Cert(crt, key)

    def server(self) -> Cert:
        return self.issue("server", "/CN=localhost", "IP:127.0.0.1,DNS:localhost", client=False)

    def self_signed(self, name: str, subject: str) -> Cert:
        key, crt = str(self.folder / f"{name}.key"), str(self.folder / f"{name}.pem")
        _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", crt, "-days", "2", "-subj", subject)  # fmt: skip
        return Cert(crt, key)
