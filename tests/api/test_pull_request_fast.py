"""`codec.decode_pull_request`'s fast steps give what the field-by-field reading gives: msgspec's
JSON object equals ``json.loads``' whenever msgspec accepts the body, and a request built in one
call (`_plain_pull_request`) equals `_read_pull_request`'s."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest

from pyjetstream.api import codec

KEYS = ["batch", "expires", "max_bytes", "no_wait", "idle_heartbeat", "group", "min_pending",
        "min_ack_pending", "id", "priority", "Batch", "NO_WAIT", "other"]
VALUES: list[Any] = [0, 1, -1, 5, 2**63, 10**30, 1.5, 1.0, True, False, None, "", "g", [], {}]


def _doc(rng: random.Random) -> dict[str, Any]:
    return {rng.choice(KEYS): rng.choice(VALUES) for _ in range(rng.randrange(0, 5))}


def _outcome(read: Any, doc: dict[str, Any]) -> Any:
    try:
        return read(doc)
    except codec.PullRequestError as exc:
        return ("error", str(exc))


def test_plain_pull_request_equals_the_field_by_field_reading() -> None:
    rng = random.Random(11)
    taken = 0
    for _ in range(20_000):
        doc = _doc(rng)
        fast = codec._plain_pull_request(doc)
        if fast is not None:
            taken += 1
            assert fast == _outcome(codec._read_pull_request, doc), doc
    assert taken > 1000


@pytest.mark.parametrize(
    "body",
    [b'{"batch":1}', b'{"batch":1,"batch":2}', b'{"Batch":1,"batch":2}', b'{"a":1e400}', b'{"a":NaN}',
     b'{"id":"\\ud800"}', b'{"id":"caf\\u00e9"}', b'{"id":"\xd1"}', b'{"batch":10000000000000000000000}',
     b'{"batch":-0}', b'{"expires":1.0}', b'[1]', b'{"batch":1} x'],
)
def test_msgspec_object_equals_json_loads_when_it_accepts(body: bytes) -> None:
    try:
        fast = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return
    assert fast == json.loads(body.decode("utf-8", "surrogateescape"))
    assert list(fast) == list(json.loads(body.decode("utf-8", "surrogateescape")))
