"""Authentication: token, user/password (options or URL), nkey, JWT creds; wrong credentials fail."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

import nkeys
import pytest
from tests.client.conftest import read_info, require_embedded_support
from tests.client.jwt_util import Identity, operator_setup
from tests.support.targets import NATS_SERVER, Target, make_target

from pyjetstream.client import AuthorizationError, Client, connect
from pyjetstream.client.auth import Credentials, load_creds, load_seed, parse_creds, public_key, sign_nonce

StartServer = Callable[..., Target]


async def _roundtrip(nc: Client) -> None:
    sub = await nc.subscribe("auth.check")
    await nc.flush()
    await nc.publish("auth.check", b"ok")
    assert (await sub.next_msg(timeout=2)).data == b"ok"
    await nc.close()


async def test_token(start_server: StartServer) -> None:
    server = start_server(authorization={"token": "s3cr3t"})
    await _roundtrip(await connect(server.url, token="s3cr3t"))
    await _roundtrip(await connect(f"nats://s3cr3t@127.0.0.1:{server.port}"))
    with pytest.raises(AuthorizationError):
        await connect(server.url, token="wrong")
    with pytest.raises(AuthorizationError):
        await connect(server.url)


async def test_user_password(start_server: StartServer) -> None:
    server = start_server(authorization={"user": "alice", "password": "p@ss word"})
    await _roundtrip(await connect(server.url, user="alice", password="p@ss word"))
    await _roundtrip(await connect(f"nats://alice:p%40ss%20word@127.0.0.1:{server.port}"))
    with pytest.raises(AuthorizationError):
        await connect(server.url, user="alice", password="nope")
    with pytest.raises(AuthorizationError):
        await connect(server.url, user="mallory", password="p@ss word")


async def test_url_credentials_win_over_options(start_server: StartServer) -> None:
    server = start_server(authorization={"user": "alice", "password": "pw"})
    nc = await connect(f"nats://alice:pw@127.0.0.1:{server.port}", user="bob", password="bad")
    await _roundtrip(nc)


async def test_nkey(start_server: StartServer, tmp_path: Path) -> None:
    user = Identity.new(nkeys.PREFIX_BYTE_USER)
    server = start_server(authorization={"users": [{"nkey": user.public}]})
    require_embedded_support(server, "nkey authentication", "nonce" in read_info(server))
    await _roundtrip(await connect(server.url, nkeys_seed=user.seed.decode()))
    seed_file = tmp_path / "user.nk"
    seed_file.write_bytes(user.seed + b"\n")
    await _roundtrip(await connect(server.url, nkeys_seed=str(seed_file)))
    stranger = Identity.new(nkeys.PREFIX_BYTE_USER)
    with pytest.raises(AuthorizationError):
        await connect(server.url, nkeys_seed=stranger.seed.decode())


async def test_jwt_creds_against_operator_mode_nats_server(tmp_path: Path) -> None:
    """Full decentralized auth: operator → account → user JWTs built here, nats-server verifies them."""
    setup = operator_setup()
    target = make_target(NATS_SERVER, tmp_path / "srv", jetstream=False, **setup.server_settings())
    try:
        creds_file = tmp_path / "user.creds"
        creds_file.write_text(setup.creds())
        await _roundtrip(await connect(target.url, user_credentials=str(creds_file)))
        await _roundtrip(await connect(target.url, user_credentials=creds_file))
        await _roundtrip(await connect(target.url, user_credentials=setup.creds()))
        # A user signed by an account the server does not know is refused.
        other = operator_setup()
        with pytest.raises(AuthorizationError):
            await connect(target.url, user_credentials=other.creds())
    finally:
        target.stop()


def test_parse_creds_and_sign() -> None:
    setup = operator_setup()
    jwt, seed = parse_creds(setup.creds().encode())
    assert jwt == setup.user_jwt and seed == setup.user.seed
    assert load_creds(setup.creds()) == (jwt, seed)
    nonce = "abcDEF123"
    sig = sign_nonce(seed, nonce)
    raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    assert nkeys.from_seed(bytearray(seed)).verify(nonce.encode(), raw)
    fields = Credentials(user_credentials=setup.creds()).connect_fields(nonce)
    assert fields == {"jwt": jwt, "sig": sig}


def test_seed_loading(tmp_path: Path) -> None:
    user = Identity.new(nkeys.PREFIX_BYTE_USER)
    assert load_seed(user.seed.decode()) == user.seed
    path = tmp_path / "seed.txt"
    path.write_text(f"# my key\n{user.seed.decode()}\n")
    assert load_seed(str(path)) == user.seed
    assert load_seed(path) == user.seed
    assert public_key(user.seed) == user.public
    fields = Credentials(nkeys_seed=str(path)).connect_fields("nonce")
    assert fields["nkey"] == user.public and "sig" in fields
    with pytest.raises(AuthorizationError):
        parse_creds(b"no blocks here")
    with pytest.raises(AuthorizationError):
        sign_nonce(b"SUNOTAVALIDSEED", "n")
    assert Credentials(token="t").connect_fields(None) == {"auth_token": "t"}
    assert Credentials(user="u", password="p").connect_fields(None) == {"user": "u", "pass": "p"}
    assert not os.path.exists("nonce")
