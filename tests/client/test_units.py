"""Pure units of the client: NUIDs, server URLs, the server pool."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.client.inbox import DIGITS, NUID, TOTAL_LEN, new_inbox
from pyjetstream.client.options import ServerPool, parse_server_url, split_servers


def test_nuid_shape_and_uniqueness() -> None:
    gen = NUID()
    ids = [gen.next() for _ in range(50_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == TOTAL_LEN and set(i) <= set(DIGITS) for i in ids)
    assert NUID().next()[:12] != gen.next()[:12]  # independent random prefixes


def test_nuid_sequence_rollover() -> None:
    gen = NUID()
    gen._seq = 62**10 - 1
    first_prefix = gen._prefix
    nxt = gen.next()
    assert len(nxt) == TOTAL_LEN and nxt[:12] != first_prefix


def test_new_inbox() -> None:
    assert new_inbox().startswith("_INBOX.") and len(new_inbox()) == len("_INBOX.") + TOTAL_LEN
    assert new_inbox("_X").startswith("_X.")


@pytest.mark.parametrize(
    ("url", "host", "port", "tls", "user", "password", "token"),
    [
        ("nats://127.0.0.1:4333", "127.0.0.1", 4333, False, None, None, None),
        ("demo.nats.io", "demo.nats.io", 4222, False, None, None, None),
        ("localhost:5000", "localhost", 5000, False, None, None, None),
        ("tls://secure:4443", "secure", 4443, True, None, None, None),
        ("nats://u:p%40w@h:1", "h", 1, False, "u", "p@w", None),
        ("nats://tok@h", "h", 4222, False, None, None, "tok"),
        ("nats://[::1]:4222", "::1", 4222, False, None, None, None),
    ],
)
def test_parse_server_url(
    url: str, host: str, port: int, tls: bool, user: str | None, password: str | None, token: str | None
) -> None:
    s = parse_server_url(url)
    assert (s.host, s.port, s.tls, s.user, s.password, s.token) == (host, port, tls, user, password, token)


def test_parse_server_url_errors() -> None:
    for bad in ("http://h:1", "nats://:4222", "nats://h:notaport"):
        with pytest.raises(ValueError):
            parse_server_url(bad)
    with pytest.raises(ValueError):
        split_servers(" , ")
    assert split_servers("a:1, b:2") == ["a:1", "b:2"]


def test_pool_discovery_and_order() -> None:
    pool = ServerPool(["nats://u:p@a:1", "b:2"], randomize=False)
    pool.current = pool.servers[0]
    added = pool.add_discovered(["a:1", "c:3", "c:3", "nats://d:4"], randomize=False)
    assert added == ["nats://c:3", "nats://d:4"]
    c = pool.servers[2]
    assert c.implicit and (c.user, c.password) == ("u", "p")  # peers inherit our credentials
    assert [s.hostport for s in pool.next_candidates()] == ["b:2", "c:3", "d:4", "a:1"]
    pool.remove(c)
    assert len(pool) == 3


@given(st.lists(st.integers(min_value=1, max_value=65535), min_size=1, max_size=5))
def test_pool_never_duplicates(ports: list[int]) -> None:
    pool = ServerPool(["h:1"], randomize=True)
    pool.add_discovered([f"h:{p}" for p in ports], randomize=True)
    pool.add_discovered([f"h:{p}" for p in ports], randomize=True)
    hostports = [s.hostport for s in pool.servers]
    assert len(hostports) == len(set(hostports)) == len({1, *ports})
