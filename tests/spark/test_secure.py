"""Credentials and TLS reach every executor: a write and a read against a server requiring both."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.targets import Target

pytestmark = [
    pytest.mark.xdist_group("spark"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI"),
]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate valid for 127.0.0.1 and localhost."""
    d = tmp_path_factory.mktemp("spark-tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_user_password_and_tls(
    spark: Any, start_server: Callable[..., Target], certs: tuple[Path, Path], stream_name: str
) -> None:
    cert, key = certs
    server = start_server(
        # A generous handshake timeout: a loaded CI machine can take more than the default 2 s.
        tls={"cert_file": str(cert), "key_file": str(key), "timeout": 10},
        authorization={"user": "spark", "password": "s3cret"},
    )
    secure = {
        "servers": server.url,
        "user": "spark",
        "password": "s3cret",
        "tlsCaFile": str(cert),
        "connectTimeout": "10",
    }

    from pyjetstream.client.jetstream import StreamConfig, sync

    nc = sync.connect(server.url, user="spark", password="s3cret", tls=_context(cert), connect_timeout=10)
    try:
        nc.jetstream().create_stream(StreamConfig(name=stream_name, subjects=[f"{stream_name}.>"]))
    finally:
        nc.close()

    df = spark.createDataFrame(
        [(f"{stream_name}.a", str(i)) for i in range(50)], "subject string, data string"
    )
    writer = df.repartition(2).write.format("jetstream").mode("append").option("stream", stream_name)
    for k, v in secure.items():
        writer = writer.option(k, v)
    writer.save()
    reader = spark.read.format("jetstream").option("stream", stream_name).option("partitions", 2)
    for k, v in secure.items():
        reader = reader.option(k, v)
    assert sorted(int(r.data) for r in reader.load().collect()) == list(range(50))
    # Wrong credentials: a clear error, not a hang.
    bad = spark.read.format("jetstream").option("stream", stream_name)
    for k, v in {**secure, "password": "wrong"}.items():
        bad = bad.option(k, v)
    with pytest.raises(Exception, match=r"(?i)authorization"):
        bad.load().count()


def _context(cert: Path) -> Any:
    import ssl

    return ssl.create_default_context(cafile=str(cert))
