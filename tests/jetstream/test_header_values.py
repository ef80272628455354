"""Header values as nats-server cuts them, on both targets: ``getHeader``/``sliceHeader``
(server/client.go) skip the spaces after the colon and keep everything else up to the CRLF, so a
trailing space or a tab is part of the value. ``Nats-Msg-Id: id1 `` is another id than ``id1``
(another dedupe identity), ``Nats-Expected-Last-Sequence: 1 `` is no number (``parseInt64``: -1,
never the last sequence), ``Nats-TTL: 5s `` is no duration and no number (10165), ``Nats-Rollup:
sub `` is no roll-up (10111), ``Nats-Batch-Sequence: 1 `` is no sequence (10175). Every value is
stored as it was sent."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.support.targets import Target

# The ways a value is written after ``Name:``.
FORMS = {
    "bare": "{}",
    "space": " {}",
    "spaces": "  {}",
    "trailing": "{} ",
    "tab": "\t{}",
    "trailing_tab": "{}\t",
}


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


def block(*lines: str) -> bytes:
    return b"NATS/1.0\r\n" + b"".join(line.encode() + b"\r\n" for line in lines) + b"\r\n"


def outcome(ack: dict[str, Any]) -> tuple[Any, ...]:
    if "error" in ack:
        return ("error", ack["error"]["err_code"], ack["error"]["description"])
    return ("dup" if ack.get("duplicate") else "seq", ack["seq"])


def err(code: int, text: str) -> tuple[Any, ...]:
    return ("error", code, text)


WRONG_LAST = err(10071, "wrong last sequence: 1")
BAD_TTL = err(10165, "invalid per-message TTL")

#: name -> (stream config, messages published first, the header line with ``{}`` for the value,
#: the value, the subject, the outcome of each form). Each form runs on a stream of its own.
CASES: dict[str, tuple[dict[str, Any], list[bytes | None], str, str, dict[str, tuple[Any, ...]]]] = {
    "expected_stream": ({}, [], "Nats-Expected-Stream:{}", "{stream}", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": err(10060, "expected stream does not match"),
        "tab": err(10060, "expected stream does not match"),
        "trailing_tab": err(10060, "expected stream does not match"),
    }),
    "expected_last_sequence": ({}, [None], "Nats-Expected-Last-Sequence:{}", "1", {
        "bare": ("seq", 2), "space": ("seq", 2), "spaces": ("seq", 2),
        "trailing": WRONG_LAST, "tab": WRONG_LAST, "trailing_tab": WRONG_LAST,
    }),
    "expected_last_subject_sequence": ({}, [None], "Nats-Expected-Last-Subject-Sequence:{}", "1", {
        "bare": ("seq", 2), "space": ("seq", 2), "spaces": ("seq", 2),
        "trailing": WRONG_LAST, "tab": WRONG_LAST, "trailing_tab": WRONG_LAST,
    }),
    "expected_last_msg_id": ({}, [block("Nats-Msg-Id: id1")], "Nats-Expected-Last-Msg-Id:{}", "id1", {
        "bare": ("seq", 2), "space": ("seq", 2), "spaces": ("seq", 2),
        "trailing": err(10070, "wrong last msg ID: id1"),
        "tab": err(10070, "wrong last msg ID: id1"),
        "trailing_tab": err(10070, "wrong last msg ID: id1"),
    }),
    "ttl_duration": ({"allow_msg_ttl": True}, [], "Nats-TTL:{}", "5s", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": BAD_TTL, "tab": BAD_TTL, "trailing_tab": BAD_TTL,
    }),
    "ttl_seconds": ({"allow_msg_ttl": True}, [], "Nats-TTL:{}", "5", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": BAD_TTL, "tab": BAD_TTL, "trailing_tab": BAD_TTL,
    }),
    "ttl_never": ({"allow_msg_ttl": True}, [], "Nats-TTL:{}", "never", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": BAD_TTL, "tab": BAD_TTL, "trailing_tab": BAD_TTL,
    }),
    "rollup": ({"allow_rollup_hdrs": True}, [None], "Nats-Rollup:{}", "sub", {
        "bare": ("seq", 2), "space": ("seq", 2), "spaces": ("seq", 2),
        "trailing": err(10111, 'rollup value invalid: "sub "'),
        "tab": err(10111, 'rollup value invalid: "\\tsub"'),
        "trailing_tab": err(10111, 'rollup value invalid: "sub\\t"'),
    }),
    "batch_sequence": ({"allow_atomic": True}, [], "Nats-Batch-Id: b1\r\nNats-Batch-Commit: 1\r\nNats-Batch-Sequence:{}", "1", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": err(10175, "atomic publish sequence is missing"),
        "tab": err(10175, "atomic publish sequence is missing"),
        "trailing_tab": err(10175, "atomic publish sequence is missing"),
    }),
    "batch_commit": ({"allow_atomic": True}, [], "Nats-Batch-Id: b1\r\nNats-Batch-Sequence: 1\r\nNats-Batch-Commit:{}", "1", {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": err(10200, "atomic publish batch commit is invalid"),
        "tab": err(10200, "atomic publish batch commit is invalid"),
        "trailing_tab": err(10200, "atomic publish batch commit is invalid"),
    }),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
async def test_header_value_forms(client: RawClient, case: str) -> None:
    cfg, first, line, value, expected = CASES[case]
    got = {}
    for i, (form, fmt) in enumerate(FORMS.items()):
        stream, subject = f"S{i}", f"s{i}.a"
        await client.add_stream(stream, [f"s{i}.>"], **cfg)
        for hdr in first:
            assert "error" not in await client.publish_js(subject, b"x", hdr)
        hdr = block(line.format(fmt.format(value.format(stream=stream))))
        ack = await client.publish_js(subject, b"y", hdr)
        got[form] = outcome(ack)
        if "error" not in ack:  # stored as sent
            msg = await client.api(f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": ack["seq"]})
            assert base64.b64decode(msg["message"]["hdrs"]) == hdr, form
    assert got == expected


async def test_expected_subject_value_is_the_subject_as_sent(client: RawClient) -> None:
    """``Nats-Expected-Last-Subject-Sequence-Subject: s.a `` names the subject ``s.a ``, which
    has no messages."""
    got = {}
    for i, (form, fmt) in enumerate(FORMS.items()):
        await client.add_stream(f"S{i}", [f"s{i}.>"])
        await client.publish_js(f"s{i}.a", b"x")
        hdr = block(
            "Nats-Expected-Last-Subject-Sequence: 1",
            "Nats-Expected-Last-Subject-Sequence-Subject:" + fmt.format(f"s{i}.a"),
        )
        got[form] = outcome(await client.publish_js(f"s{i}.b", b"y", hdr))
    gone = err(10071, "wrong last sequence: 0")
    assert got == {
        "bare": ("seq", 2), "space": ("seq", 2), "spaces": ("seq", 2),
        "trailing": gone, "tab": gone, "trailing_tab": gone,
    }  # fmt: skip


def msg_id_forms() -> list[tuple[str, tuple[Any, ...]]]:
    """Message ids and how each is answered after ``id1`` was stored at 1: a leading space is
    skipped (the same id), a trailing one or a tab is part of the id (a new message, whose id
    is then a duplicate in turn)."""
    return [
        ("id1", ("seq", 1)),
        (" id1", ("dup", 1)),
        ("  id1", ("dup", 1)),
        ("id1 ", ("seq", 2)),
        ("\tid1", ("seq", 3)),
        ("id1\t", ("seq", 4)),
        ("id1 ", ("dup", 2)),
        (" id1 ", ("dup", 2)),
        ("\tid1", ("dup", 3)),
    ]


async def test_msg_id_identity(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    got = [
        outcome(await client.publish_js("s.a", b"x", block("Nats-Msg-Id:" + v))) for v, _ in msg_id_forms()
    ]
    assert got == [want for _, want in msg_id_forms()]
    msg = await client.api("$JS.API.STREAM.MSG.GET.S", {"seq": 2})
    assert base64.b64decode(msg["message"]["hdrs"]) == block("Nats-Msg-Id:id1 ")


async def test_msg_id_identity_in_one_read(client: RawClient) -> None:
    """The same publishes written at once (the server's run path takes them together)."""
    await client.add_stream("S", ["s.>"])
    inbox = client.new_inbox()
    sub = client.subscribe(inbox + ".*")
    forms = msg_id_forms()
    for i, (v, _) in enumerate(forms):
        client.publish("s.a", b"x", f"{inbox}.{i}", block("Nats-Msg-Id:" + v))
    acks = await sub.collect(len(forms))
    sub.unsubscribe()
    acks.sort(key=lambda m: int(m.subject.rsplit(".", 1)[1]))
    assert [outcome(json.loads(m.data)) for m in acks] == [want for _, want in forms]


async def test_counter_increment_forms(client: RawClient) -> None:
    """``Nats-Incr`` (``getMessageIncr``: ``big.Int.SetString`` of the value as cut)."""
    got = {}
    for i, (form, fmt) in enumerate(FORMS.items()):
        await client.add_stream(f"S{i}", [f"s{i}.>"], allow_msg_counter=True)
        got[form] = outcome(await client.publish_js(f"s{i}.a", b"", block("Nats-Incr:" + fmt.format("+2"))))
    bad = err(10171, "message counter increment is invalid")
    assert got == {
        "bare": ("seq", 1), "space": ("seq", 1), "spaces": ("seq", 1),
        "trailing": bad, "tab": bad, "trailing_tab": bad,
    }  # fmt: skip


async def test_expected_stream_and_ttl_in_one_read(client: RawClient) -> None:
    """A read's stretch of publishes (the server's run path) reads ``Nats-Expected-Stream`` and
    ``Nats-TTL`` as the one-by-one path does."""
    await client.add_stream("S", ["s.>"], allow_msg_ttl=True)
    lines = [
        ("Nats-Expected-Stream: S", ("seq", 1)),
        ("Nats-Expected-Stream: S ", err(10060, "expected stream does not match")),
        ("Nats-Expected-Stream:\tS", err(10060, "expected stream does not match")),
        ("Nats-TTL:  5s", ("seq", 2)),
        ("Nats-TTL: 5s ", BAD_TTL),
        ("Nats-TTL: 5\t", BAD_TTL),
        ("Nats-Expected-Stream:  S", ("seq", 3)),
    ]
    inbox = client.new_inbox()
    sub = client.subscribe(inbox + ".*")
    for i, (line, _) in enumerate(lines):
        client.publish("s.a", b"x", f"{inbox}.{i}", block(f"Nats-Msg-Id: m{i}", line))
    acks = await sub.collect(len(lines))
    sub.unsubscribe()
    acks.sort(key=lambda m: int(m.subject.rsplit(".", 1)[1]))
    assert [outcome(json.loads(m.data)) for m in acks] == [want for _, want in lines]
