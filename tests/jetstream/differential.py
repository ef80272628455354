"""Differential testing: send the same steps to our server and to nats-server, compare answers.

A case is a list of steps. Each step produces a JSON-able observation (the API reply, the PubAck
bytes, a direct-get status and header block); volatile values (times, ids) are normalised, then
the two targets' observation lists must be equal. Adding a case is one entry in a table.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.jetstream.rawnats import RawMsg, RawNats, headers
from tests.support.targets import Target

ZERO_TIME = "0001-01-01T00:00:00Z"
TIME_KEYS = {"created", "first_ts", "last_ts", "time", "timestamp", "ts"}
# Values that name the answering server rather than the answer: its version and API level in
# the ``_nats.*`` metadata, and its name as a stream's leader. The required level
# (``_nats.req.level``), computed from the config, is compared.
SERVER_METADATA_KEYS = {"_nats.ver", "_nats.level"}
_TIME_RE = re.compile(rb"Nats-Time-Stamp: [^\r]*")
_TIME_LINE_RE = re.compile(rb"Nats-Time-Stamp: [^\r]*\r\n")
#: How long a reply that comes (a PubAck, a direct get) may take on a loaded machine; a step that
#: expects none says how long it waits for it (``pub(..., no_reply_wait=...)``).
REPLY_WAIT = 5.0


@dataclass
class Step:
    """One action. ``kind``: req | pub | pipelined | direct | sleep | wait_msgs | wait_pending | sub | next | flush."""

    kind: str
    subject: str = ""
    body: Any = b""
    hdrs: tuple[tuple[str, str], ...] = ()
    reply: bool = True
    seconds: float = 0.0
    mask: tuple[str, ...] = ()  # dotted paths whose values are replaced by "<masked>"
    note: str = ""


def req(subject: str, body: Any = b"", mask: tuple[str, ...] = (), note: str = "") -> Step:
    """An API request; ``subject`` may omit the ``$JS.API.`` prefix."""
    if not subject.startswith("$JS."):
        subject = "$JS.API." + subject
    return Step("req", subject, body, mask=mask, note=note)


def pub(
    subject: str,
    data: bytes | str = b"",
    *hdrs: tuple[str, str],
    reply: bool = True,
    no_reply_wait: float = 0.0,
) -> Step:
    """A publish with a reply subject (``reply=False``: without). Where nats-server sends no
    PubAck, ``no_reply_wait`` is how long to wait for one that must not come; elsewhere the wait
    is ``REPLY_WAIT``, so a slow PubAck is never taken for a missing one."""
    data = data.encode() if isinstance(data, str) else data
    return Step("pub", subject, data, tuple(hdrs), reply, seconds=no_reply_wait)


def pipelined(*pubs: Step, same_reply: bool = False) -> Step:
    """The ``pub`` steps written in one go (so the server reads them together, as from a
    pipelining publisher), each with its own reply subject (or all on one, ``same_reply``);
    observed: every answer, in the order of the publishes ("no reply" where none came)."""
    return Step("pipelined", body=list(pubs), reply=not same_reply)


def wait_pending(stream: str, consumer: str, pending: int) -> Step:
    """Wait (up to 10 s) until the consumer's ``num_pending`` is ``pending``; observed: the last seen.
    nats-server counts a stored message into a consumer's pending in the consumer's own goroutine,
    after the PubAck: a ``CONSUMER.INFO`` right after the publishes can see fewer under load."""
    return Step("wait_pending", f"{stream}.{consumer}", pending)


def direct(subject: str, body: Any = b"") -> Step:
    return Step("direct", "$JS.API.DIRECT.GET." + subject, body)


def direct_batch(subject: str, body: Any = b"") -> Step:
    """A direct get answered by several messages: all of them up to the EOB or error status."""
    return Step("direct_batch", "$JS.API.DIRECT.GET." + subject, body)


def sleep(seconds: float) -> Step:
    """Only where time itself is under test (max_age, duplicate windows)."""
    return Step("sleep", seconds=seconds)


def wait_msgs(stream: str, count: int) -> Step:
    """Poll STREAM.INFO until the stream holds ``count`` messages (generous timeout)."""
    return Step("wait_msgs", stream, count)


def restart() -> Step:
    """Stop the server gracefully and start it again on the same store."""
    return Step("restart")


def kill_restart() -> Step:
    """``kill -9`` the server and start it again on the same store."""
    return Step("kill")


def sub(subject: str) -> Step:
    return Step("sub", subject)


def next_msg() -> Step:
    """The next message on the ``sub`` subscriptions (republish checks)."""
    return Step("next")


def _encode_body(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def normalise(value: Any, path: str = "") -> Any:
    """Replace times by ``<time>`` (zero time kept) and the server's own identity by ``<server>``."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            sub_path = f"{path}.{key}" if path else key
            if key in TIME_KEYS and isinstance(item, str):
                out[key] = item if item == ZERO_TIME else "<time>"
            elif (key in SERVER_METADATA_KEYS and path.endswith("metadata")) or (
                key == "leader" and path.endswith("cluster")
            ):
                out[key] = "<server>"
            elif key == "level" and path.endswith("api") and isinstance(item, int):
                out[key] = "<server>"
            else:
                out[key] = normalise(item, sub_path)
        return out
    if isinstance(value, list):
        return [normalise(v, path) for v in value]
    if isinstance(value, str) and "dentity" in value:
        # A stream's identity hashes its creation time (2.15): compared as present, not by value.
        return _IDENTITY_RE.sub(r"\1<identity>", value)
    return value


_IDENTITY_RE = re.compile(r"(Nats-Stream-Identity: |stream identity does not match: )\w+")


def _unspecified_first_ts(value: Any) -> None:
    """An empty stream's ``first_ts`` is a store artefact in nats-server 2.9.10 (zero time, the
    last message's time or even the Unix epoch, depending on store and on how it emptied):
    nothing depends on it, so it is not compared."""
    if isinstance(value, dict):
        state = value.get("state")
        if isinstance(state, dict) and state.get("messages") == 0 and "first_ts" in state:
            state["first_ts"] = "<unspecified>"
        for item in value.values():
            _unspecified_first_ts(item)
    elif isinstance(value, list):
        for item in value:
            _unspecified_first_ts(item)


def _mask(value: Any, dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if isinstance(value, dict) and head in value:
        if rest:
            _mask(value[head], rest)
        else:
            value[head] = "<masked>"


def _describe_msg(msg: RawMsg) -> dict[str, Any]:
    hdr = msg.hdr
    out: dict[str, Any] = {}
    if hdr is not None:
        out["hdr"] = normalise(_TIME_RE.sub(b"Nats-Time-Stamp: <time>", hdr).decode())
    try:
        out["json"] = json.loads(msg.data) if msg.data and hdr is None else None
    except ValueError:
        out["json"] = None
    if out.get("json") is None:
        out.pop("json", None)
        out["data"] = msg.data.decode(errors="replace")
    return out


def _describe_pub_answer(msg: RawMsg) -> Any:
    if msg.hdr is not None:
        return _describe_msg(msg)
    if msg.data.startswith(b'{"type":'):  # an API request sent with headers
        return json.loads(msg.data)
    return {"puback": msg.data.decode()}


async def api_request(client: RawNats, subject: str, body: bytes, target: Target | None) -> RawMsg:
    """An API request. nats-server 2.15 removes an account's empty ``streams`` directory (and
    the account's) in a goroutine after it answers STREAM.DELETE, so a create right after the
    last stream's delete can meet that removal half-way and fail to make its directory
    (``error creating store for stream``, 10049; ``stream.go`` ``stop``, seen under load).
    That create is asked again, briefly: it is nats-server's race, not an answer to compare.
    Every differential test that creates a stream on nats-server asks through here."""
    msg = await client.request(subject, body, timeout=10)
    racing = target is not None and target.kind == "nats-server" and ".STREAM.CREATE." in subject
    for _ in range(50):
        if not racing or b'"err_code":10049' not in msg.data:
            break
        await asyncio.sleep(0.02)
        msg = await client.request(subject, body, timeout=10)
    return msg


@dataclass
class Runner:
    """Runs steps on one target and records observations."""

    client: RawNats
    target: Target | None = None
    observations: list[Any] = field(default_factory=list)
    sid: int = 100

    async def run(self, steps: list[Step]) -> list[Any]:
        for step in steps:
            obs = await self._step(step)
            if obs is not None:
                obs = normalise(obs)
                _unspecified_first_ts(obs)
                for path in step.mask:
                    _mask(obs, path)
                self.observations.append({"step": _label(step), "got": obs})
        return self.observations

    async def _request(self, step: Step) -> RawMsg:
        return await api_request(self.client, step.subject, _encode_body(step.body), self.target)

    async def _step(self, step: Step) -> Any:
        c = self.client
        if step.kind == "req":
            msg = await self._request(step)
            if msg.hdr is not None:
                described = _describe_msg(msg)
                if msg.data.startswith(b"{"):  # an API reply with headers (2.15 Nats-Stream-Identity)
                    described.pop("data", None)
                    described["json"] = json.loads(msg.data)
                return described
            return json.loads(msg.data)
        if step.kind == "pub":
            hdr = headers(*step.hdrs) if step.hdrs else None
            if not step.reply:
                c.publish(step.subject, step.body, hdr=hdr)
                await c.flush()
                return None
            try:
                msg = await c.request(step.subject, step.body, hdr=hdr, timeout=step.seconds or REPLY_WAIT)
            except TimeoutError:
                return {"pub": "no reply"}
            return _describe_pub_answer(msg)
        if step.kind == "pipelined":
            frames = [(p.subject, p.body, p.reply, headers(*p.hdrs) if p.hdrs else None) for p in step.body]
            answers = await c.request_pipelined(frames, same_reply=not step.reply)
            return [
                None if not p.reply else {"pub": "no reply"} if m is None else _describe_pub_answer(m)
                for p, m in zip(step.body, answers, strict=True)
            ]
        if step.kind == "direct":
            try:
                msg = await c.request(step.subject, _encode_body(step.body), timeout=REPLY_WAIT)
            except TimeoutError:
                return {"direct": "no reply"}
            return _describe_msg(msg)
        if step.kind == "direct_batch":
            try:
                msgs = await c.request_many(step.subject, _encode_body(step.body), timeout=REPLY_WAIT)
            except TimeoutError:
                return {"direct": "no end of batch"}
            return [_describe_msg(m) for m in msgs]
        if step.kind == "sleep":
            await asyncio.sleep(step.seconds)
            return None
        if step.kind == "wait_msgs":
            deadline = time.monotonic() + 10
            while True:
                info = (await c.request(f"$JS.API.STREAM.INFO.{step.subject}", b"", timeout=10)).json()
                got = info.get("state", {}).get("messages")
                if got == step.body or time.monotonic() > deadline:
                    return {"messages": got}
                await asyncio.sleep(0.02)
        if step.kind == "wait_pending":
            deadline = time.monotonic() + 10
            while True:
                info = (await c.request(f"$JS.API.CONSUMER.INFO.{step.subject}", b"", timeout=10)).json()
                got = info.get("num_pending")
                if got == step.body or time.monotonic() > deadline:
                    return {"num_pending": got}
                await asyncio.sleep(0.02)
        if step.kind in ("restart", "kill"):
            assert self.target is not None
            await self.client.close()
            if step.kind == "kill":
                self.target.kill()
                self.target.start()
            else:
                self.target.restart()
            self.client = await RawNats.connect(self.target.url)
            return None
        if step.kind == "sub":
            self.sid += 1
            c.subscribe(step.subject, self.sid)
            await c.flush()
            return None
        if step.kind == "next":
            try:
                msg = await c.next_msg(timeout=3)
            except TimeoutError:
                return {"next": "nothing"}
            # Republished copies: nats-server 2.10 adds Nats-Time-Stamp, 2.9.10 does not.
            if msg.hdr is not None:
                msg.hdr = _TIME_LINE_RE.sub(b"", msg.hdr)
            return {"subject": msg.subject, **_describe_msg(msg)}
        raise ValueError(step.kind)


def _label(step: Step) -> str:
    if step.kind == "pipelined":
        return f"pipelined {len(step.body)}: " + "; ".join(_label(p) for p in step.body[:3])[:180]
    body = step.body.decode(errors="replace") if isinstance(step.body, bytes) else step.body
    text = f"{step.kind} {step.subject} {body if body else ''}".strip()
    if step.hdrs:
        text += f" {dict(step.hdrs)}"
    return text[:200]


async def reset(client: RawNats, target: Target | None = None) -> None:
    """Delete every stream so each case starts from an empty account, waiting, before and after,
    until no deleted stream's directory is left in ``target``'s store. nats-server 2.15 renames a
    deleted stream's directory to ``.<name>`` and removes it in a goroutine (filestore.go
    ``Delete``); a second delete of the same name before that removal ends cannot rename (the
    dot-directory is still there), leaves the blocks in place, and the next create of that name
    recovers them (a "new" stream with the last case's messages, seen under load). The wait
    before covers a delete made since the last reset (a restore's, a test's own); delete, create,
    delete at once recovered the first stream's messages in 23-48 of 200 tries at load 16."""
    names = (await client.request("$JS.API.STREAM.NAMES", b"", timeout=10)).json().get("streams") or []
    if target is not None:
        await removals_done(target)
    for name in names:
        await client.request(f"$JS.API.STREAM.DELETE.{name}", b"", timeout=10)
    if target is not None:
        await removals_done(target)


async def removals_done(target: Target, timeout: float = 30.0) -> None:
    """Until no ``streams/.<name>`` directory (a deletion still being removed) is left in
    ``target``'s store: before a delete of a name deleted a moment ago (see `reset`)."""
    store = target.store_dir
    deadline = asyncio.get_running_loop().time() + timeout
    while _being_removed(store):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"deleted streams still being removed under {store} after {timeout} s")
        await asyncio.sleep(0.02)


def _being_removed(store: Path) -> bool:
    try:
        return any(store.glob("jetstream/*/streams/.*")) or any(store.glob("*/streams/.*"))
    except FileNotFoundError:  # (a directory the glob walks went away under it: look again)
        return True


async def run_case(target: Target, steps: list[Step]) -> list[Any]:
    client = await RawNats.connect(target.url)
    runner = Runner(client, target)
    try:
        await reset(client, target)
        return await runner.run(steps)
    finally:
        await reset(runner.client, target)
        await runner.client.close()


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def first_difference(ours: list[Any], theirs: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            return (
                f"step {i}: {a['step']}\n  ours:        {json.dumps(a['got'], sort_keys=True)}\n"
                f"  nats-server: {json.dumps(b['got'], sort_keys=True)}"
            )
    return f"different number of observations: {len(ours)} vs {len(theirs)}"


Case = tuple[str, list[Step]]
CaseBuilder = Callable[[], list[Step]]
