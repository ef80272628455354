"""``Nats-Required-Api-Level`` on every ``$JS.API`` endpoint, both targets, compared byte for byte.

nats-server 2.15.1 (level 5) refuses a request whose header asks for more, or is not a number
``strconv.Atoi`` takes, with 412 / 10185 "JetStream minimum api level required" in the endpoint's
own response type (a pull request and a direct get: the ``412 Required Api Level`` status), before
"JetStream not enabled for account" — except where its handler checks something else first on a
single node (clustering required, a consumer create's or pause's body, a consumer info's body).

The walk: every endpoint of the table (``ApiEndpoint``) with a sample request, each sent with
every header value below from an account with JetStream and one without, all pipelined, on both
targets; the answers must be the same bytes (a success is compared by its type only: it carries
times and generated names).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from tests.jetstream.pair_fixtures import _pair
from tests.jetstream.rawnats import RawMsg, RawNats, headers
from tests.support.targets import EMBEDDED, NATS_SERVER, Target

from pyjetstream.api.subjects import ApiEndpoint, match_api_subject

ACCOUNTS = {
    "J": {"jetstream": "enabled", "users": [{"user": "j", "password": "j"}]},
    "N": {"users": [{"user": "n", "password": "n"}]},
}

#: Header values: refused (above 5, not an Atoi number: a space after it, a tab, an overflow),
#: and accepted (5, "+5", "-1", an empty value).
LEVELS = ("99", "6", "x", "5 ", "\t5", "-99999999999999999999", "99999999999999999999", "5", "+5", "-1", "")
ACCEPTED = ("5", "+5", "-1", "")

_CONSUMER = {"name": "D", "ack_policy": "explicit", "priority_groups": ["g"], "priority_policy": "pinned_client"}

#: (label, subject after $JS.API. with {s} for the stream, body, extra headers). Every endpoint
#: of the table appears (test_every_endpoint_is_walked); a few take bodies a handler checks
#: before the level.
SAMPLES: list[tuple[str, str, bytes, tuple[tuple[str, str], ...]]] = [
    ("info", "INFO", b"", ()),
    ("stream create", "STREAM.CREATE.{s}N", b'{"name":"{s}N","subjects":["{s}n"]}', ()),
    ("stream create bad json", "STREAM.CREATE.{s}N", b"{bad", ()),
    ("stream update", "STREAM.UPDATE.{s}", b'{"name":"{s}","subjects":["{s}.>"],"allow_direct":true}', ()),
    ("stream names", "STREAM.NAMES", b"", ()),
    ("stream list", "STREAM.LIST", b"", ()),
    ("stream info", "STREAM.INFO.{s}", b"", ()),
    ("stream info missing", "STREAM.INFO.{s}X", b"", ()),
    ("stream delete", "STREAM.DELETE.{s}", b"", ()),
    ("stream purge", "STREAM.PURGE.{s}", b"", ()),
    ("stream snapshot", "STREAM.SNAPSHOT.{s}", b'{"deliver_subject":"snap.{s}"}', ()),
    ("stream restore", "STREAM.RESTORE.{s}R", b'{"config":{"name":"{s}R"}}', ()),
    ("msg get", "STREAM.MSG.GET.{s}", b'{"seq":1}', ()),
    ("msg delete", "STREAM.MSG.DELETE.{s}", b'{"seq":1}', ()),
    ("peer remove", "STREAM.PEER.REMOVE.{s}", b'{"peer":"x"}', ()),
    ("stream stepdown", "STREAM.LEADER.STEPDOWN.{s}", b"", ()),
    ("peer evacuate", "STREAM.PEER.EVACUATE.{s}", b"", ()),
    ("cancel move", "STREAM.CANCEL_MOVE.{s}", b"", ()),
    ("direct get", "DIRECT.GET.{s}", b'{"seq":1}', ()),
    ("direct get last", "DIRECT.GET.{s}.{s}.a", b"", ()),
    ("consumer create", "CONSUMER.CREATE.{s}.E", b'{"stream_name":"{s}","config":{"name":"E"}}', ()),
    ("consumer create filtered", "CONSUMER.CREATE.{s}.F.{s}.a", b'{"stream_name":"{s}","config":{"name":"F"}}', ()),
    ("consumer create legacy", "CONSUMER.CREATE.{s}", b'{"stream_name":"{s}","config":{}}', ()),
    ("consumer create bad json", "CONSUMER.CREATE.{s}.E", b"{bad", ()),
    ("consumer create unknown field", "CONSUMER.CREATE.{s}.E", b'{"stream_name":"{s}","config":{},"x":1}', ()),
    ("durable create", "CONSUMER.DURABLE.CREATE.{s}.G", b'{"stream_name":"{s}","config":{"durable_name":"G"}}', ()),
    ("consumer names", "CONSUMER.NAMES.{s}", b"", ()),
    ("consumer list", "CONSUMER.LIST.{s}", b"", ()),
    ("consumer info", "CONSUMER.INFO.{s}.D", b"", ()),
    ("consumer info body", "CONSUMER.INFO.{s}.D", b'{"x":1}', ()),
    ("consumer info missing", "CONSUMER.INFO.{s}.X", b"", ()),
    ("consumer delete", "CONSUMER.DELETE.{s}.D", b"", ()),
    ("msg next", "CONSUMER.MSG.NEXT.{s}.D", b'{"batch":1,"group":"g","expires":100000000}', ()),
    ("consumer stepdown", "CONSUMER.LEADER.STEPDOWN.{s}.D", b"", ()),
    ("consumer pause", "CONSUMER.PAUSE.{s}.D", b'{"pause_until":"2030-01-01T00:00:00Z"}', ()),
    ("consumer pause bad json", "CONSUMER.PAUSE.{s}.D", b"{bad", ()),
    ("consumer unpin", "CONSUMER.UNPIN.{s}.D", b'{"group":"g"}', ()),
    ("consumer unpin missing", "CONSUMER.UNPIN.{s}.X", b'{"group":"g"}', ()),
    ("consumer reset", "CONSUMER.RESET.{s}.D", b'{"seq":1}', ()),
    ("template create", "STREAM.TEMPLATE.CREATE.T", b"{}", ()),
    ("template names", "STREAM.TEMPLATE.NAMES", b"", ()),
    ("template info", "STREAM.TEMPLATE.INFO.T", b"", ()),
    ("template delete", "STREAM.TEMPLATE.DELETE.T", b"", ()),
    ("meta stepdown", "META.LEADER.STEPDOWN", b"", ()),
    ("server remove", "SERVER.REMOVE", b'{"peer":"x"}', ()),
    ("account purge", "ACCOUNT.PURGE.J", b"", ()),
    ("account stream move", "ACCOUNT.STREAM.MOVE.J.{s}", b"{}", ()),
    ("account stream cancel move", "ACCOUNT.STREAM.CANCEL_MOVE.J.{s}", b"", ()),
    ("batch publish", "", b"x", (("Nats-Batch-Id", "b"), ("Nats-Batch-Sequence", "1"), ("Nats-Batch-Commit", "1"))),
]
LABELS = [label for label, *_ in SAMPLES]
#: After the walk's last answer that must come (a request sent after all the others, which the
#: embedded server answers in order), how long it waits for the rest, then counts them silent.
GRACE = 1.0  # (pull requests in the walk expire after 100 ms: their 408s come later)


def _subject(template: str, stream: str) -> str:
    if not template:  # a publish to the stream itself
        return f"{stream}.b"
    return "$JS.API." + template.replace("{s}", stream)


def _refusal(answer: str) -> bool:
    return "10185" in answer or "412 Required Api Level" in answer


def _answer(msg: RawMsg | None, level: str, jetstream: bool, pull: bool = False) -> str:
    """What is compared: a status line, an error reply's bytes, a success's type; for a level
    that is accepted in the account with JetStream, only that it was answered (the accepted
    requests of one sample race on its stream on nats-server, whose API workers may take them
    in any order; an accepted pull request ends with its message, a 408 when it expires or nothing
    yet, by timing: under load either server's walk sees any of them)."""
    answer = _answer_of(msg)
    settled = ("{", "ok ", "<message on ", "<no answer>", "NATS/1.0 408") if pull else ("{", "ok ")
    if jetstream and level in ACCEPTED and answer.startswith(settled) and not _refusal(answer):
        return "answered"
    return answer


def _answer_of(msg: RawMsg | None) -> str:
    if msg is None:
        return "<no answer>"
    status = (msg.hdr or b"").split(b"\r\n", 1)[0].decode()
    if status.startswith("NATS/1.0 "):
        return status.strip()
    try:
        body = json.loads(msg.data)
    except ValueError:
        return f"<message on {msg.subject.split('.')[0]}>"
    if isinstance(body, dict) and "error" in body:
        return msg.data.decode()
    return f"ok {body.get('type', '') if isinstance(body, dict) else ''}".strip()


async def _setup(c: RawNats, stream: str) -> None:
    cfg = {"name": stream, "subjects": [f"{stream}.>"], "allow_direct": True, "allow_atomic": True}
    msg = await c.request(f"$JS.API.STREAM.CREATE.{stream}", json.dumps(cfg).encode())
    assert "error" not in msg.json(), msg.data
    await c.request(f"{stream}.a", b"x")
    body = {"stream_name": stream, "config": _CONSUMER}
    msg = await c.request(f"$JS.API.CONSUMER.CREATE.{stream}.D", json.dumps(body).encode())
    assert "error" not in msg.json(), msg.data


async def _walk(target: Target) -> dict[str, list[str]]:
    """Per sample: its answers, for each account and level, in one pipelined pass."""
    j = await RawNats.connect(target.url, "j", "j")
    n = await RawNats.connect(target.url, "n", "n")
    try:
        frames: dict[str, list[tuple[RawNats, str, bytes, bytes]]] = {label: [] for label in LABELS}
        for i, (label, template, body, extra) in enumerate(SAMPLES):
            stream = f"S{i}"
            await _setup(j, stream)
            for c in (j, n):
                for level in LEVELS:
                    hdr = headers(*extra, ("Nats-Required-Api-Level", level))
                    frames[label].append((c, _subject(template, stream), body.replace(b"{s}", stream.encode()), hdr))
        out: dict[str, list[str]] = {}
        pending = {c: [f for label in LABELS for f in frames[label] if f[0] is c] for c in (j, n)}
        futures = {c: c.send_requests([(s, b, h) for _, s, b, h in fs]) for c, fs in pending.items()}
        for c in (j, n):  # answered after everything before it (INFO: JetStream or 10039)
            await c.request("$JS.API.INFO", timeout=60)
        await asyncio.sleep(GRACE)
        answers = {c: iter([f.result() if f.done() and not f.cancelled() else None for f in fs]) for c, fs in futures.items()}
        for c in (j, n):
            c.forget()
        for label in LABELS:
            out[label] = [
                f"{'J' if c is j else 'N'} {level!r}: {_answer(next(answers[c]), level, c is j, label == 'msg next')}"
                for c, level in zip([f[0] for f in frames[label]], LEVELS * 2, strict=True)
            ]
        return out
    finally:
        await j.close()
        await n.close()


@pytest.fixture(scope="module")
def accounts_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    yield from _pair(tmp_path_factory.mktemp("levels"), accounts=ACCOUNTS)


@pytest.fixture(scope="module")
def walks(accounts_pair: dict[str, Target]) -> dict[str, dict[str, list[str]]]:
    return {kind: asyncio.run(_walk(target)) for kind, target in accounts_pair.items()}


def test_every_endpoint_is_walked() -> None:
    """A new endpoint in the table must get a sample here (the walk is the test of its level check)."""
    walked = {match.endpoint for _, t, *_ in SAMPLES if t and (match := match_api_subject(_subject(t, "S"))) is not None}
    assert walked == set(ApiEndpoint)


@pytest.mark.parametrize("label", LABELS)
async def test_required_api_level_as_nats_server(walks: dict[str, dict[str, list[str]]], label: str) -> None:
    ours, theirs = walks[EMBEDDED][label], walks[NATS_SERVER][label]
    assert ours == theirs
    for account in (theirs[: len(LEVELS)], theirs[len(LEVELS) :]):
        refused = [line for line, level in zip(account, LEVELS, strict=True) if level not in ACCEPTED]
        if any(_refusal(line) for line in refused):  # where the level is checked, every bad value is
            assert all(_refusal(line) for line in refused), refused


def test_the_walk_saw_refusals(walks: dict[str, dict[str, list[str]]]) -> None:
    """The pair answered the walk (not a walk of silences that would compare equal)."""
    theirs = walks[NATS_SERVER]
    assert "10185" in theirs["stream names"][0] and "10185" in theirs["stream names"][len(LEVELS)]
    assert "412 Required Api Level" in theirs["msg next"][0]
    assert "10185" in theirs["batch publish"][0]
